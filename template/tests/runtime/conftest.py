"""The runtime's tests serve without authentication, unless a test is about it.

Every service runs these same tests, whatever its ``auth`` answer: the servers they
start (in process, or as processes that inherit the environment) get ``MCP_AUTH=none``.
The tests of authentication set their own settings.
"""

from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True, scope="session")
def serve_without_auth() -> Iterator[None]:
    """``MCP_AUTH=none`` for every server the runtime's tests start."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MCP_AUTH", "none")
        yield
