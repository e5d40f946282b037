"""Shutdown: new MCP requests refused while the service drains; open ones counted."""

from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_runtime.execution.state import ServiceState
from mcp_runtime.serving.front.answers import CONNECTION_CLOSED, error_answer, respond_raw

__all__ = ["Drain"]

DRAINING = "Service unavailable: the server is shutting down; send the request again"


class Drain:
    """Refuses a request to the MCP endpoint once the service drains (503, ``connection:
    close``, a JSON-RPC error to send it again), and counts the requests it passes on,
    but GETs (a stream stays open as long as its client wants), in ``state.requests``:
    shutdown waits for them."""

    def __init__(self, app: ASGIApp, *, state: ServiceState, path: str) -> None:
        self.app = app
        self.state = state
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["path"] == self.path and self.state.calls.draining:
            answer = error_answer(CONNECTION_CLOSED, DRAINING)
            await respond_raw(send, 503, answer, [(b"connection", b"close")])
            return
        if scope["method"] == "GET":
            await self.app(scope, receive, send)
            return
        requests = self.state.requests
        requests.count += 1
        try:
            await self.app(scope, receive, send)
        finally:
            requests.count -= 1
