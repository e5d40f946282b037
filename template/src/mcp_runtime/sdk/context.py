"""The request being served, read from the context the SDK hands each call.

The SDK's 2.x line (``MCPServer``) hands each call's request context to the tool it
calls; the served tool enters :class:`ServingRequest` with it, and the functions here read the
request from there: its headers, its JSON-RPC id, its ``_meta``, its protocol revision
and the access token verified for it. Where the SDK builds no context (a call the
runtime answers directly, a task's run), the runtime builds a :class:`BuiltRequest`
with the same fields.
"""

from collections.abc import Mapping
from contextvars import ContextVar, Token
from dataclasses import dataclass
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.context import ServerRequestContext
from mcp.types import RequestId, RequestParamsMeta
from starlette.requests import Request

__all__ = [
    "AccessToken",
    "BuiltContext",
    "BuiltRequest",
    "ServingRequest",
    "protocol_version",
    "request_headers",
    "request_id",
    "request_meta",
    "request_token",
]

_request: ContextVar[Any] = ContextVar("mcp_runtime_request", default=None)


@dataclass(frozen=True)
class BuiltRequest:
    """What the runtime reads of a request's context, where the runtime builds it: the
    HTTP request (None in a task's run), the JSON-RPC id, the ``_meta`` (as the SDK
    parses it), the protocol revision."""

    request: Request | None
    request_id: RequestId
    meta: RequestParamsMeta | None
    protocol_version: str


@dataclass(frozen=True)
class BuiltContext:
    """The context a tool is called with where the runtime builds it, as the SDK's
    ``Context`` holds its request context."""

    request_context: BuiltRequest


class ServingRequest:
    """A context manager: within its block, the request of ``context`` (the SDK's tool
    context, a :class:`BuiltContext`, or None) is the one being served."""

    __slots__ = ("context", "token")

    def __init__(self, context: Any) -> None:
        self.context = context
        self.token: Token[Any] | None = None

    def __enter__(self) -> None:
        context = self.context
        try:
            request = None if context is None else context.request_context
        except ValueError:  # a tool context outside a request
            request = None
        self.token = _request.set(request)

    def __exit__(self, *_: object) -> None:
        if self.token is not None:
            _request.reset(self.token)


def request_headers() -> Mapping[str, str] | None:
    """The HTTP headers of the request being served; None outside an HTTP request."""
    request = getattr(_request.get(), "request", None)
    headers = getattr(request, "headers", None)
    return headers if isinstance(headers, Mapping) else None


def request_id() -> RequestId | None:
    """The JSON-RPC id of the request being served; None outside a request."""
    context = _request.get()
    return None if context is None else context.request_id


def request_meta() -> RequestParamsMeta | None:
    """The ``_meta`` of the request being served; None when it has none, or outside one."""
    context = _request.get()
    return None if context is None else context.meta


def protocol_version() -> str | None:
    """The protocol revision of the request being served; None outside a request."""
    context = _request.get()
    return None if context is None else context.protocol_version


def request_token(
    context: ServerRequestContext[Any, Any] | BuiltRequest | None = None,
) -> AccessToken | None:
    """The access token verified for the HTTP request ``context`` serves (by default, the
    request being served); None without one."""
    if context is None:
        context = _request.get()
    scope = getattr(getattr(context, "request", None), "scope", None)
    user = scope.get("user") if isinstance(scope, Mapping) else None
    return user.access_token if isinstance(user, AuthenticatedUser) else None
