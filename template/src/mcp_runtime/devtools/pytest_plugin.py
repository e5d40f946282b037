"""The runtime's pytest fixtures and options, for the service's tests and the runtime's own.

Loaded by ``-p mcp_runtime.devtools.pytest_plugin`` in ``pyproject.toml``, so that
``tests/conftest.py`` stays the service team's file.

The data tools keep in a test is kept in a temporary folder (``MCP_DATA_URL``), unless the
environment names a place.

``uv run pytest`` runs the team's tests and the runtime's checks of the team's tools
(:data:`TEAM_CHECKS`: the startup gate on every tool, the published contract). The rest
of the runtime's own suite in ``tests/runtime/`` runs with ``--runtime-suite`` (the
service's CI passes it), or when it is named: ``uv run pytest tests/runtime``.
"""

import logging
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mcp_runtime.devtools.local_issuer import LocalIssuer
from mcp_runtime.observability.tracing import use_tracer_provider
from mcp_runtime.sdk import MCPServer
from mcp_runtime.serving.server import build_server

RUNTIME_SUITE = Path("tests", "runtime")
"""Where the runtime's own tests live, from the service's root."""

TEAM_CHECKS = frozenset({"test_contract.py", "test_contract_snapshot.py"})
"""The runtime's test modules that check the team's tools: they always run."""


ANY_PYTHON = (
    "any_python: its result does not depend on the Python version (it checks processes, "
    "a store or pytest's collection): a matrix over Pythons may run it on one of them only, "
    'with -m "not any_python" on the others'
)


DATA_URL = "MCP_DATA_URL"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", ANY_PYTHON)
    if not os.environ.get(DATA_URL):
        # The tests keep data in a folder of their own, never in the developer's.
        folder = tempfile.mkdtemp(prefix="mcp-test-data-")
        os.environ[DATA_URL] = folder
        config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--runtime-suite",
        action="store_true",
        help=f"also run the runtime's own tests in {RUNTIME_SUITE}/ (the service's CI does)",
    )


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Leave out the runtime's own test modules but :data:`TEAM_CHECKS`, unless asked for."""
    suite = config.rootpath / RUNTIME_SUITE
    if collection_path.parent != suite or collection_path.name in TEAM_CHECKS:
        return None
    if not collection_path.name.startswith("test_") or config.getoption("runtime_suite"):
        return None
    named = _named_paths(config)
    return None if suite.resolve() in named or collection_path.resolve() in named else True


def _named_paths(config: pytest.Config) -> set[Path]:
    """The paths the command line names (a node id's path part)."""
    invoked = config.invocation_params.dir
    return {(invoked / argument.split("::")[0]).resolve() for argument in config.args}


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
