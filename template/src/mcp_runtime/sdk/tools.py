"""What the SDK's server keeps of each tool, and the errors a tool's run may raise to it
(:func:`func_metadata` builds what it keeps of a tool's function)."""

from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError as SDKToolError
from mcp.server.mcpserver.tools import Tool as SDKTool
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from mcp.shared.exceptions import MCPError, UrlElicitationRequiredError
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from mcp_runtime.sdk.seams import func_metadata, registered_tools

__all__ = [
    "MCPError",
    "SDKTool",
    "SDKToolError",
    "UrlElicitationRequiredError",
    "func_metadata",
    "json_text_keys",
    "pre_parse_json",
    "served_tool_names",
    "served_tools",
]


def json_text_keys(arguments: type[BaseModel]) -> frozenset[str]:
    """The argument keys whose string value the SDK may decode as JSON text: each field's
    name and alias, mapped as the SDK maps them, where the field is not annotated ``str``."""
    fields: dict[str, FieldInfo] = {}
    for name, field in arguments.model_fields.items():
        fields[name] = field
        if field.alias:
            fields[field.alias] = field
    return frozenset(key for key, field in fields.items() if field.annotation is not str)


def pre_parse_json(
    metadata: FuncMetadata, arguments: dict[str, Any], json_keys: frozenset[str]
) -> dict[str, Any]:
    """Arguments as the SDK reads them: JSON text sent for a list or object is decoded.

    ``json_keys`` is :func:`json_text_keys` of the arguments' model: with no string
    under any of them, there is nothing to decode, and ``arguments`` comes back as is.
    """
    if json_keys and any(isinstance(arguments.get(key), str) for key in json_keys):
        return metadata.pre_parse_json(arguments)
    return arguments


def served_tool_names(server: MCPServer) -> list[str]:
    """The names of the tools ``server`` serves, in the order it lists them."""
    return [tool.name for tool in served_tools(server)]


def served_tools(server: MCPServer) -> list[SDKTool]:
    """The tools ``server`` serves, in the order it lists them."""
    return registered_tools(server)
