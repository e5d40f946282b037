"""The front's answers: whole JSON responses, and the one builder of JSON-RPC errors.

Each JSON-RPC error code is named as the MCP SDK names it.
"""

import json

from mcp.types import CONNECTION_CLOSED, INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR
from starlette.types import Send

__all__ = [
    "CONNECTION_CLOSED",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "PARSE_ERROR",
    "error_answer",
    "respond",
    "respond_raw",
]

RequestId = str | int | None


def error_answer(code: int, message: str, request_id: RequestId = None) -> bytes:
    """A JSON-RPC error answering the request ``request_id`` (null: no request in particular)."""
    error = {"code": code, "message": message}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode()


async def respond(send: Send, status: int, payload: dict[str, object]) -> None:
    """Send ``payload`` as a whole JSON response with ``status``."""
    await respond_raw(send, status, json.dumps(payload).encode())


async def respond_raw(
    send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    """Send a whole JSON response: ``body`` with ``status`` and any extra ``headers``."""
    all_headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *(headers or []),
    ]
    await send({"type": "http.response.start", "status": status, "headers": all_headers})
    await send({"type": "http.response.body", "body": body})
