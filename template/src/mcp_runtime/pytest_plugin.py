"""The runtime's pytest fixtures, for the service's tests and the runtime's own.

Loaded by ``-p mcp_runtime.pytest_plugin`` in ``pyproject.toml``, so that
``tests/conftest.py`` stays the service team's file.
"""

import logging
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mcp_runtime.oauth_testing import LocalIssuer
from mcp_runtime.sdk import MCPServer
from mcp_runtime.server import build_server
from mcp_runtime.tracing import use_tracer_provider


@pytest.fixture
def anyio_backend() -> str:
    """Run async tests on asyncio."""
    return "asyncio"


@pytest.fixture(scope="session")
def server() -> MCPServer:
    """The service's server, with every toolset, built through the startup gate."""
    return build_server()


@pytest.fixture
def oauth_issuer() -> Iterator[LocalIssuer]:
    """A local OAuth issuer serving its signing key on a loopback port, for the test."""
    with LocalIssuer() as issuer:
        yield issuer


@pytest.fixture
def call_spans() -> Iterator[InMemorySpanExporter]:
    """Tool calls traced during the test: their spans, as ``get_finished_spans()`` gives them."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with use_tracer_provider(provider):
        yield exporter
    provider.shutdown()


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    """Undo the logging set-up a test's command-line run makes."""
    root = logging.getLogger()
    runtime = logging.getLogger("mcp_runtime")
    saved = (list(root.handlers), root.level, runtime.level)
    yield
    root.handlers[:], root.level, runtime.level = saved[0], saved[1], saved[2]
