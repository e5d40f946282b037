"""Serving in production: settings, health and readiness, timeouts, limits, Host checks,
call logs and graceful shutdown."""

import contextlib
import functools
import http.client
import json
import logging
import os
import shutil
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import uvicorn
from langchain_core.tools import tool
from pydantic import ValidationError
from uvicorn.supervisors.multiprocess import SIGNALS as SUPERVISOR_SIGNALS

from mcp_runtime import ToolResult, tool_metadata
from mcp_runtime.config.settings import ServiceSettings, SettingsError, load_settings
from mcp_runtime.contract.toolsets import Toolset, find_service
from mcp_runtime.observability.logs import JsonFormatter
from mcp_runtime.serving import cli
from mcp_runtime.serving.http_app import build_app, process_app
from mcp_runtime.serving.processes import ServingConfig, Supervisor
from mcp_runtime.serving.server import build_server, require_shared_tasks
from mcp_runtime.testing import RunningServer, connect_http, free_port, run_server, serve_http

pytestmark = pytest.mark.anyio

HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
SERVE = [sys.executable, "-m", "mcp_runtime", "serve"]
SLOW_SERVICE = [sys.executable, str(Path(__file__).with_name("slow_service.py"))]
WAIT_SECONDS = 30.0
MODERN = "2026-07-28"


@tool
async def nap(seconds: float) -> ToolResult:
    """Sleep for a while, then answer."""
    await anyio.sleep(seconds)
    return ToolResult(message=f"slept {seconds}")


class ThreadedServer:
    """A real uvicorn server on a loopback port, in a thread, serving the ``nap`` tool."""

    def __init__(self, settings: ServiceSettings) -> None:
        server = build_server([Toolset("serving", (nap,))], name="serving", settings=settings)
        self.port = free_port()
        config = uvicorn.Config(
            build_app(server),
            host="127.0.0.1",
            port=self.port,
            log_level="warning",
            timeout_graceful_shutdown=10,
        )
        self.uvicorn = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.uvicorn.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def __enter__(self) -> "ThreadedServer":
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.uvicorn.started:
            assert time.monotonic() < deadline, "the test server did not start"
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.uvicorn.should_exit = True
        self.thread.join(timeout=15)


@pytest.fixture
def timed_server() -> Iterator[ThreadedServer]:
    with ThreadedServer(ServiceSettings(call_timeout=0.5)) as server:
        yield server


# --- settings -------------------------------------------------------------------


def test_settings_have_safe_defaults(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)  # no .env here
    for variable in [name for name in os.environ if name.startswith("MCP_")]:
        monkeypatch.delenv(variable)
    settings = load_settings()
    assert (settings.host, settings.port, settings.workers) == ("127.0.0.1", 8000, 1)
    assert settings.stateless is True
    assert settings.loopback is True
    assert (settings.call_timeout, settings.max_request_bytes) == (60.0, 4 * 1024 * 1024)
    assert (settings.read_timeout, settings.idle_timeout, settings.shutdown_grace) == (10, 65, 30)
    assert (settings.max_connections, settings.max_json_depth, settings.tool_threads) == (
        1000,
        64,
        40,
    )


def test_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_TOOLSETS", "hello, credential-demo")
    monkeypatch.setenv("MCP_CALL_TIMEOUT", "2.5")
    monkeypatch.setenv("MCP_LOG_FORMAT", "json")
    settings = load_settings()
    assert settings.toolsets == ("hello", "credential-demo")
    assert (settings.call_timeout, settings.log_format) == (2.5, "json")


def test_settings_come_from_a_dotenv_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MCP_PORT", raising=False)
    (tmp_path / ".env").write_text("MCP_PORT=9123\n")
    assert load_settings().port == 9123


@pytest.mark.parametrize(
    ("variable", "value", "named"),
    [
        ("MCP_PORT", "eighty", "MCP_PORT: Input should be a valid integer"),
        ("MCP_PORT", "70000", "MCP_PORT: Input should be less than or equal to 65535"),
        ("MCP_WORKERS", "0", "MCP_WORKERS: Input should be greater than or equal to 1"),
        ("MCP_CALL_TIMEOUT", "-1", "MCP_CALL_TIMEOUT: Input should be greater than 0"),
        ("MCP_LOG_FORMAT", "xml", "MCP_LOG_FORMAT: Input should be 'text' or 'json'"),
        ("MCP_STATELESS", "maybe", "MCP_STATELESS: Input should be a valid boolean"),
    ],
)
def test_a_bad_setting_is_named(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, named: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(SettingsError) as caught:
        load_settings()
    assert str(caught.value).startswith("bad setting ")
    assert named in str(caught.value)


def test_a_bad_task_store_is_named_without_its_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_TASKS_URL", "postgres://user:hunter2@db/tasks")
    with pytest.raises(SettingsError) as caught:
        load_settings()
    assert str(caught.value).startswith("bad setting MCP_TASKS_URL: ")
    assert "name memory:// (tasks kept in this process) or a Redis URL" in str(caught.value)
    assert "hunter2" not in str(caught.value)
    monkeypatch.setenv("MCP_TASKS_URL", "redis://user:hunter2@cache:6379/2")
    assert load_settings().tasks_in_memory is False


def test_serving_workers_with_tasks_in_memory_is_refused() -> None:
    @tool_metadata(task="optional")
    @tool
    def fetch_archive(name: str) -> ToolResult:
        """Fetch an archive."""
        return ToolResult(message=name)

    @tool
    def plain(name: str) -> ToolResult:
        """Name a thing."""
        return ToolResult(message=name)

    tasked = build_server([Toolset("archive", (fetch_archive, plain))], name="archive")
    untasked = build_server([Toolset("plain", (plain,))], name="plain")
    workers = ServiceSettings(workers=2)
    with pytest.raises(SettingsError) as caught:
        require_shared_tasks(tasked, workers)
    assert str(caught.value) == (
        "bad setting MCP_WORKERS: the task tools (fetch_archive) keep their tasks in "
        "memory (MCP_TASKS_URL=memory://), where only the process that ran a task can read "
        "it; to serve 2 worker processes, keep tasks on Redis "
        "(MCP_TASKS_URL=redis://host:6379/0), or serve MCP_WORKERS=1"
    )
    require_shared_tasks(untasked, workers)
    require_shared_tasks(tasked, ServiceSettings(workers=2, tasks_url="redis://cache:6379/0"))
    require_shared_tasks(tasked, ServiceSettings(workers=1))


def test_a_tool_cannot_hold_more_threads_than_there_are(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_TOOL_THREADS", "8")
    monkeypatch.setenv("MCP_TOOL_THREADS_PER_TOOL", "9")
    with pytest.raises(SettingsError) as caught:
        load_settings()
    assert str(caught.value) == (
        "bad setting MCP_TOOL_THREADS_PER_TOOL=9: a tool cannot hold more than the "
        "MCP_TOOL_THREADS=8 threads there are; set it to at most 8, or raise MCP_TOOL_THREADS"
    )
    monkeypatch.setenv("MCP_TOOL_THREADS_PER_TOOL", "8")
    assert load_settings().tool_threads_per_tool == 8


def test_binding_beyond_localhost_needs_allowed_hosts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_HOST", "0.0.0.0")
    with pytest.raises(SettingsError, match="bad setting MCP_ALLOWED_HOSTS"):
        load_settings()
    monkeypatch.setenv("MCP_ALLOWED_HOSTS", "mcp.example.com,mcp.example.com:*")
    assert load_settings().allowed_hosts == ("mcp.example.com", "mcp.example.com:*")


def test_settings_run_every_check_however_they_are_built(monkeypatch: pytest.MonkeyPatch) -> None:
    """load_settings, the model itself and its defaults run the same checks, those across
    settings included; the defaults read no environment."""
    with pytest.raises(ValidationError, match="MCP_TOOL_THREADS_PER_TOOL=9: a tool cannot"):
        ServiceSettings(tool_threads=8, tool_threads_per_tool=9)
    with pytest.raises(ValidationError, match=r"MCP_ALLOWED_HOSTS: binding to 0\.0\.0\.0 needs"):
        ServiceSettings.model_validate({"host": "0.0.0.0"})
    monkeypatch.setenv("MCP_TOOL_THREADS", "3")
    assert load_settings().tool_threads == 3
    assert ServiceSettings.defaults().tool_threads == 40


def test_bad_setting_stops_the_command_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MCP_PORT", "eighty")
    assert cli.main(["check"]) == 2
    error = capsys.readouterr().err
    assert error.startswith("error: bad setting MCP_PORT: Input should be a valid integer")
    assert "Traceback" not in error


def test_unknown_toolset_setting_is_named(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MCP_TOOLSETS", "hello,no-such-toolset")
    assert cli.main(["check"]) == 2
    assert "bad setting MCP_TOOLSETS: no toolset no-such-toolset" in capsys.readouterr().err


def test_a_setting_the_service_no_longer_reads_is_named_at_startup(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    @tool
    def plain(name: str) -> ToolResult:
        """Name a thing."""
        return ToolResult(message=name)

    monkeypatch.setenv("MCP_TASK_HEARTBEAT", "10")
    caplog.set_level(logging.WARNING, logger="mcp_runtime.serving.server")
    build_server([Toolset("plain", (plain,))], name="plain")
    assert [record.getMessage() for record in caplog.records] == [
        "MCP_TASK_HEARTBEAT is set, but the service no longer reads it (a task's process is "
        "no longer judged by a heartbeat: a running task holds a lease (MCP_TASK_LEASE), "
        "which another process takes over once it runs out): remove it"
    ]


def test_toolsets_setting_selects_what_is_served(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MCP_TOOLSETS", "hello")
    assert cli.main(["schema"]) == 0
    assert [tool["name"] for tool in json.loads(capsys.readouterr().out)["tools"]] == ["hello"]


# --- health, readiness, limits, Host checks ----------------------------------------


def test_health_and_readiness_endpoints() -> None:
    with serve_http() as url:
        base = url.removesuffix("/mcp")
        health = httpx2.get(f"{base}/healthz")
        ready = httpx2.get(f"{base}/readyz")
    assert (health.status_code, health.json()) == (200, {"status": "ok"})
    assert ready.status_code == 200
    assert ready.json()["status"] == "ready"
    assert ready.json()["tools"] >= 1


async def test_not_ready_until_the_app_has_started() -> None:
    app = build_app(build_server([Toolset("serving", (nap,))], name="serving"))
    transport = httpx2.ASGITransport(app=app)  # no lifespan: the app never starts
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        ready = await client.get("/readyz")
        health = await client.get("/healthz")
    assert (ready.status_code, ready.json()) == (503, {"status": "not ready"})
    assert health.status_code == 200


def test_oversized_request_is_refused_and_serving_goes_on() -> None:
    big_list, modern_headers = as_modern({**LIST, "padding": "x" * 5000})
    with serve_http(env={"MCP_MAX_REQUEST_BYTES": "2000"}) as url:
        big = httpx2.post(url, headers=HEADERS, content=b'{"padding": "' + b"x" * 5000 + b'"}')
        big_modern = httpx2.post(url, headers=modern_headers, json=big_list)
        ping = httpx2.post(url, headers=HEADERS, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        listed = httpx2.post(url, headers=modern_headers, json=as_modern(LIST)[0])
    too_large = {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": "Request body too large: the limit is 2000 bytes"},
    }
    assert (big.status_code, big.json()) == (413, too_large)
    assert (big_modern.status_code, big_modern.json()) == (413, too_large)
    assert ping.status_code == 200
    assert listed.status_code == 200
    assert '"hello"' in listed.text


def test_disallowed_host_header_is_refused() -> None:
    """Bound to loopback, the loopback names are allowed on any port, and without one (a
    proxy's port 80); another name is refused before any other part reads the request."""
    with serve_http() as url:
        evil = httpx2.post(url, headers={**HEADERS, "host": "evil.example.com"}, json={})
        evil_origin = httpx2.post(
            url, headers={**HEADERS, "origin": "http://evil.example.com"}, json={}
        )
        loopback = [
            httpx2.post(url, headers={**HEADERS, "host": host}, json=LIST).status_code
            for host in ("127.0.0.1", "localhost", "[::1]", "127.0.0.1:1234", "localhost:80")
        ]
    assert evil.status_code == 421
    assert "MCP_ALLOWED_HOSTS" in evil.json()["error"]["message"]
    assert evil_origin.status_code == 403
    assert loopback == [200] * 5


# --- tool calls: timeouts, logs, shutdown ------------------------------------------------


async def test_call_past_the_timeout_is_an_error_and_serving_goes_on(
    timed_server: ThreadedServer,
) -> None:
    async with connect_http(timed_server.url) as session:
        slow = await session.call_tool("nap", {"seconds": 5})
        quick = await session.call_tool("nap", {"seconds": 0})
    assert slow.is_error is True
    assert slow.structured_content is None
    assert slow.content[0].text == (  # type: ignore[union-attr]
        "Tool 'nap' did not finish within 0.5 seconds: try again later, or ask for less at once."
    )
    assert quick.structured_content == {"message": "slept 0.0"}


@pytest.mark.parametrize(
    ("seconds", "outcome"), [(0, "ok"), (5, "timeout"), ("soon", "bad_arguments")]
)
async def test_each_call_logs_one_line(
    timed_server: ThreadedServer,
    caplog: pytest.LogCaptureFixture,
    seconds: object,
    outcome: str,
) -> None:
    with caplog.at_level(logging.INFO, logger="mcp_runtime.calls"):
        async with connect_http(timed_server.url) as session:
            await session.call_tool("nap", {"seconds": seconds})
    [record] = [r for r in caplog.records if r.name == "mcp_runtime.calls"]
    assert (record.tool, record.outcome) == ("nap", outcome)  # type: ignore[attr-defined]
    assert record.getMessage().startswith(f"tool=nap outcome={outcome} duration_ms=")
    line = json.loads(JsonFormatter().format(record))
    assert set(line) == {"time", "level", "logger", "message", "tool", "outcome", "duration_ms"}


# --- connection limits: real sockets against a real serve process -------------------


def eventually(check: Callable[[], Any], what: str) -> Any:
    """The first value of ``check()`` that is not None, polling for up to WAIT_SECONDS."""
    deadline = time.monotonic() + WAIT_SECONDS
    while (value := check()) is None:
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.05)
    return value


@pytest.fixture(scope="module")
def limited() -> Iterator[RunningServer]:
    """``serve`` with a 1-second read timeout and room for 2 connections."""
    env = {"MCP_READ_TIMEOUT": "1", "MCP_MAX_CONNECTIONS": "2"}
    with run_server(SERVE, env=env) as server:
        yield server


def raw_connection(server: RunningServer) -> socket.socket:
    connection = socket.create_connection(("127.0.0.1", server.port))
    connection.settimeout(WAIT_SECONDS)
    return connection


def read_until_closed(connection: socket.socket) -> bytes:
    received = b""
    while chunk := connection.recv(65536):
        received += chunk
    return received


def post_head(server: RunningServer, length: int) -> bytes:
    return (
        f"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{server.port}\r\n"
        "content-type: application/json\r\naccept: application/json, text/event-stream\r\n"
        f"content-length: {length}\r\n\r\n"
    ).encode()


def test_a_request_head_that_comes_too_slowly_is_cut_off(limited: RunningServer) -> None:
    with raw_connection(limited) as connection:
        connection.sendall(b"POST /mcp HTT")
        assert read_until_closed(connection) == b""


def test_a_kept_alive_connection_gets_the_same_head_timeout(limited: RunningServer) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", limited.port, timeout=WAIT_SECONDS)
    with contextlib.closing(connection):
        connection.request("GET", "/healthz")
        assert connection.getresponse().read() == b'{"status": "ok"}'
        assert connection.sock is not None
        connection.sock.sendall(b"POST /mcp HTT")
        assert read_until_closed(connection.sock) == b""


def test_a_body_that_stops_arriving_is_answered_408(limited: RunningServer) -> None:
    with raw_connection(limited) as connection:
        connection.sendall(post_head(limited, 100) + b'{"jsonrpc"')
        head, _, body = read_until_closed(connection).partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408 Request Timeout\r\n")
    assert b"\r\nconnection: close" in head
    assert json.loads(body) == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": -32600,
            "message": "Request timeout: the request body stopped arriving; the limit is "
            "1 seconds between its parts",
        },
    }


def test_a_client_that_leaves_before_its_body_ends_leaves_one_info_line(
    limited: RunningServer,
) -> None:
    said = "client left before sending the whole request body"
    with raw_connection(limited) as connection:
        connection.sendall(post_head(limited, 100) + b'{"jsonrpc"')
    log = eventually(lambda: limited.log() if said in limited.log() else None, said)
    [line] = [line for line in log.splitlines() if said in line]
    assert "INFO" in line
    assert "mcp_runtime" in line
    assert "Traceback" not in log


def test_requests_beyond_the_connection_limit_are_answered_503(limited: RunningServer) -> None:
    held = [http.client.HTTPConnection("127.0.0.1", limited.port) for _ in range(2)]
    try:
        for connection in held:  # two open connections, each served
            connection.request("GET", "/healthz")
            assert connection.getresponse().read() == b'{"status": "ok"}'
        with raw_connection(limited) as third:
            third.sendall(b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
            refused = read_until_closed(third)
        held[0].request("GET", "/healthz")
        again = held[0].getresponse()
        assert (again.status, again.read()) == (200, b'{"status": "ok"}')
    finally:
        for connection in held:
            connection.close()
    assert refused.startswith(b"HTTP/1.1 503 Service Unavailable\r\n")


# --- shutdown: real signals to real processes ---------------------------------------


@contextmanager
def slow_service(folder: Path, **settings: str) -> Iterator[RunningServer]:
    """The slow test service (``tests/slow_service.py``) with these MCP_ settings."""
    with run_server(SLOW_SERVICE, env={"SLOW_SERVICE_DIR": str(folder), **settings}) as server:
        yield server


def as_modern(
    request: dict[str, Any], name: str | None = None
) -> tuple[dict[str, Any], dict[str, str]]:
    """``request`` as a client of 2026-07-28 sends it: its body and headers."""
    meta: dict[str, Any] = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body = {**request, "params": {**request.get("params", {}), "_meta": meta}}
    headers = {**HEADERS, "mcp-protocol-version": MODERN, "mcp-method": request["method"]}
    return body, headers | ({"mcp-name": name} if name is not None else {})


class HeldCalls:
    """Calls of the slow service's tools, each in a thread of its own, started and held.

    The calls numbered in ``modern`` speak 2026-07-28; the others 2025-11-25.
    """

    def __init__(
        self,
        server: RunningServer,
        folder: Path,
        tools: Sequence[str],
        modern: frozenset[int] = frozenset(),
    ) -> None:
        self.answers: dict[int, httpx2.Response] = {}
        self.threads = [
            threading.Thread(
                target=self._call, args=(server.url, number, tool, number in modern), daemon=True
            )
            for number, tool in enumerate(tools)
        ]
        for thread in self.threads:
            thread.start()
        eventually(
            lambda: len(list(folder.glob("started-*"))) == len(tools) or None, "calls started"
        )

    def _call(self, url: str, number: int, tool: str, modern: bool) -> None:
        call: dict[str, Any] = {
            "jsonrpc": "2.0",
            "id": number,
            "method": "tools/call",
            "params": {"name": tool, "arguments": {"name": str(number)}},
        }
        call, headers = as_modern(call, tool) if modern else (call, HEADERS)
        self.answers[number] = httpx2.post(url, headers=headers, json=call, timeout=60)

    def results(self) -> list[dict[str, Any]]:
        """Each call's JSON-RPC result, in order, once all have answered."""
        for thread in self.threads:
            thread.join(timeout=60)
        results = []
        for number in range(len(self.threads)):
            answer = self.answers[number]
            assert answer.status_code == 200
            if answer.headers["content-type"] == "application/json":  # 2026-07-28: one answer
                message = answer.json()
            else:
                data = [line[5:] for line in answer.text.splitlines() if line.startswith("data:")]
                assert len(data) == 1, f"call {number} answered {answer.text!r}"
                message = json.loads(data[0])
            assert message["id"] == number
            results.append(message["result"])
        return results


def readiness_response(server: RunningServer) -> httpx2.Response:
    return httpx2.get(f"{server.base_url}/readyz")


def readiness(server: RunningServer) -> tuple[int, object]:
    response = readiness_response(server)
    return response.status_code, response.json()


def refused(response: httpx2.Response) -> httpx2.Response | None:
    """``response`` if it is a 503, else None (for :func:`eventually`)."""
    return response if response.status_code == 503 else None


def released(number: int) -> dict[str, Any]:
    payload = {"message": f"released {number}"}
    return {
        "content": [{"type": "text", "text": json.dumps(payload)}],
        "structuredContent": payload,
        "isError": False,
    }


def stopped(tool: str) -> dict[str, Any]:
    message = f"Tool '{tool}' was stopped because the service is shutting down: call it again."
    return {"content": [{"type": "text", "text": message}], "isError": True}


def in_2026(result: dict[str, Any]) -> dict[str, Any]:
    """``result`` as the 2026-07-28 revision sends it: complete, naming the server."""
    server = {"io.modelcontextprotocol/serverInfo": {"name": "slow-service", "version": ""}}
    return {**result, "resultType": "complete", "_meta": server}


@pytest.mark.any_python
@pytest.mark.parametrize("workers", ["1", "2"])
def test_sigterm_drains_the_calls_in_flight_and_exits_0(tmp_path: Path, workers: str) -> None:
    # A grace far longer than the wait for the exit: the server must stop once drained.
    # Calls of both eras: the second and fourth speak 2026-07-28.
    with slow_service(tmp_path, MCP_WORKERS=workers, MCP_SHUTDOWN_GRACE="600") as server:
        tools = ["hold", "hold", "hold_thread", "hold_thread"]
        calls = HeldCalls(server, tmp_path, tools, modern=frozenset({1, 3}))
        server.process.send_signal(signal.SIGTERM)
        draining = eventually(lambda: refused(readiness_response(server)), "draining")
        listing = eventually(
            lambda: refused(httpx2.post(server.url, headers=HEADERS, json=LIST)), "refusal"
        )
        still_running = server.process.poll() is None
        (tmp_path / "release").touch()
        results = calls.results()
        status = server.process.wait(timeout=WAIT_SECONDS)
    assert draining.json() == {"status": "draining"}
    assert listing.headers["connection"] == "close"
    assert listing.json() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": -32000,
            "message": "Service unavailable: the server is shutting down; send the request again",
        },
    }
    assert still_running
    assert results == [released(0), in_2026(released(1)), released(2), in_2026(released(3))]
    assert status == 0


def test_calls_still_running_when_the_grace_ends_answer_is_error(tmp_path: Path) -> None:
    with slow_service(tmp_path, MCP_SHUTDOWN_GRACE="1") as server:
        tools = ["hold", "hold_thread", "hold", "hold_thread"]
        calls = HeldCalls(server, tmp_path, tools, modern=frozenset({2, 3}))
        server.process.send_signal(signal.SIGTERM)
        results = calls.results()
        status = server.process.wait(timeout=WAIT_SECONDS)
    assert results == [*map(stopped, tools[:2]), *map(in_2026, map(stopped, tools[2:]))]
    assert status == 0


def test_a_second_sigint_ends_the_grace(tmp_path: Path) -> None:
    with slow_service(tmp_path, MCP_SHUTDOWN_GRACE="600") as server:
        calls = HeldCalls(server, tmp_path, ["hold"])
        server.process.send_signal(signal.SIGINT)
        eventually(lambda: refused(readiness_response(server)), "draining")
        server.process.send_signal(signal.SIGINT)
        results = calls.results()
        status = server.process.wait(timeout=WAIT_SECONDS)
    assert results == [stopped("hold")]
    assert status == 0


def test_the_supervisor_lets_go_of_the_listening_socket_once_it_stops_the_workers() -> None:
    # Else the socket outlives the last worker, and a client that connects then is queued,
    # unanswered, until the supervisor exits (and dropped), not refused at once.
    settings = ServiceSettings(workers=2, port=free_port())
    config = ServingConfig(functools.partial(process_app, settings), settings)
    handlers = {number: signal.getsignal(number) for number in SUPERVISOR_SIGNALS}
    listening = config.bind_socket()
    try:
        supervisor = Supervisor(config, sockets=[listening])
        supervisor.terminate_all()  # its workers were never started: there is none to stop
    finally:
        for number, handler in handlers.items():
            signal.signal(number, handler)
    assert listening.fileno() == -1


def test_serve_exits_0_on_sigterm() -> None:
    with run_server(SERVE, env={"MCP_LOG_LEVEL": "DEBUG"}) as server:
        hello = {"name": "hello", "arguments": {"name": "Ada"}}
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": hello}
        answer = httpx2.post(server.url, headers=HEADERS, json=call)
        server.process.send_signal(signal.SIGTERM)
        status = server.process.wait(timeout=WAIT_SECONDS)
        log = server.log()
    assert answer.status_code == 200
    assert status == 0
    assert "Traceback" not in log
    # The one process serves the server it checked: the gate ran once.
    assert log.count("startup gate: the ") == 1, log


def test_a_request_on_a_connection_opened_before_shutdown_is_answered_not_dropped() -> None:
    """A client that connected before the listener closed and sends its request after
    (its request on the way as the server shuts down) is answered, 503 while the service
    drains, and its connection then closed: not closed without an answer, which its client
    cannot tell from a call that was lost."""
    with run_server(SERVE) as server:
        with socket.create_connection(("127.0.0.1", server.port), timeout=WAIT_SECONDS) as early:
            time.sleep(0.2)  # accepted, its request not sent yet
            server.process.send_signal(signal.SIGTERM)
            time.sleep(0.3)  # nothing to drain: the listener closes, the connections are shut
            body = json.dumps(
                {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "hello"}}
            ).encode()
            head = ["POST /mcp HTTP/1.1", f"host: 127.0.0.1:{server.port}"]
            head += [f"{name}: {value}" for name, value in HEADERS.items()]
            head += [f"content-length: {len(body)}", "", ""]
            early.sendall("\r\n".join(head).encode() + body)
            answer = b""
            while chunk := early.recv(65536):
                answer += chunk
        status = server.process.wait(timeout=WAIT_SECONDS)
    assert answer.startswith(b"HTTP/1.1 503 "), answer
    assert b"\r\nconnection: close\r\n" in answer.lower(), answer
    assert status == 0


def test_readiness_is_busy_while_every_tool_thread_is_taken(tmp_path: Path) -> None:
    with slow_service(tmp_path, MCP_TOOL_THREADS="1") as server:
        calls = HeldCalls(server, tmp_path, ["hold_thread"])
        busy = readiness(server)
        (tmp_path / "release").touch()
        results = calls.results()
        ready = readiness(server)
    assert busy == (503, {"status": "busy", "tool_threads": {"busy": 1, "size": 1}})
    assert results == [released(0)]
    assert ready == (200, {"status": "ready", "tools": 2})


# --- serve --reload ---------------------------------------------------------------------

RELOADED_TOOLSET = '''
from langchain_core.tools import tool

from mcp_runtime import ToolError, ToolResult


@tool
def reloaded() -> ToolResult | ToolError:
    """Answer which edit is served."""
    return ToolResult(message="{answer}")


TOOLS = [reloaded]
'''


def ready_tools(base_url: str) -> int | None:
    """How many tools ``/readyz`` says are served, or None while nothing answers."""
    try:
        answer = httpx2.get(f"{base_url}/readyz", timeout=2)
    except httpx2.HTTPError:
        return None
    return int(answer.json()["tools"]) if answer.status_code == 200 else None


def wait_for(condition: Callable[[], bool], server: RunningServer) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not condition():
        assert time.monotonic() < deadline, server.log()
        time.sleep(0.1)


async def served_answer(server: RunningServer, expected: str) -> str:
    """What the ``reloaded`` tool answers, once it answers ``expected`` (or the last answer,
    when it does not within the wait): the process that served the edit before may still
    answer while it drains."""
    deadline = time.monotonic() + WAIT_SECONDS
    answer = ""
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):  # between two processes: refused, or cut off
            async with connect_http(server.url) as session:
                result = await session.call_tool("reloaded", {})
            answer = str((result.structuredContent or {}).get("message"))
        if answer == expected:
            break
        await anyio.sleep(0.1)
    return answer


@pytest.mark.any_python
async def test_serve_reload_serves_a_new_tool_and_each_edit_of_it(tmp_path: Path) -> None:
    """A copy of the service's source, served with --reload: a new toolset module is
    served, an edit to it is served, an edit that breaks the contract is named without a
    traceback, one that cannot be imported with its traceback, each answered 503 with what
    is wrong until the fix is saved (and the service comes back with it), and SIGTERM
    stops it all."""
    import mcp_runtime

    source = Path(mcp_runtime.__path__[0]).parent
    copy = tmp_path / "src"
    shutil.copytree(source, copy, ignore=shutil.ignore_patterns("__pycache__"))
    toolsets = copy.joinpath(*find_service().toolsets_package.split("."))
    new_module = toolsets / "reload_probe.py"
    environment = {"PYTHONPATH": str(copy), "MCP_AUTH": "none"}
    with run_server([*SERVE, "--reload"], env=environment) as server:
        wait_for(lambda: ready_tools(server.base_url) is not None, server)
        before = ready_tools(server.base_url)
        assert before is not None

        new_module.write_text(RELOADED_TOOLSET.format(answer="first"))
        wait_for(lambda: ready_tools(server.base_url) == before + 1, server)
        assert await served_answer(server, "first") == "first"

        new_module.write_text(RELOADED_TOOLSET.format(answer="second"))
        assert await served_answer(server, "second") == "second"

        broken = RELOADED_TOOLSET.format(answer="third").replace(" -> ToolResult | ToolError", "")
        new_module.write_text(broken)
        wait_for(lambda: "not reloaded: " in server.log(), server)
        assert "reload-probe/reloaded: [return-annotation]" in server.log()
        assert "Save a fix: the service reloads." in server.log()
        assert "Traceback" not in server.log()
        # Until the fix, every request is answered at once, with what is wrong.
        refused = httpx2.post(server.url, headers=HEADERS, json=LIST, timeout=5)
        assert refused.status_code == 503
        message = refused.json()["error"]["message"]
        assert message.startswith("The service did not reload: 1 tool contract violation:\n")
        assert "reload-probe/reloaded: [return-annotation]" in message
        assert message.endswith("\nSave a fix: it reloads.")
        elsewhere = httpx2.post(server.url, headers={**HEADERS, "host": "evil.example"}, json=LIST)
        assert elsewhere.status_code == 421  # a page of another site reads nothing of it
        assert "reload" not in elsewhere.text

        new_module.write_text("import not_a_module_anywhere\n" + RELOADED_TOOLSET)
        wait_for(lambda: server.log().count("not reloaded: ") == 2, server)
        refused = httpx2.post(server.url, headers=HEADERS, json=LIST, timeout=5)
        assert refused.status_code == 503
        message = refused.json()["error"]["message"]
        module = f"{find_service().toolsets_package}.reload_probe"
        assert f"`{module}` cannot be imported (ModuleNotFoundError: " in message
        # The terminal shows where the import failed.
        assert "Traceback (most recent call last):" in server.log()
        assert 'reload_probe.py", line 1, in <module>' in server.log()

        new_module.write_text(RELOADED_TOOLSET.format(answer="fourth"))
        assert await served_answer(server, "fourth") == "fourth"
        assert server.log().count("reload_probe.py'. Reloading") == 5
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(timeout=WAIT_SECONDS) == 0, server.log()
        # The failed import's traceback, and no other: none after the fix, none at the end.
        assert server.log().count("Traceback (most recent call last):") == 1, server.log()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--reload", "--workers", "2"], "error: --reload serves one worker process, and "),
        (["--reload", "--transport", "stdio"], "error: --reload serves streamable HTTP: "),
    ],
)
def test_serve_reload_refuses_what_it_cannot_reload(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["serve", *args]) == 2
    assert capsys.readouterr().err.startswith(message)


@pytest.mark.any_python  # processes and ports, whatever the Python
def test_a_test_server_never_answers_from_another_process_s_port(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A port found free that another process listens on by the time the server starts
    (another test's server) is left to it: the server starts again on another port."""
    from mcp_runtime.devtools import clients

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        ports = [taken.getsockname()[1]]
        finding = clients.free_port
        monkeypatch.setattr(clients, "free_port", lambda: ports.pop() if ports else finding())
        with clients.run_server([sys.executable, "-m", "mcp_runtime", "serve"]) as server:
            assert server.port != taken.getsockname()[1]
            assert httpx2.get(f"{server.base_url}/healthz").json() == {"status": "ok"}
