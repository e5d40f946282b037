"""The scrape: ``GET /metrics``."""

from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_runtime.serving.front.answers import respond

__all__ = ["Scrapes"]


class Scrapes:
    """Answers ``GET /metrics`` with the metrics app, or 404 when metrics are off (None)."""

    def __init__(self, app: ASGIApp, *, metrics: ASGIApp | None) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "GET" or scope["path"] != "/metrics":
            await self.app(scope, receive, send)
        elif self.metrics is None:
            detail = "metrics are off in this service (MCP_METRICS=false)"
            await respond(send, 404, {"error": "not_found", "detail": detail})
        else:
            await self.metrics(scope, receive, send)
