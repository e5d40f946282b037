"""The ASGI application that serves the MCP endpoint over streamable HTTP.

It is FastMCP's streamable HTTP app, behind a guard that answers a request body
that is not UTF-8 with a JSON-RPC parse error (HTTP 400), where the SDK alone
would answer an opaque internal error (HTTP 500).
"""

import json

from mcp.server.fastmcp import FastMCP
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["http_app"]

NOT_UTF8 = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": "Parse error: the request body is not UTF-8 JSON"},
    }
).encode()


def http_app(server: FastMCP) -> ASGIApp:
    """``server``'s streamable HTTP app, ready for uvicorn."""
    return RejectUndecodableBodies(server.streamable_http_app())


class RejectUndecodableBodies:
    """ASGI middleware: a POST body that is not UTF-8 gets a JSON-RPC parse error."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] != "http.request":
                await self.app(scope, _replay([message], receive), send)
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        try:
            body.decode("utf-8")
        except UnicodeDecodeError:
            await send(
                {
                    "type": "http.response.start",
                    "status": 400,
                    "headers": [(b"content-type", b"application/json")],
                }
            )
            await send({"type": "http.response.body", "body": NOT_UTF8})
            return
        whole: Message = {"type": "http.request", "body": body, "more_body": False}
        await self.app(scope, _replay([whole], receive), send)


def _replay(messages: list[Message], receive: Receive) -> Receive:
    """A ``receive`` that hands out ``messages`` first, then defers to ``receive``."""
    pending = list(messages)

    async def replaying() -> Message:
        if pending:
            return pending.pop(0)
        return await receive()

    return replaying
