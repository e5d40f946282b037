"""Fixtures of the hostile suite: real servers, one for the modules that keep the default
settings and one for each module that needs others."""

import contextlib
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


@contextlib.contextmanager
def launcher(tmp_path_factory: pytest.TempPathFactory, issuer: LocalIssuer) -> Iterator[Launcher]:
    """Start a server with the given settings; every one is stopped on leaving."""
    started: list[Server] = []

    def start(**env: str) -> Server:
        server = Server(env, tmp_path_factory.mktemp("server"), issuer)
        started.append(server)
        return server

    try:
        yield start
    finally:
        for server in started:
            server.close()


@pytest.fixture(scope="module")
def launch(tmp_path_factory: pytest.TempPathFactory, issuer: LocalIssuer) -> Iterator[Launcher]:
    """Start a server with the given settings; every one is stopped when the module ends."""
    with launcher(tmp_path_factory, issuer) as start:
        yield start


@pytest.fixture(scope="session")
def slot(tmp_path_factory: pytest.TempPathFactory, issuer: LocalIssuer) -> Iterator[Slot]:
    """The server of the modules that keep the default settings, one for all of them in a
    worker (a test that leaves it broken gets it restarted); a module that needs other
    settings overrides this with a server of its own."""
    with launcher(tmp_path_factory, issuer) as start:
        yield Slot(start, MCP_CALL_TIMEOUT="5")


@pytest.fixture
def server(slot: Slot) -> Server:
    """The server of the test's module (the shared one, or the module's own), healthy."""
    return slot.healthy()
