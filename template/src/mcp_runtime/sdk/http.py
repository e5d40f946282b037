"""The SDK's streamable HTTP app, and what the front reads of a request as the SDK does:
its era and revision, whether it accepts an SSE stream, its Host and Origin; and whether
an event the app writes is an answer."""

from dataclasses import dataclass
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http import check_accept_headers
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp.shared.inbound import (
    MCP_METHOD_HEADER,
    MCP_NAME_HEADER,
    MCP_PROTOCOL_VERSION_HEADER,
    InboundLadderRejection,
    classify_inbound_request,
    find_duplicated_routing_header,
)
from mcp_types import DEFAULT_NEGOTIATED_VERSION
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.types import Scope

from mcp_runtime.sdk.seams import join_lifespans, starts_as_answer

__all__ = [
    "AnswerApps",
    "TransportSecurityMiddleware",
    "TransportSecuritySettings",
    "accepts_json",
    "accepts_sse",
    "answer_apps",
    "first_header",
    "legacy_version",
    "modern_version",
    "names_json",
    "speaks_handshake_era",
    "starts_as_answer",
]

PROTOCOL_VERSION_HEADER = b"mcp-protocol-version"
# The headers the SDK's classification of a 2026-07-28 request reads (and refuses twice).
ROUTING_HEADERS = frozenset(
    name.encode() for name in (MCP_PROTOCOL_VERSION_HEADER, MCP_METHOD_HEADER, MCP_NAME_HEADER)
)


def speaks_handshake_era(scope: Scope) -> bool:
    """Whether an HTTP request speaks a revision of the ``initialize`` era (2025-11-25 and
    before), as the SDK routes it: by its ``MCP-Protocol-Version`` header, absent on an
    ``initialize``. Later revisions are stateless: each request carries its revision."""
    for name, value in scope.get("headers", ()):
        if name.lower() == PROTOCOL_VERSION_HEADER:
            return value.decode("latin-1") in HANDSHAKE_PROTOCOL_VERSIONS
    return True


def first_header(scope: Scope, name: bytes) -> bytes | None:
    """The value of the request's first header ``name`` (lowercase) as Starlette finds it:
    by the name as the server wrote it (lowercase, as ASGI asks); None without one."""
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value)
    return None


def names_json(content_type: bytes | None) -> bool:
    """Whether a request's Content-Type names JSON as the SDK's transport of the 2025
    revisions reads it (stricter than its Host and Origin check's reading)."""
    value = (content_type or b"").decode("latin-1")
    return any(part.strip() == "application/json" for part in value.split(";")[0].split(","))


def legacy_version(scope: Scope) -> str:
    """The revision the SDK serves a stateless request of the 2025 revisions in: its
    ``MCP-Protocol-Version`` header (the first), else the spec's default."""
    version = first_header(scope, PROTOCOL_VERSION_HEADER)
    return DEFAULT_NEGOTIATED_VERSION if version is None else version.decode("latin-1")


def modern_version(scope: Scope, message: dict[str, Any]) -> str | None:
    """The revision of a 2026-07-28 request, once its envelope and routing headers pass the
    SDK's classification; None when they do not."""
    pairs = [
        (name.decode("latin-1"), value.decode("latin-1"))
        for name, value in scope["headers"]
        if name.lower() in ROUTING_HEADERS  # the only ones it reads
    ]
    if find_duplicated_routing_header(pairs) is not None:
        return None
    # Keyed by lowercase name, the first of each kept, as the SDK's mapping reads them.
    headers = {name.lower(): value for name, value in reversed(pairs)}
    verdict = classify_inbound_request(message, headers=headers)
    if isinstance(verdict, InboundLadderRejection):
        return None
    return verdict.protocol_version


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
    join_lifespans(streaming, also=whole)
    return AnswerApps(streaming=streaming, whole=whole)
