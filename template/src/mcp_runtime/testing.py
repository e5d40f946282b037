"""Helpers for a service's tests: real MCP client sessions against the service.

- :func:`connect` opens an in-memory client session to a server object.
- :func:`serve_http` starts the service's own command line on a loopback port and
  :func:`connect_http` opens a streamable HTTP client session to it, with headers.

The MCP client checks every ``structuredContent`` against the tool's advertised
``outputSchema``, so a call that succeeds through these sessions has been
validated by the client as well as by the server.
"""

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.server.fastmcp import FastMCP
from mcp.shared.memory import create_connected_server_and_client_session

__all__ = ["connect", "connect_http", "free_port", "serve_http"]

STARTUP_SECONDS = 60.0


@asynccontextmanager
async def connect(server: FastMCP) -> AsyncIterator[ClientSession]:
    """An initialized client session to ``server`` over in-memory streams."""
    async with create_connected_server_and_client_session(server) as session:
        yield session


@asynccontextmanager
async def connect_http(
    url: str, *, headers: Mapping[str, str] | None = None
) -> AsyncIterator[ClientSession]:
    """An initialized client session to ``url`` over streamable HTTP, sending ``headers``."""
    async with (
        httpx.AsyncClient(headers=dict(headers or {}), timeout=30) as http_client,
        streamable_http_client(url, http_client=http_client) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def serve_http(*, env: Mapping[str, str] | None = None, args: Sequence[str] = ()) -> Iterator[str]:
    """Run ``serve`` of the installed service on a free loopback port; yield the MCP URL.

    The server runs as its own process, exactly as an operator starts it; it is
    stopped when the block ends. Its log is included in the error if it fails to start.
    """
    port = free_port()
    command = [sys.executable, "-m", "mcp_runtime", "serve", "--port", str(port), *args]
    with tempfile.TemporaryDirectory() as folder:
        log_path = Path(folder) / "server.log"
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                command,
                env={**os.environ, **(env or {})},
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        try:
            _wait_for_port(port, process, log_path)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_for_port(port: int, process: "subprocess.Popen[bytes]", log_path: Path) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            log = log_path.read_text(errors="replace")
            raise RuntimeError(f"the server exited with status {process.returncode}:\n{log}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"the server did not listen on port {port} within {STARTUP_SECONDS}s")
