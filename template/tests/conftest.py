"""Fixtures shared by the service's tests."""

import pytest
from mcp.server.fastmcp import FastMCP

from mcp_runtime import build_server


@pytest.fixture
def anyio_backend() -> str:
    """Run async tests on asyncio."""
    return "asyncio"


@pytest.fixture(scope="session")
def server() -> FastMCP:
    """The service's server, with every toolset, built through the startup gate."""
    return build_server()
