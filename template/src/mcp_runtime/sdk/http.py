"""The SDK's streamable HTTP app, and what the front reads of a request as the SDK does:
its era, whether it accepts an SSE stream, its Host and Origin."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http import check_accept_headers
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.types import Scope

__all__ = [
    "AnswerApps",
    "TransportSecurityMiddleware",
    "TransportSecuritySettings",
    "accepts_json",
    "accepts_sse",
    "answer_apps",
    "first_header",
    "handshake_era",
]


def handshake_era(scope: Scope) -> bool:
    """Whether an HTTP request speaks a revision of the ``initialize`` era (2025-11-25 and
    before), as the SDK routes it: by its ``MCP-Protocol-Version`` header, absent on an
    ``initialize``. Later revisions are stateless: each request carries its revision."""
    for name, value in scope.get("headers", ()):
        if name.lower() == b"mcp-protocol-version":
            return value.decode("latin-1") in HANDSHAKE_PROTOCOL_VERSIONS
    return True


def first_header(scope: Scope, name: bytes) -> bytes | None:
    """The value of the request's first header ``name`` (lowercase) as Starlette finds it:
    by the name as the server wrote it (lowercase, as ASGI asks); None without one."""
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value)
    return None


ACCEPT = b"accept"
ACCEPTS_KEPT = 64  # the readings of distinct Accept headers kept (most clients send one)
_accepts: dict[bytes | None, tuple[bool, bool]] = {}


def _accepted(scope: Scope) -> tuple[bool, bool]:
    """Whether the request accepts one JSON body, and an SSE stream, as the SDK reads its
    Accept header (the first, by its name as the server wrote it, as Starlette finds it):
    read once for each distinct header, the SDK's reading depending on its value alone."""
    value = first_header(scope, ACCEPT)
    accepted = _accepts.get(value)
    if accepted is None:
        accepted = check_accept_headers(Request(scope))
        if len(_accepts) >= ACCEPTS_KEPT:
            _accepts.clear()
        _accepts[value] = accepted
    return accepted


def accepts_sse(scope: Scope) -> bool:
    """Whether the request accepts an SSE stream, as the SDK reads its Accept header."""
    return _accepted(scope)[1]


def accepts_json(scope: Scope) -> bool:
    """Whether the request accepts one JSON body, as the SDK reads its Accept header."""
    return _accepted(scope)[0]


@dataclass(frozen=True)
class AnswerApps:
    """The SDK's streamable HTTP app of one server, built twice: ``streaming`` answers as
    the SDK does by default (an SSE stream for each request; the sessions of the
    ``initialize`` era, its GET streams and every route besides the endpoint's POST), and
    ``whole`` answers each POST one ``application/json`` body. The front hands each
    request to the one it chose. Serving ``streaming``'s lifespan runs both."""

    streaming: Starlette
    whole: Starlette


def answer_apps(server: MCPServer, **options: Any) -> AnswerApps:
    """``server``'s :class:`AnswerApps`, each built by the SDK with ``options`` (those of
    ``MCPServer.streamable_http_app`` but ``json_response``)."""
    whole = server.streamable_http_app(json_response=True, **options)
    streaming = server.streamable_http_app(json_response=False, **options)
    whole_lifespan = whole.router.lifespan_context
    streaming_lifespan = streaming.router.lifespan_context

    @asynccontextmanager
    async def both(app: Any) -> AsyncIterator[Any]:
        async with whole_lifespan(whole), streaming_lifespan(app) as state:
            yield state

    streaming.router.lifespan_context = both
    return AnswerApps(streaming=streaming, whole=whole)
