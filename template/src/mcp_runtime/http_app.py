"""The ASGI application that serves the MCP endpoint over streamable HTTP.

FastMCP's streamable HTTP app (``/mcp``), behind a front that adds:

- ``GET /healthz``: liveness, 200 while the process serves;
- ``GET /readyz``: readiness, 200 once the gate has passed and the app has started,
  503 before that and while it shuts down (so a load balancer drains it first);
- a request body limit, answered 413 with a JSON-RPC error, checked as the body
  arrives;
- a body that is not UTF-8 answered 400 with a JSON-RPC parse error, where the
  SDK alone would answer an opaque internal error (500).
"""

import json

from mcp.server.fastmcp import FastMCP
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcp_runtime.settings import load_settings

__all__ = ["ServiceApp", "app_from_environment", "http_app"]


def http_app(server: FastMCP) -> "ServiceApp":
    """``server``'s streamable HTTP app with health, readiness and body checks."""
    tools = len(server._tool_manager.list_tools())
    return ServiceApp(
        server.streamable_http_app(), tools=tools, max_body=server.settings.max_request_body_size
    )


def app_from_environment() -> "ServiceApp":
    """The app as the environment's settings say: the factory each worker process calls."""
    from mcp_runtime.logs import configure_logging
    from mcp_runtime.server import build_server

    settings = load_settings()
    configure_logging(settings.log_level, settings.log_format)
    return http_app(build_server(settings=settings))


def json_rpc_error(code: int, message: str) -> bytes:
    return json.dumps(
        {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
    ).encode()


class ServiceApp:
    """ASGI front of the MCP app: health and readiness routes, and request body checks."""

    def __init__(self, app: ASGIApp, *, tools: int, max_body: int) -> None:
        self.app = app
        self.tools = tools
        self.max_body = max_body
        self.ready = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, self._watch_shutdown(receive), self._watch_startup(send))
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["method"] == "GET" and scope["path"] == "/healthz":
            await respond(send, 200, {"status": "ok"})
            return
        if scope["method"] == "GET" and scope["path"] == "/readyz":
            if self.ready:
                await respond(send, 200, {"status": "ready", "tools": self.tools})
            else:
                await respond(send, 503, {"status": "not ready"})
            return
        if scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        await self._checked_post(scope, receive, send)

    def _watch_startup(self, send: Send) -> Send:
        async def watching(message: Message) -> None:
            if message["type"] == "lifespan.startup.complete":
                self.ready = True
            await send(message)

        return watching

    def _watch_shutdown(self, receive: Receive) -> Receive:
        async def watching() -> Message:
            message = await receive()
            if message["type"] == "lifespan.shutdown":
                self.ready = False
            return message

        return watching

    async def _checked_post(self, scope: Scope, receive: Receive, send: Send) -> None:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                await self.app(scope, _replay([message], receive), send)
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                error = f"Request body too large: the limit is {self.max_body} bytes"
                await respond_raw(send, 413, json_rpc_error(-32600, error))
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        try:
            body.decode("utf-8")
        except UnicodeDecodeError:
            error = "Parse error: the request body is not UTF-8 JSON"
            await respond_raw(send, 400, json_rpc_error(-32700, error))
            return
        whole: Message = {"type": "http.request", "body": body, "more_body": False}
        await self.app(scope, _replay([whole], receive), send)


async def respond(send: Send, status: int, payload: dict[str, object]) -> None:
    await respond_raw(send, status, json.dumps(payload).encode())


async def respond_raw(send: Send, status: int, body: bytes) -> None:
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _replay(messages: list[Message], receive: Receive) -> Receive:
    """A ``receive`` that hands out ``messages`` first, then defers to ``receive``."""
    pending = list(messages)

    async def replaying() -> Message:
        if pending:
            return pending.pop(0)
        return await receive()

    return replaying
