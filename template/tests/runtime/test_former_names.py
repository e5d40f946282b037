"""Former names of the runtime, which a team's code may still use: each works as its new
name does, and warns (``DeprecationWarning``) naming the new one."""

import sys
import warnings

import pytest
from langchain_core.tools import tool

from mcp_runtime import ToolResult
from mcp_runtime.config.settings import ServiceSettings
from mcp_runtime.contract.toolsets import Toolset
from mcp_runtime.serving import http_app, server
from mcp_runtime.testing import MCPServer

NO_AUTH = ServiceSettings(auth="none")


@tool
def ping() -> ToolResult:
    """Answer at once."""
    return ToolResult(message="pong")


def test_to_fastmcp_is_to_mcp_tool() -> None:
    from mcp_runtime import to_fastmcp, to_mcp_tool

    with pytest.warns(DeprecationWarning, match="to_fastmcp is now to_mcp_tool"):
        former = to_fastmcp(ping, toolset="pings")
    assert former.model_dump(exclude={"fn", "state", "caller"}) == to_mcp_tool(
        ping, toolset="pings"
    ).model_dump(exclude={"fn", "state", "caller"})


@pytest.mark.anyio
async def test_create_server_is_build_server() -> None:
    with pytest.warns(DeprecationWarning, match=r"is now build_server\(toolsets, name=name\)"):
        former = server.create_server("pings", [Toolset("pings", (ping,))], settings=NO_AUTH)
    assert former.name == "pings"
    assert [tool.name for tool in await former.list_tools()] == ["ping"]


def test_http_app_service_app_and_app_from_environment_build_the_app(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built = server.build_server([Toolset("pings", (ping,))], name="pings", settings=NO_AUTH)
    with pytest.warns(DeprecationWarning, match="http_app is now build_app"):
        assert isinstance(http_app.http_app(built, NO_AUTH), http_app.ServiceApp)
    with pytest.warns(DeprecationWarning, match="service_app is now process_app"):
        assert isinstance(http_app.service_app(NO_AUTH, built), http_app.ServiceApp)
    monkeypatch.setenv("MCP_AUTH", "none")
    with pytest.warns(DeprecationWarning, match=r"app_from_environment\(\) is now process_app"):
        assert isinstance(http_app.app_from_environment(), http_app.ServiceApp)


def test_the_sdk_1x_server_name_is_the_servers_type() -> None:
    sdk = sys.modules["mcp_runtime.sdk"]
    with pytest.warns(DeprecationWarning, match="FastMCP is the MCP SDK 1.x name of the server"):
        former = sdk.FastMCP
    assert former is MCPServer
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from mcp_runtime.sdk import MCPServer as Current  # the new name warns of nothing
    assert Current is MCPServer
    with pytest.raises(AttributeError, match="has no attribute 'NoSuchName'"):
        _ = sdk.NoSuchName
