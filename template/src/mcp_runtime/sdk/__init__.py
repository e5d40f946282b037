"""Every use of the MCP SDK's server, in small parts named for what they do.

The rest of the runtime reaches the SDK's server through these modules only, each
imported by the part of the runtime that needs it (``tests/runtime/test_layout.py``
holds the rule). No module here imports a part of the runtime above it.

- :mod:`.seams`: the private parts of the SDK the runtime depends on, each reached
  through one function there (``tests/runtime/test_sdk_seams.py`` holds each to the SDK);
- :mod:`.context`: the request being served (headers, id, ``_meta``, revision, verified
  token), read from the context the SDK hands each call;
- :mod:`.tools`: what the SDK's server keeps of each tool, and the errors a tool raises;
- :mod:`.server`: the server the runtime serves (its tool list, its resources, its
  capabilities, its ``serverInfo`` stamp);
- :mod:`.hooks`: the SDK's public hooks: server middleware, extensions;
- :mod:`.http`: the streamable HTTP app, built once for each answer form, what the
  front reads of a request as the SDK does, and whether an event it writes is an answer;
- :mod:`.bearer`: the SDK's bearer-token check, run by the front;
- :mod:`.direct`: a ``tools/call`` answered without the SDK's request machinery;
- :mod:`.tasks`: what the task wire needs of the SDK;
- :mod:`.log_rewrites`: the SDK's log lines that would carry request values.

Protocol types (``mcp.types``) and the client side are public and stable, and are
imported where they are used. This package itself names the server for a service's own
code and tests: :class:`MCPServer`, and :func:`served_tools`.
"""

import warnings
from typing import TYPE_CHECKING

from mcp.server.mcpserver import MCPServer

from mcp_runtime.sdk.tools import served_tool_names, served_tools

__all__ = ["MCPServer", "served_tool_names", "served_tools"]

if TYPE_CHECKING:
    # The server's name before the SDK's 2.x line, which a service's tests may still
    # annotate with; it warns when used (``__getattr__``).
    FastMCP = MCPServer


def __getattr__(name: str) -> object:
    if name == "FastMCP":
        warnings.warn(
            "mcp_runtime.sdk.FastMCP is the MCP SDK 1.x name of the server: use MCPServer "
            "(from mcp_runtime.testing in tests); the old name will be removed in a later "
            "release",
            DeprecationWarning,
            stacklevel=2,
        )
        return MCPServer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
