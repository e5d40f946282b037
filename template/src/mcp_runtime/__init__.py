"""The contract runtime: LangChain tools served over MCP with typed, validated results.

Owned by the template and updated by ``copier update``; do not edit it in a service.
"""

import gc

# Importing the runtime and its libraries builds a large graph of objects that live as
# long as the process and hold few cycles: the cyclic collector is paused meanwhile, as
# walking that graph again and again finds nothing to free. The command line and each
# worker process then freeze what startup built (``gc.freeze``), so that the collector
# never walks it again, at exit included.
_collecting = gc.isenabled()
gc.disable()
try:
    from mcp_runtime.auth import Caller, current_caller, using_caller
    from mcp_runtime.gate import to_fastmcp
    from mcp_runtime.progress import report_progress
    from mcp_runtime.request_headers import request_header, using_headers
    from mcp_runtime.server import build_server
    from mcp_runtime.tool_metadata import tool_metadata
    from mcp_runtime.tool_result import ToolError, ToolResult, is_error
    from mcp_runtime.violations import ContractError, ContractViolation
finally:
    if _collecting:
        gc.enable()


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
