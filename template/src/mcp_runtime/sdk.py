"""Every use of the MCP SDK's server internals, in one place.

The rest of the runtime reaches the SDK's server through these names only, so a move
to the SDK's next major version (where ``FastMCP`` is renamed ``MCPServer`` and the
request context gives way to ``Context.headers``) is a change to this module.
Protocol types (``mcp.types``) and the client side are public and stable, and are
imported where they are used.
"""

from collections.abc import Mapping
from typing import Any

from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ToolError as SDKToolError
from mcp.server.fastmcp.tools import Tool as SDKTool
from mcp.server.fastmcp.utilities.func_metadata import FuncMetadata
from mcp.server.lowlevel.server import request_ctx
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import UrlElicitationRequiredError
from pydantic import BaseModel

__all__ = [
    "FastMCP",
    "SDKTool",
    "SDKToolError",
    "TransportSecuritySettings",
    "UrlElicitationRequiredError",
    "pre_parse_json",
    "request_headers",
    "served_tool_names",
    "tool_metadata",
]


def tool_metadata(arguments: type[BaseModel], output_schema: dict[str, Any]) -> FuncMetadata:
    """What the SDK keeps about a tool's function: its arguments model and output schema.

    Built without validation: ``arguments`` is the tool's own model, already checked.
    """
    # The SDK types it as its own argument base; it reads only the model's fields.
    return FuncMetadata.model_construct(
        arg_model=arguments,  # type: ignore[arg-type]
        output_schema=output_schema,
    )


def pre_parse_json(metadata: FuncMetadata, arguments: dict[str, Any]) -> dict[str, Any]:
    """Arguments as the SDK reads them: JSON text sent for a list or object is decoded."""
    return metadata.pre_parse_json(arguments)


def request_headers() -> Mapping[str, str] | None:
    """The HTTP headers of the request being served; None outside an HTTP request."""
    context = request_ctx.get(None)
    request = getattr(context, "request", None)
    headers = getattr(request, "headers", None)
    return headers if isinstance(headers, Mapping) else None


def served_tool_names(server: FastMCP) -> list[str]:
    """The names of the tools ``server`` serves, in the order it lists them."""
    return [tool.name for tool in server._tool_manager.list_tools()]
