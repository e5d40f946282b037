"""The SDK's public hooks a part of the runtime plugs into: server middleware, which
sees each request before its params are checked, and extensions, which serve methods of
their own."""

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp.shared.exceptions import MCPError

__all__ = [
    "CallNext",
    "Extension",
    "HandlerResult",
    "MCPError",
    "MethodBinding",
    "ServerRequestContext",
]
