"""The methods a stateless MCP endpoint takes: POST, and DELETE."""

from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_runtime.serving.front.answers import INVALID_REQUEST, error_answer, respond_raw

__all__ = ["MethodPolicy"]


class MethodPolicy:
    """Answers 405 (``allow: POST``) to any other method on a stateless MCP endpoint, which
    has no GET stream; a stateful endpoint takes every method the SDK serves."""

    def __init__(self, app: ASGIApp, *, path: str, stateless: bool) -> None:
        self.app = app
        self.path = path
        self.stateless = stateless

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            self.stateless
            and scope["type"] == "http"
            and scope["path"] == self.path
            and scope["method"] not in ("POST", "DELETE")
        ):
            error = (
                f"Method not allowed: {scope['method']}; this stateless MCP endpoint takes "
                "POST (it has no GET stream)"
            )
            answer = error_answer(INVALID_REQUEST, error)
            await respond_raw(send, 405, answer, [(b"allow", b"POST")])
            return
        await self.app(scope, receive, send)
