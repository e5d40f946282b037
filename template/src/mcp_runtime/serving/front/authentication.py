"""The bearer token of a POST to the MCP endpoint, checked before its body is read."""

from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_runtime.sdk.bearer import BearerCheck
from mcp_runtime.serving.front.posted import Posted

__all__ = ["Authentication"]


class Authentication:
    """Under ``MCP_AUTH=oauth``, verifies a POST's bearer token with the SDK's check, which
    answers 401 itself; a verified token is kept in the request's :class:`Posted` for the
    parts after this one. With no check (None), it passes all on."""

    def __init__(self, app: ASGIApp, *, bearer: BearerCheck | None, path: str) -> None:
        self.app = app
        self.bearer = bearer
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            self.bearer is not None
            and scope["type"] == "http"
            and scope["method"] == "POST"
            and scope["path"] == self.path
        ):
            access = await self.bearer.check(scope, receive, send)
            if access is None:
                return  # refused: the SDK's 401 is sent
            Posted.of(scope).access = access
        await self.app(scope, receive, send)
