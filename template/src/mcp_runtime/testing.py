"""What a service's tests import: real MCP client sessions, the service served on a
loopback port, and a local OAuth issuer. Part of the developer tooling: not in the
production wheel or image.

- :func:`connect` opens an in-memory client session to a server object
  (:class:`MCPServer`, as :func:`mcp_runtime.build_server` returns it).
- :func:`serve_http` starts the service's own command line on a loopback port and
  :func:`connect_http` opens a streamable HTTP client session to it, with headers.
- :class:`LocalIssuer` signs tokens and publishes its key, for ``MCP_AUTH=oauth``.
- :func:`task_run` calls a tool as a run of a task, from a checkpoint, and keeps the
  checkpoints it saves.
- :func:`kept_data` keeps the data a tool called directly keeps (``keep_data``), to read
  back by its link.
"""

from mcp_runtime.devtools.clients import (
    ListedTool,
    Mode,
    RunningServer,
    Session,
    ToolAnswer,
    ToolListing,
    connect,
    connect_http,
    free_port,
    run_server,
    serve_http,
)
from mcp_runtime.devtools.direct_data import KeptData, kept_data
from mcp_runtime.devtools.local_issuer import LocalIssuer
from mcp_runtime.devtools.task_runs import SavedCheckpoints, task_run
from mcp_runtime.sdk import MCPServer

__all__ = [
    "KeptData",
    "ListedTool",
    "LocalIssuer",
    "MCPServer",
    "Mode",
    "RunningServer",
    "SavedCheckpoints",
    "Session",
    "ToolAnswer",
    "ToolListing",
    "connect",
    "connect_http",
    "free_port",
    "kept_data",
    "run_server",
    "serve_http",
    "task_run",
]
