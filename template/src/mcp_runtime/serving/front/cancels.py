"""A posted ``notifications/cancelled`` of the 2025 revisions, matched to its call."""

from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_runtime.auth.oauth import token_owner
from mcp_runtime.execution.in_flight import InFlight
from mcp_runtime.serving.front.posted import Posted

__all__ = ["CancelMatching"]


class CancelMatching:
    """Cancels the call in this process that a posted ``notifications/cancelled`` names,
    for the caller who sent it, then passes the notification on (the SDK answers 202).

    Only over stateless HTTP and in the ``initialize`` era: each POST is a session of its
    own, so the SDK cannot deliver the notification to the call. From 2026-07-28 a client
    cancels by closing its request's response stream, which the SDK turns into a cancel.
    """

    def __init__(self, app: ASGIApp, *, calls: InFlight, stateless: bool) -> None:
        self.app = app
        self.calls = calls
        self.stateless = stateless

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.stateless and scope["type"] == "http" and scope["method"] == "POST":
            posted = Posted.of(scope)
            if b"notifications/cancelled" in posted.body and not posted.modern:
                self._cancel(posted)
        await self.app(scope, receive, send)

    def _cancel(self, posted: Posted) -> None:
        message = posted.message
        if not isinstance(message, dict) or message.get("method") != "notifications/cancelled":
            return
        if "id" in message:
            return  # a request, not a notification: the SDK answers it with an error
        params = message.get("params")
        request_id = params.get("requestId") if isinstance(params, dict) else None
        if isinstance(request_id, str | int) and not isinstance(request_id, bool):
            self.calls.cancel(token_owner(posted.access), request_id)
