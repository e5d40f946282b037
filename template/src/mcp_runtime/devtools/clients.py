"""Helpers for a service's tests: real MCP client sessions against the service.

- :func:`connect` opens an in-memory client session to a server object.
- :func:`serve_http` starts the service's own command line on a loopback port and
  :func:`connect_http` opens a streamable HTTP client session to it, with headers;
  :func:`run_server` starts any server command the same way, and gives its process
  and its log.

The MCP client checks every ``structuredContent`` against the tool's advertised
``outputSchema``, so a call that succeeds through these sessions has been
validated by the client as well as by the server.
"""

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import httpx2
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, ListToolsResult, Tool

from mcp_runtime.sdk import MCPServer

__all__ = [
    "ListedTool",
    "Mode",
    "RunningServer",
    "Session",
    "ToolAnswer",
    "ToolListing",
    "connect",
    "connect_http",
    "free_port",
    "run_server",
    "serve_http",
]

STARTUP_SECONDS = 60.0
STOP_SECONDS = 60.0
PORT_ATTEMPTS = 5  # free ports tried before giving up on starting a server


# How a client speaks: "legacy" (2025-11-25 and before: initialize, JSON-RPC framing),
# "2026-07-28" (stateless, each request carries its revision), or "auto" (the newest
# revision both ends speak).
Mode = Literal["legacy", "2026-07-28", "auto"]


class ToolAnswer(CallToolResult):
    """A ``tools/call`` result, its fields also under the protocol's own names."""

    @property
    def structuredContent(self) -> Any:  # noqa: N802 (the protocol's name)
        return self.structured_content

    @property
    def isError(self) -> bool:  # noqa: N802
        return self.is_error


class ListedTool(Tool):
    """A ``tools/list`` entry, its schemas also under the protocol's own names."""

    @property
    def inputSchema(self) -> dict[str, Any]:  # noqa: N802
        return self.input_schema

    @property
    def outputSchema(self) -> dict[str, Any] | None:  # noqa: N802
        return self.output_schema


class ToolListing(ListToolsResult):
    """A ``tools/list`` result whose entries are :class:`ListedTool`."""

    tools: list[ListedTool]  # type: ignore[assignment]


class Session:
    """A connected MCP client (the SDK's ``Client``, whose every method it offers).

    Its ``call_tool`` and ``list_tools`` results answer to the field names of the wire
    (``structuredContent``, ``isError``, ``inputSchema``, ``outputSchema``), as tests
    written against the SDK's 1.x client read them, and to the SDK's own.
    """

    def __init__(self, client: Client) -> None:
        self.client = client

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None = None, **options: Any
    ) -> ToolAnswer:
        """Call the tool ``name``; the client has checked the result against its schema."""
        result = await self.client.call_tool(name, arguments, **options)
        return ToolAnswer.model_construct(**dict(result))

    async def list_tools(self, **options: Any) -> ToolListing:
        """The server's ``tools/list`` answer."""
        listing = await self.client.list_tools(**options)
        tools = [ListedTool.model_construct(**dict(tool)) for tool in listing.tools]
        return ToolListing.model_construct(**{**dict(listing), "tools": tools})

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)


@asynccontextmanager
async def connect(server: MCPServer, *, mode: Mode = "legacy") -> AsyncIterator[Session]:
    """A connected client of ``server``, in this process, speaking as ``mode`` says."""
    async with Client(server, mode=mode, cache=None) as client:
        yield Session(client)


@asynccontextmanager
async def connect_http(
    url: str, *, headers: Mapping[str, str] | None = None, mode: Mode = "legacy"
) -> AsyncIterator[Session]:
    """A connected client of ``url`` over streamable HTTP, sending ``headers``."""
    timeout = httpx2.Timeout(30, read=300)
    async with (
        httpx2.AsyncClient(headers=dict(headers or {}), timeout=timeout) as http_client,
        Client(
            streamable_http_client(url, http_client=http_client), mode=mode, cache=None
        ) as client,
    ):
        yield Session(client)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class RunningServer:
    """A server process started by :func:`run_server`."""

    port: int
    process: "subprocess.Popen[bytes]"
    log_path: Path

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT``: where ``/healthz`` and ``/readyz`` are."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """The MCP endpoint, ``http://127.0.0.1:PORT/mcp``."""
        return f"{self.base_url}/mcp"

    def log(self) -> str:
        """What the server has written to its standard output and error so far."""
        return self.log_path.read_text(errors="replace")


@contextmanager
def serve_http(*, env: Mapping[str, str] | None = None, args: Sequence[str] = ()) -> Iterator[str]:
    """Run ``serve`` of the installed service on a free loopback port; yield the MCP URL.

    The server runs as its own process, exactly as an operator starts it; it is
    stopped when the block ends. Its log is included in the error if it fails to start.
    """
    command = [sys.executable, "-m", "mcp_runtime", "serve", *args]
    with run_server(command, env=env) as server:
        yield server.url


@contextmanager
def run_server(
    command: Sequence[str], *, env: Mapping[str, str] | None = None
) -> Iterator[RunningServer]:
    """Run ``command`` with ``MCP_PORT`` set to a free loopback port, once it listens.

    A port found free may be taken by another process (another test's server) before
    this one listens on it: then the server is stopped and started again on another
    port, so that the block never talks to a server not its own.

    When the block ends the server gets SIGTERM and has ``STOP_SECONDS`` to exit;
    then its whole process group (worker processes included) is killed.
    """
    for _ in range(PORT_ATTEMPTS):
        port = free_port()
        with tempfile.TemporaryDirectory() as folder:
            log_path = Path(folder) / "server.log"
            with log_path.open("wb") as log:
                process = subprocess.Popen(
                    command,
                    env={**os.environ, **(env or {}), "MCP_PORT": str(port)},
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            try:
                _wait_for_port(port, process, log_path)
                if not _listens_on(process.pid, port):
                    continue  # another process listens there: try another port
                yield RunningServer(port, process, log_path)
                return
            finally:
                _stop(process)
    raise RuntimeError(
        f"another process took each of {PORT_ATTEMPTS} free ports before the server listened"
    )


def _stop(process: "subprocess.Popen[bytes]") -> None:
    if process.poll() is None:
        process.terminate()
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=STOP_SECONDS)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _listens_on(pid: int, port: int) -> bool:
    """Whether the socket listening on ``port`` is process ``pid``'s; True where Linux's
    ``/proc`` does not tell."""
    listening = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                    listening.add(f"socket:[{fields[9]}]")
    try:
        descriptors = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return True
    if not listening:
        return True
    for descriptor in descriptors:
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/{pid}/fd/{descriptor}") in listening:
                return True
    return False


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
