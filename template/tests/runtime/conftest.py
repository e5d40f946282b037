"""The runtime's tests serve without authentication, unless a test is about it; a
Redis of their own serves the tests that keep tasks there (``redis_url``, and
``task_store``: the settings that keep a service's tasks there), and an S3 API server of
their own (moto's) the tests of data kept on an object store (``object_store``: the
settings that keep a service's data in a bucket of its own).

Every service runs these same tests, whatever its ``auth`` answer: the servers they
start (in process, or as processes that inherit the environment) get ``MCP_AUTH=none``.
The tests of authentication set their own settings. It is set for each test of this
folder from before its fixtures start until after they stop, and only for these: the
team's tests in ``tests/`` see the service's own environment.
"""

import functools
import os
import secrets
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from mcp_runtime.testing import free_port

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


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A ``redis-server`` of its own, on a free port, saving nothing unless asked."""
    port = free_port()
    process = start_redis(tmp_path_factory.mktemp("redis"), port)
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture(scope="session")
def task_store(redis_url: str) -> dict[str, str]:
    """The settings that keep a service's tasks on the tests' Redis, sealed with a key of
    the tests' own."""
    return {"MCP_TASKS_URL": redis_url, "MCP_TASK_KEYS": Fernet.generate_key().decode()}


@pytest.fixture(scope="session")
def redis_starter() -> Callable[..., "subprocess.Popen[bytes]"]:
    """:func:`start_redis`, for a test that stops and starts a Redis of its own."""
    return start_redis


def start_redis(folder: Path, port: int, *, durable: bool = False) -> "subprocess.Popen[bytes]":
    """A ``redis-server`` on the loopback ``port``, answering, which saves only when asked
    (uncompressed, in ``folder``); ``durable``: every write is in its append-only file
    before it answers, so that a Redis started again on ``folder`` has it."""
    server = shutil.which("redis-server")
    if server is None:
        pytest.fail(
            "redis-server is not installed: the task store's tests need it "
            "(on Debian or Ubuntu: apt-get install redis-server)"
        )
    command = [server, "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
    command += ["--appendonly", "yes" if durable else "no", "--appendfsync", "always"]
    command += ["--rdbcompression", "no", "--dir", str(folder)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 10
    while redis_cli(port, "PING") != "PONG":
        if time.monotonic() > deadline or process.poll() is not None:
            process.kill()
            pytest.fail("redis-server did not start")
        time.sleep(0.05)
    return process


def redis_cli(port: int, *command: str) -> str:
    """A command's answer from the Redis on ``port``, as ``redis-cli`` prints it."""
    found = subprocess.run(
        ["redis-cli", "-p", str(port), *command], capture_output=True, text=True, check=False
    )
    return found.stdout.strip()


@pytest.fixture(scope="session")
def redis_command(redis_url: str) -> Callable[..., str]:
    """Runs a command on the tests' Redis, answering what ``redis-cli`` prints."""
    port = int(redis_url.rsplit(":", 1)[1].split("/")[0])
    return functools.partial(redis_cli, port)


@pytest.fixture(scope="session")
def s3_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An S3 API server of its own (moto's server mode), on a free loopback port."""
    folder = tmp_path_factory.mktemp("moto")
    for _ in range(3):  # a free port another process took: start again on another
        port = free_port()
        endpoint = f"http://127.0.0.1:{port}"
        log = (folder / "moto.log").open("ab")
        command = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        if _answering(process, f"{endpoint}/moto-api/"):
            break
        process.kill()
        process.wait()
        log.close()
    else:
        pytest.fail(f"moto's S3 server did not start: its log is {folder / 'moto.log'}")
    try:
        yield endpoint
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()


@pytest.fixture
def object_store(s3_endpoint: str) -> dict[str, str]:
    """The settings that keep a service's data in a new bucket of the tests' S3 server, as
    a team sets them for its own store: the bucket's URL, and the credentials and
    endpoint the environment gives."""
    bucket = f"data-{secrets.token_hex(6)}"
    request = urllib.request.Request(f"{s3_endpoint}/{bucket}", method="PUT")
    with urllib.request.urlopen(request, timeout=10):
        pass
    return {
        "MCP_DATA_URL": f"s3://{bucket}/kept",
        "AWS_ENDPOINT_URL": s3_endpoint,
        "AWS_ALLOW_HTTP": "true",
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_REGION": "us-east-1",
    }


def _answering(process: "subprocess.Popen[bytes]", url: str) -> bool:
    """Whether ``process`` answers ``url`` within 30 seconds."""
    deadline = time.monotonic() + 30
    while process.poll() is None and time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=1):
                return True
        except OSError:
            time.sleep(0.05)
    return False
