"""The contract runtime: LangChain tools served over MCP with typed, validated results.

Owned by the template and updated by ``copier update``; do not edit it in a service.
"""

from mcp_runtime.auth import Caller, current_caller, using_caller
from mcp_runtime.gate import to_fastmcp
from mcp_runtime.progress import report_progress
from mcp_runtime.request_headers import request_header, using_headers
from mcp_runtime.server import build_server
from mcp_runtime.tool_metadata import tool_metadata
from mcp_runtime.tool_result import ToolError, ToolResult, is_error
from mcp_runtime.violations import ContractError, ContractViolation

__all__ = [
    "Caller",
    "ContractError",
    "ContractViolation",
    "ToolError",
    "ToolResult",
    "build_server",
    "current_caller",
    "is_error",
    "report_progress",
    "request_header",
    "to_fastmcp",
    "tool_metadata",
    "using_caller",
    "using_headers",
]
