"""One service's state: its tool threads, calls in flight, open requests and metrics.

Each server owns the state it was built with, and its app serves from that state: two
services built in one process, as tests build them, share nothing.
"""

import re

import httpx2
import pytest
from langchain_core.tools import tool

from mcp_runtime import ToolResult, to_mcp_tool
from mcp_runtime.config.settings import ServiceSettings
from mcp_runtime.contract.toolsets import Toolset
from mcp_runtime.execution.state import ServiceState
from mcp_runtime.sdk import MCPServer
from mcp_runtime.serving.http_app import ServiceApp, build_app
from mcp_runtime.serving.server import build_server, state_of
from mcp_runtime.testing import connect

pytestmark = pytest.mark.anyio


@tool
def ping() -> ToolResult:
    """Answer at once."""
    return ToolResult(message="pong")


def service(name: str, **settings: object) -> tuple[MCPServer, ServiceApp]:
    chosen = ServiceSettings(**settings)  # type: ignore[arg-type]
    server = build_server([Toolset(name, (ping,))], name=name, settings=chosen)
    app = build_app(server, chosen)
    app.ready = True  # as once the app has started
    return server, app


async def get(app: ServiceApp, path: str) -> httpx2.Response:
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://service") as client:
        return await client.get(path)


def calls_counted(scrape: str) -> list[str]:
    return re.findall(r'^mcp_tool_calls_total\{outcome="ok",tool="ping"\} (\S+)$', scrape, re.M)


async def test_two_services_in_one_process_share_nothing() -> None:
    first_server, first = service("first", tool_threads=3)
    second_server, second = service("second", tool_threads=5, tool_threads_per_tool=1)
    async with connect(first_server) as session:
        await session.call_tool("ping", {})
        await session.call_tool("ping", {})
    async with connect(second_server) as session:
        await session.call_tool("ping", {})
    first.state.calls.begin_draining()

    assert (first.state.threads.size, first.state.threads.share) == (3, 1)
    assert (second.state.threads.size, second.state.threads.share) == (5, 1)
    assert calls_counted((await get(first, "/metrics")).text) == ["2.0"]
    assert calls_counted((await get(second, "/metrics")).text) == ["1.0"]
    assert (await get(first, "/readyz")).json() == {"status": "draining"}
    assert (await get(second, "/readyz")).json() == {"status": "ready", "tools": 1}


def test_a_server_and_its_app_serve_one_state() -> None:
    state = ServiceState(ServiceSettings(tool_threads=2))
    server = build_server([Toolset("given", (ping,))], name="given", state=state)
    assert state_of(server) is state
    assert build_app(server).state is state
    assert ServiceState().threads.size == ServiceSettings.model_construct().tool_threads


def test_a_server_whose_tools_run_with_two_states_is_refused() -> None:
    @tool
    def pong() -> ToolResult:
        """Answer at once."""
        return ToolResult(message="ping")

    server = MCPServer("mixed", tools=[to_mcp_tool(ping), to_mcp_tool(pong)])
    with pytest.raises(ValueError, match=r"^the tools of server 'mixed' run with 2 different "):
        build_app(server)
