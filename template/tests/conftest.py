"""Fixtures shared by the service's tests."""

import logging
from collections.abc import Iterator

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


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    """Undo the logging set-up a test's command-line run makes."""
    root = logging.getLogger()
    runtime = logging.getLogger("mcp_runtime")
    saved = (list(root.handlers), root.level, runtime.level)
    yield
    root.handlers[:], root.level, runtime.level = saved[0], saved[1], saved[2]
