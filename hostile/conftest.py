"""Fixtures of the hostile suite: real servers, one set per test module."""

from collections.abc import Iterator

import pytest
from harness import ERAS, Launcher, Server, Slot
from mcp_runtime.devtools.local_issuer import LocalIssuer


@pytest.fixture
def anyio_backend() -> str:
    """Run async tests on asyncio, as the service does."""
    return "asyncio"


@pytest.fixture(params=ERAS)
def era(request: pytest.FixtureRequest) -> str:
    """The protocol revision a test's calls speak: each era in turn."""
    revision: str = request.param
    return revision


@pytest.fixture(scope="session")
def issuer() -> Iterator[LocalIssuer]:
    """The authorization server whose tokens the suite's servers accept."""
    with LocalIssuer() as running:
        yield running


@pytest.fixture(scope="module")
def launch(tmp_path_factory: pytest.TempPathFactory, issuer: LocalIssuer) -> Iterator[Launcher]:
    """Start a server with the given settings; every one is stopped when the module ends."""
    started: list[Server] = []

    def start(**env: str) -> Server:
        server = Server(env, tmp_path_factory.mktemp("server"), issuer)
        started.append(server)
        return server

    yield start
    for server in started:
        server.close()


@pytest.fixture(scope="module")
def slot(launch: Launcher) -> Slot:
    """The module's server, restarted when a test left it broken (modules override the settings)."""
    return Slot(launch, MCP_CALL_TIMEOUT="5")


@pytest.fixture
def server(slot: Slot) -> Server:
    """The module's server, healthy."""
    return slot.healthy()
