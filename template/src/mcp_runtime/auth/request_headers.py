"""The HTTP headers of the MCP request a tool is serving.

Credentials travel in headers, never as tool arguments, so they never enter the
model's context. Headers are read from the request being served (a context
variable, so concurrent requests never see each other's), and nothing here logs
them. Over stdio there is no HTTP request and every header is absent.
"""

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar

from mcp_runtime.sdk import request_headers

__all__ = ["request_header", "using_headers"]

_override: ContextVar[Mapping[str, str] | None] = ContextVar("_override", default=None)


def request_header(name: str) -> str | None:
    """The value of header ``name`` (case-insensitive) of the current request, or None."""
    override = _override.get()
    if override is not None:
        wanted = name.lower()
        return next((v for k, v in override.items() if k.lower() == wanted), None)
    headers = request_headers()
    if headers is None:
        return None
    value = headers.get(name)
    return value if isinstance(value, str) else None


@contextmanager
def using_headers(headers: Mapping[str, str]) -> Iterator[None]:
    """Serve ``headers`` to tools called inside the block (direct calls, tests, agents)."""
    token = _override.set(dict(headers))
    try:
        yield
    finally:
        _override.reset(token)
