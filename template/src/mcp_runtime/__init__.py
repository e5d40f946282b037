"""The contract runtime: LangChain tools served over MCP with typed, validated results.

Owned by the template and updated by ``copier update``; do not edit it in a service.

A service's tools import from here, and its tests from :mod:`mcp_runtime.testing`; the
rest is the runtime's own, in parts that import only the parts below them:

- ``devtools``: scaffolds, test clients, a local OAuth issuer, the pytest plugin
  (not in the production wheel or image);
- ``serving``: the MCP server, its HTTP app, the worker processes, the command line;
- ``tasks``: calls that outlive their request, on the task engine (Docket);
- ``contract``: return types, the ``outputSchema``, the startup gate, the served tool;
- ``execution``: a call's deadline and cancellation, the tool threads, progress;
- ``data``: the data tools keep for their callers, on a directory or an object store;
- ``auth`` and ``observability``: callers and their tokens; logs, metrics, traces;
- ``config`` and ``sdk``: the settings, and every use of the MCP SDK's server.
"""

import gc

# Importing the runtime and its libraries builds a large graph of objects that live as
# long as the process and hold few cycles: the cyclic collector is paused meanwhile, as
# walking that graph again and again finds nothing to free. The graph is then moved to the
# collector's oldest generation (``gc.freeze`` and ``gc.unfreeze``) without a walk, where
# the first collections after the import would have walked it twice (a fifth of a
# second). The command line and each worker process then freeze what startup built
# (``gc.freeze``), so that the collector never walks it again, at exit included.
_collecting = gc.isenabled()
gc.disable()
try:
    from mcp_runtime.auth.oauth import Caller, current_caller, using_caller
    from mcp_runtime.auth.request_headers import request_header, using_headers
    from mcp_runtime.config.settings import ServiceSettings, current_settings, using_settings
    from mcp_runtime.contract.gate import to_fastmcp, to_mcp_tool
    from mcp_runtime.contract.tool_metadata import tool_metadata
    from mcp_runtime.contract.tool_result import ToolError, ToolResult, is_error
    from mcp_runtime.contract.violations import ContractError, ContractViolation
    from mcp_runtime.data.keeping import (
        DataLimitError,
        DataLink,
        keep_data,
        keep_data_async,
        reserve_data,
        reserve_data_async,
    )
    from mcp_runtime.execution.checkpoints import is_resumed, last_checkpoint, save_checkpoint
    from mcp_runtime.execution.progress import report_progress
    from mcp_runtime.serving.server import build_server
finally:
    gc.freeze()
    gc.unfreeze()
    if _collecting:
        gc.enable()


__all__ = [
    "Caller",
    "ContractError",
    "ContractViolation",
    "DataLimitError",
    "DataLink",
    "ServiceSettings",
    "ToolError",
    "ToolResult",
    "build_server",
    "current_caller",
    "current_settings",
    "is_error",
    "is_resumed",
    "keep_data",
    "keep_data_async",
    "last_checkpoint",
    "report_progress",
    "request_header",
    "reserve_data",
    "reserve_data_async",
    "save_checkpoint",
    "to_fastmcp",
    "to_mcp_tool",
    "tool_metadata",
    "using_caller",
    "using_headers",
    "using_settings",
]
