"""Serving in production: settings, health and readiness, timeouts, limits, Host checks,
call logs and graceful shutdown."""

import json
import logging
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest
import uvicorn
from langchain_core.tools import tool

from mcp_runtime import ToolResult, cli
from mcp_runtime.http_app import http_app
from mcp_runtime.logs import JsonFormatter
from mcp_runtime.server import create_server
from mcp_runtime.settings import ServiceSettings, SettingsError, load_settings
from mcp_runtime.testing import connect_http, free_port, serve_http
from mcp_runtime.toolsets import Toolset

pytestmark = pytest.mark.anyio

HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


@tool
async def nap(seconds: float) -> ToolResult:
    """Sleep for a while, then answer."""
    await anyio.sleep(seconds)
    return ToolResult(message=f"slept {seconds}")


class ThreadedServer:
    """A real uvicorn server on a loopback port, in a thread, serving the ``nap`` tool."""

    def __init__(self, settings: ServiceSettings) -> None:
        server = create_server("serving", [Toolset("serving", "tests", (nap,))], settings=settings)
        self.port = free_port()
        config = uvicorn.Config(
            http_app(server),
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


def test_binding_beyond_localhost_needs_allowed_hosts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_HOST", "0.0.0.0")
    with pytest.raises(SettingsError, match="bad setting MCP_ALLOWED_HOSTS"):
        load_settings()
    monkeypatch.setenv("MCP_ALLOWED_HOSTS", "mcp.example.com,mcp.example.com:*")
    assert load_settings().allowed_hosts == ("mcp.example.com", "mcp.example.com:*")


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
        health = httpx.get(f"{base}/healthz")
        ready = httpx.get(f"{base}/readyz")
    assert (health.status_code, health.json()) == (200, {"status": "ok"})
    assert ready.status_code == 200
    assert ready.json()["status"] == "ready"
    assert ready.json()["tools"] >= 1


async def test_not_ready_until_the_app_has_started() -> None:
    app = http_app(create_server("serving", [Toolset("serving", "tests", (nap,))]))
    transport = httpx.ASGITransport(app=app)  # no lifespan: the app never starts
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        ready = await client.get("/readyz")
        health = await client.get("/healthz")
    assert (ready.status_code, ready.json()) == (503, {"status": "not ready"})
    assert health.status_code == 200


def test_oversized_request_is_refused_and_serving_goes_on() -> None:
    with serve_http(env={"MCP_MAX_REQUEST_BYTES": "2000"}) as url:
        big = httpx.post(url, headers=HEADERS, content=b'{"padding": "' + b"x" * 5000 + b'"}')
        ping = httpx.post(url, headers=HEADERS, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert big.status_code == 413
    assert big.json() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": "Request body too large: the limit is 2000 bytes"},
    }
    assert ping.status_code == 200


def test_disallowed_host_header_is_refused() -> None:
    with serve_http() as url:
        evil = httpx.post(url, headers={**HEADERS, "host": "evil.example.com"}, json={})
        evil_origin = httpx.post(
            url, headers={**HEADERS, "origin": "http://evil.example.com"}, json={}
        )
    assert evil.status_code == 421
    assert evil_origin.status_code == 403


# --- tool calls: timeouts, logs, shutdown ------------------------------------------------


async def test_call_past_the_timeout_is_an_error_and_serving_goes_on(
    timed_server: ThreadedServer,
) -> None:
    async with connect_http(timed_server.url) as session:
        slow = await session.call_tool("nap", {"seconds": 5})
        quick = await session.call_tool("nap", {"seconds": 0})
    assert slow.isError is True
    assert slow.structuredContent is None
    assert slow.content[0].text == (  # type: ignore[union-attr]
        "Tool 'nap' did not finish within 0.5 seconds: try again later, or ask for less at once."
    )
    assert quick.structuredContent == {"message": "slept 0.0"}


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


def test_shutdown_finishes_the_calls_in_flight() -> None:
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "nap", "arguments": {"seconds": 1}},
    }
    answers: list[httpx.Response] = []
    server = ThreadedServer(ServiceSettings())
    with server:
        caller = threading.Thread(
            target=lambda: answers.append(
                httpx.post(server.url, headers=HEADERS, json=call, timeout=30)
            )
        )
        caller.start()
        time.sleep(0.3)
        server.uvicorn.should_exit = True  # what SIGTERM does
        caller.join(timeout=30)
    [answer] = answers
    assert answer.status_code == 200
    data = next(line[5:] for line in answer.text.splitlines() if line.startswith("data:"))
    result = json.loads(data)["result"]
    assert result["isError"] is False
    assert result["structuredContent"] == {"message": "slept 1.0"}
