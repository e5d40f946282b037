"""The runtime's tests serve without authentication, unless a test is about it.

Every service runs these same tests, whatever its ``auth`` answer: the servers they
start (in process, or as processes that inherit the environment) get ``MCP_AUTH=none``.
The tests of authentication set their own settings. It is set for each test of this
folder from before its fixtures start until after they stop, and only for these: the
team's tests in ``tests/`` see the service's own environment.
"""

import os
from collections.abc import Iterator

import pytest

SAVED = pytest.StashKey[str | None]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    item.stash[SAVED] = os.environ.get("MCP_AUTH")
    os.environ["MCP_AUTH"] = "none"
    yield


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    try:
        yield
    finally:
        saved = item.stash.get(SAVED, None)
        if saved is None:
            os.environ.pop("MCP_AUTH", None)
        else:
            os.environ["MCP_AUTH"] = saved
