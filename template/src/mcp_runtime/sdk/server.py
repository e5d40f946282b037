"""The SDK's server as the runtime serves it: the tools it lists, the resources it reads,
the capabilities it declares, the identity it stamps on each 2026-07-28 result."""

from collections.abc import Awaitable, Callable
from typing import Any

from mcp import types as mcp_types
from mcp.server.auth.settings import AuthSettings
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import ToolExecution
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_runtime.sdk.seams import extend_capabilities, lowlevel_server, without_sdk_spans
from mcp_runtime.sdk.tools import served_tools

__all__ = [
    "TASKS",
    "AuthSettings",
    "ContractServer",
    "DataReader",
    "MCPServer",
    "ReadResourceContents",
    "ResourceError",
    "ResourceNotFoundError",
    "TransportSecuritySettings",
    "advertise_tasks",
    "server_info_stamp",
    "without_sdk_spans",
]

DataReader = Callable[[str, ServerRequestContext[Any, Any]], Awaitable[ReadResourceContents | None]]
"""Reads a resource the runtime keeps (its URI, the request's context): its contents, None
when the URI is not one of its own; raises ``ResourceNotFoundError`` or ``ResourceError``."""


class ContractServer(MCPServer):
    """The SDK's server, whose ``tools/list`` names each task tool's ``execution.taskSupport``
    (its tool's ``task``: the 2025-11-25 field; the 2026-07-28 schema drops it), and whose
    ``resources/read`` answers the runtime's own resources (:meth:`read_kept_with`) with
    their media type before the SDK's registered ones."""

    _kept_reader: DataReader | None = None
    _kept_templates: tuple[mcp_types.ResourceTemplate, ...] = ()

    def read_kept_with(self, reader: DataReader, template: mcp_types.ResourceTemplate) -> None:
        """Answer ``resources/read`` with ``reader`` first; list ``template``."""
        self._kept_reader = reader
        self._kept_templates = (template,)

    async def read_resource(self, uri: Any, context: Context[Any, Any] | None = None) -> Any:
        reader = self._kept_reader
        if reader is not None and context is not None:
            try:
                request = context.request_context
            except ValueError:  # read outside a request: the SDK's resources only
                request = None
            contents = None if request is None else await reader(str(uri), request)
            if contents is not None:
                return [contents]
        return await super().read_resource(uri, context)

    async def list_resource_templates(self) -> list[mcp_types.ResourceTemplate]:
        return [*await super().list_resource_templates(), *self._kept_templates]

    async def list_tools(self) -> list[mcp_types.Tool]:
        listed = await super().list_tools()
        support = {
            tool.name: task
            for tool in served_tools(self)
            if (task := getattr(tool, "task", None)) is not None
        }
        if not support:
            return listed
        return [
            tool.model_copy(update={"execution": ToolExecution(task_support=support[tool.name])})
            if tool.name in support
            else tool
            for tool in listed
        ]


def server_info_stamp(server: MCPServer) -> dict[str, Any]:
    """The ``serverInfo`` a 2026-07-28 result carries in its ``_meta``, as the SDK stamps
    it (a fresh copy: the caller owns it)."""
    return lowlevel_server(server).server_info_stamp


TASKS = mcp_types.ServerTasksCapability(
    list=mcp_types.TasksListCapability(),
    cancel=mcp_types.TasksCancelCapability(),
    requests=mcp_types.ServerTasksRequestsCapability(
        tools=mcp_types.TasksToolsCapability(call=mcp_types.TasksCallCapability())
    ),
)


def advertise_tasks(server: MCPServer) -> None:
    """Make ``server``'s ``initialize`` answer (2025-11-25) declare tasks: listed,
    cancelled, and created by ``tools/call``. (The SDK declares an extension's methods
    only in the 2026-07-28 capabilities; the 2025-11-25 ones have a field of their own.)"""
    extend_capabilities(server, _with_tasks)


def _with_tasks(
    found: mcp_types.ServerCapabilities, version: str | None
) -> mcp_types.ServerCapabilities:
    if version in MODERN_PROTOCOL_VERSIONS:
        return found
    return found.model_copy(update={"tasks": TASKS})
