"""The private parts of the SDK the runtime depends on, each reached through one function.

The SDK offers no public hook for any of them; each function's docstring names the part
and why. The other modules of ``sdk/`` reach them through these functions only, and
``tests/runtime/test_sdk_seams.py`` holds each to the SDK installed: it fails the day a
release changes one.
"""

import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from mcp import types as mcp_types
from mcp.server._otel import OpenTelemetryMiddleware
from mcp.server.auth.provider import TokenVerifier
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools import Tool as SDKTool
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from pydantic import BaseModel
from starlette.applications import Starlette

__all__ = [
    "CapabilitiesExtension",
    "extend_capabilities",
    "func_metadata",
    "join_lifespans",
    "lowlevel_server",
    "registered_tools",
    "starts_as_answer",
    "token_verifier",
    "without_sdk_spans",
]

CapabilitiesExtension = Callable[
    [mcp_types.ServerCapabilities, str | None], mcp_types.ServerCapabilities
]
"""Extends the capabilities the SDK found for a protocol revision (None: the ``initialize``
era's handshake, which names none)."""


def registered_tools(server: MCPServer) -> list[SDKTool]:
    """The SDK's tool objects ``server`` serves, in the order it lists them.

    Private part: ``MCPServer._tool_manager``. The public ``MCPServer.list_tools`` answers
    the wire's ``Tool``, without what the runtime keeps on its own tools.
    """
    return server._tool_manager.list_tools()


def token_verifier(server: MCPServer) -> TokenVerifier | None:
    """The token verifier ``server`` checks bearer tokens with; None without one.

    Private part: ``MCPServer._token_verifier``. The SDK takes it as an argument and keeps no
    public name for it; the front checks a token before the SDK's app, with the same one.
    """
    return server._token_verifier


def lowlevel_server(server: MCPServer) -> Server[Any]:
    """The low-level server under ``server``: its ``serverInfo`` stamp, its capabilities.

    Private part: ``MCPServer._lowlevel_server``. ``MCPServer`` passes on some of its
    properties (name, middleware, session manager), not these two.
    """
    return server._lowlevel_server


def extend_capabilities(server: MCPServer, extension: CapabilitiesExtension) -> None:
    """Make every capabilities ``server`` declares pass through ``extension``.

    Private part: ``Server.get_capabilities``, replaced on the instance. The SDK builds the
    ``initialize`` answer (and ``server/discover``'s) through it and offers no hook to add
    to it: an extension declares its methods in the 2026-07-28 capabilities only.
    """
    lowlevel = lowlevel_server(server)
    found_by_sdk = lowlevel.get_capabilities

    def extended(*args: Any, **kwargs: Any) -> mcp_types.ServerCapabilities:
        return extension(found_by_sdk(*args, **kwargs), kwargs.get("protocol_version"))

    lowlevel.get_capabilities = extended  # type: ignore[method-assign]


def without_sdk_spans(server: MCPServer) -> MCPServer:
    """``server`` without the SDK's own span per message: the runtime traces each call once.

    Private part: ``mcp.server._otel.OpenTelemetryMiddleware``, which the SDK puts in every
    server's middleware, with no setting to leave it out.
    """
    server.middleware[:] = [
        middleware
        for middleware in server.middleware
        if not isinstance(middleware, OpenTelemetryMiddleware)
    ]
    return server


def func_metadata(arguments: type[BaseModel], output_schema: dict[str, Any]) -> FuncMetadata:
    """What the SDK keeps about a tool's function: its arguments model and output schema.

    Private part: ``FuncMetadata`` built by ``model_construct``, unvalidated. The SDK builds
    one from a function's signature only, and its validation asks for a model of its own
    base (``ArgModelBase``); ``arguments`` is the tool's own model, checked by the gate.
    """
    # The SDK types it as its own argument base; it reads only the model's fields.
    return FuncMetadata.model_construct(
        arg_model=arguments,  # type: ignore[arg-type]
        output_schema=output_schema,
    )


def join_lifespans(app: Starlette, also: Starlette) -> None:
    """Make serving ``app``'s lifespan run ``also``'s too (``also`` is never served alone).

    Private part: Starlette's ``Router.lifespan_context`` of the SDK's app, replaced. The SDK
    starts an app's session manager in that app's lifespan, given when it builds the app,
    and in no other way.
    """
    own = app.router.lifespan_context
    other = also.router.lifespan_context

    @asynccontextmanager
    async def both(served: Any) -> AsyncIterator[Any]:
        async with other(also), own(served) as state:
            yield state

    app.router.lifespan_context = both


ANSWER_HEAD = re.compile(
    rb'\{"jsonrpc": ?"2\.0", ?"id": ?(?:-?\d+|"(?:[^"\\]|\\.)*"), ?"(?:result|error)":'
)


def starts_as_answer(data: bytes) -> bool:
    """Whether the data of an SSE event the SDK wrote starts as a JSON-RPC answer (a result
    or an error to a request); False tells nothing.

    Private part: the order the SDK writes a message's members in (``jsonrpc``, ``id``,
    then ``result`` or ``error``, as its models declare them), in either era; nothing
    public says it. Read from the head alone, so a long answer is never parsed.
    """
    return ANSWER_HEAD.match(data) is not None
