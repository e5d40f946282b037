"""Prometheus metrics at ``GET /metrics``: calls by tool and outcome, their durations, the
calls in flight; merged across worker processes; off with ``MCP_METRICS=false``."""

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from langchain_core.tools import BaseTool, StructuredTool, tool
from prometheus_client import REGISTRY, CollectorRegistry, Counter, generate_latest
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics
from prometheus_client.parser import text_string_to_metric_families

from mcp_runtime import ToolError, ToolResult
from mcp_runtime.config.settings import ServiceSettings
from mcp_runtime.contract.toolsets import Toolset
from mcp_runtime.devtools.local_issuer import LocalIssuer
from mcp_runtime.observability.metrics import (
    DURATION_BUCKETS,
    MULTIPROC_DIR,
    LocalCalls,
    SharedCalls,
)
from mcp_runtime.sdk import MCPServer
from mcp_runtime.serving.http_app import ServiceApp, build_app
from mcp_runtime.serving.server import build_server, state_of
from mcp_runtime.testing import RunningServer, connect, connect_http, run_server, serve_http

pytestmark = pytest.mark.anyio

SERVE = [sys.executable, "-m", "mcp_runtime", "serve"]
SLOW_SERVICE = [sys.executable, str(Path(__file__).with_name("slow_service.py"))]
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
WAIT_SECONDS = 30.0
CALLS = "mcp_tool_calls_total"
COUNT = "mcp_tool_call_duration_seconds_count"
BUCKET = "mcp_tool_call_duration_seconds_bucket"
CALLS_IN_FLIGHT = "mcp_tool_calls_in_flight"

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


@tool
def metered(name: str) -> ToolResult:
    """Answer at once."""
    return ToolResult(message=f"metered {name}")


@tool
def metered_refusal() -> ToolResult | ToolError:
    """Answer with a tool error."""
    return ToolError(error="not_found", detail="There is nothing here.")


def parse(text: str) -> Samples:
    """Each sample of a Prometheus text exposition, by name and labels."""
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sample ``name`` with exactly ``labels``; 0 when there is none yet."""
    return samples.get((name, frozenset(labels.items())), 0.0)


def total_calls(samples: Samples) -> float:
    return sum(number for (name, _), number in samples.items() if name == CALLS)


async def http_get(app: ServiceApp, path: str) -> httpx2.Response:
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://service") as client:
        return await client.get(path)


async def scrape(app: ServiceApp) -> Samples:
    answer = await http_get(app, "/metrics")
    assert answer.status_code == 200
    return parse(answer.text)


def served(*tools: BaseTool, settings: ServiceSettings) -> tuple[MCPServer, ServiceApp]:
    server = build_server([Toolset("metrics", tools)], name="metrics", settings=settings)
    return server, build_app(server, settings)


def eventually(check: Callable[[], Any], what: str) -> Any:
    """The first value of ``check()`` that is not None, polling for up to WAIT_SECONDS."""
    deadline = time.monotonic() + WAIT_SECONDS
    while (found := check()) is None:
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.05)
    return found


def scrape_server(server: RunningServer) -> Samples:
    """A scrape over a new connection (any worker may answer it)."""
    answer = httpx2.get(f"{server.base_url}/metrics", headers={"connection": "close"})
    assert answer.status_code == 200, answer.text
    return parse(answer.text)


def writers(folder: Path, kind: str = "counter") -> set[int]:
    """The pids of the processes that have written metric files of ``kind`` in ``folder``."""
    return {int(path.stem.rsplit("_", 1)[1]) for path in folder.glob(f"{kind}_*.db")}


# --- one process, in memory ----------------------------------------------------------


async def test_calls_are_counted_and_timed_by_tool_and_outcome() -> None:
    server, app = served(metered, metered_refusal, settings=ServiceSettings())
    before = await scrape(app)
    async with connect(server) as session:
        answers = [
            await session.call_tool("metered", {"name": "Ada"}),
            await session.call_tool("metered", {"name": "Grace"}),
            await session.call_tool("metered_refusal", {}),
            await session.call_tool("metered", {}),
        ]
    after = await scrape(app)
    assert [answer.is_error for answer in answers] == [False, False, True, True]
    series = [("metered", "ok"), ("metered_refusal", "tool_error"), ("metered", "bad_arguments")]
    for name in (CALLS, COUNT):
        deltas = [
            value(after, name, tool=tool, outcome=outcome)
            - value(before, name, tool=tool, outcome=outcome)
            for tool, outcome in series
        ]
        assert deltas == [2, 1, 1], name
    largest = {"tool": "metered", "outcome": "ok", "le": "+Inf"}
    assert value(after, BUCKET, **largest) == value(after, COUNT, tool="metered", outcome="ok")
    bounds = {dict(labels)["le"] for name, labels in after if name == BUCKET}
    assert bounds == {*(str(bound) for bound in DURATION_BUCKETS), "+Inf"}
    assert value(after, CALLS_IN_FLIGHT, tool="metered") == 0
    assert value(after, CALLS_IN_FLIGHT, tool="metered_refusal") == 0


async def test_a_running_call_is_in_flight_until_it_ends() -> None:
    started, release = anyio.Event(), anyio.Event()

    async def waiting() -> ToolResult:
        started.set()
        await release.wait()
        return ToolResult(message="done")

    metered_wait = StructuredTool.from_function(
        coroutine=waiting, name="metered_wait", description="Answer once released."
    )
    server, app = served(metered_wait, settings=ServiceSettings())
    async with connect(server) as session, anyio.create_task_group() as group:
        group.start_soon(session.call_tool, "metered_wait", {})
        await started.wait()
        running = await scrape(app)
        release.set()
    ended = await scrape(app)
    assert value(running, CALLS_IN_FLIGHT, tool="metered_wait") == 1
    assert value(ended, CALLS_IN_FLIGHT, tool="metered_wait") == 0
    assert value(ended, CALLS, tool="metered_wait", outcome="ok") == 1


async def test_metrics_off_records_nothing() -> None:
    recorded = []
    for on in (True, False):
        server, app = served(metered, settings=ServiceSettings(metrics=on))
        registry = state_of(server).metrics.registry
        async with connect(server) as session:
            await session.call_tool("metered", {"name": "Ada"})
            await session.call_tool("metered", {})
        recorded.append(total_calls(parse(generate_latest(registry).decode())))
        if not on:
            assert (await http_get(app, "/metrics")).status_code == 404
    assert recorded == [2, 0]


async def test_a_scrape_has_the_process_metrics_and_a_toolsets_own_after_the_calls() -> None:
    """The process's figures, and a metric a toolset registers in prometheus-client's
    default registry, are scraped with the call metrics, as they were in one registry."""
    widgets = Counter("team_widgets", "Widgets the team's tool made.")  # the default registry
    try:
        widgets.inc(3)
        server, app = served(metered, settings=ServiceSettings())
        async with connect(server) as session:
            await session.call_tool("metered", {"name": "Ada"})
        samples = await scrape(app)
    finally:
        REGISTRY.unregister(widgets)
    assert value(samples, "team_widgets_total") == 3
    assert value(samples, "process_cpu_seconds_total") > 0
    assert value(samples, CALLS, tool="metered", outcome="ok") == 1


METRIC_EVENTS: list[tuple[str, tuple[Any, ...]]] = [
    ("started", ("a",)),
    ("finished", ("a", "ok", 0.004)),
    ("started", ("b",)),
    ("started", ("a",)),
    ("finished", ("a", "ok", 0.005)),  # on a bucket's bound: counted in that bucket
    ("finished", ("a", "timeout", 61.0)),  # past the last bound: +Inf only
    ("finished", ("b", "tool_error", 0.3)),
    ("finished", ("c", "ok", 0.01)),  # never started here: no in-flight series
    ("started", ("d",)),
    ("finished", ("a", "ok", 0.0)),
]


def exposition(registry: CollectorRegistry, generate: Callable[[Any], bytes]) -> str:
    """What a scrape of ``registry`` reads, each ``_created`` time replaced by ``T``."""
    return re.sub(r"(_created\{[^}]*\}) \S+", r"\1 T", generate(registry).decode())


@pytest.mark.parametrize(
    "generate", [generate_latest, generate_openmetrics], ids=["text", "openmetrics"]
)
def test_one_process_exposes_what_prometheus_client_metrics_would(
    generate: Callable[[Any], bytes],
) -> None:
    local_registry, shared_registry = CollectorRegistry(), CollectorRegistry()
    local, shared = LocalCalls(), SharedCalls(registry=shared_registry)
    local_registry.register(local)
    for method, arguments in METRIC_EVENTS:
        getattr(local, method)(*arguments)
        getattr(shared, method)(*arguments)
    expected = exposition(shared_registry, generate)
    assert "mcp_tool_call_duration_seconds_created{" in expected
    assert exposition(local_registry, generate) == expected


# --- real processes -----------------------------------------------------------------


@pytest.mark.any_python
async def test_every_scrape_of_two_workers_counts_the_calls_of_both(
    task_store: dict[str, str],
) -> None:
    with run_server(SERVE, env={"MCP_WORKERS": "2", **task_store}) as server:
        line = eventually(lambda: merge_line(server.log()), "the metrics folder in the log")
        folder = Path(line)
        calls = 0
        while len(writers(folder)) < 2:
            assert calls < 400, "one worker answered every call"
            async with anyio.create_task_group() as group:
                for number in range(8):
                    group.start_soon(call_hello, server.url, number)
            calls += 8
        scrapes = [total_calls(scrape_server(server)) for _ in range(10)]
        assert folder.is_dir()
        server.process.send_signal(signal.SIGTERM)
        status = server.process.wait(timeout=WAIT_SECONDS)
    assert scrapes == [calls] * 10
    assert status == 0
    assert not folder.exists()


def merge_line(log: str) -> str | None:
    marker = "the workers' figures are merged in "
    for line in log.splitlines():
        if marker in line:
            return line.split(marker, 1)[1].strip()
    return None


async def call_hello(url: str, number: int) -> None:
    async with connect_http(url) as session:
        answer = await session.call_tool("hello", {"name": f"client {number}"})
    assert answer.is_error is False


@pytest.fixture
def held_call() -> Iterator[Callable[[str], None]]:
    threads: list[threading.Thread] = []

    def call(url: str) -> None:
        request = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "hold", "arguments": {"name": "held"}},
        }

        def post() -> None:
            with contextlib.suppress(httpx2.HTTPError):  # its worker is killed
                httpx2.post(url, headers=HEADERS, json=request, timeout=60)

        thread = threading.Thread(target=post, daemon=True)
        thread.start()
        threads.append(thread)

    yield call
    for thread in threads:
        thread.join(timeout=WAIT_SECONDS)


@pytest.mark.any_python
def test_a_worker_that_dies_leaves_the_in_flight_sum(
    tmp_path: Path, held_call: Callable[[str], None]
) -> None:
    folder = tmp_path / "metrics"
    folder.mkdir()
    stale = folder / "counter_1.db"
    stale.write_bytes(b"left by an earlier run")
    env = {"SLOW_SERVICE_DIR": str(tmp_path), "MCP_WORKERS": "2", MULTIPROC_DIR: str(folder)}
    with run_server(SLOW_SERVICE, env=env) as server:
        emptied = not stale.exists()
        held_call(server.url)
        eventually(lambda: (tmp_path / "started-held").exists() or None, "the call started")
        running = [value(scrape_server(server), CALLS_IN_FLIGHT, tool="hold") for _ in range(4)]
        [holder] = writers(folder, "gauge_livesum")
        os.kill(holder, signal.SIGKILL)
        eventually(lambda: holder not in writers(folder, "gauge_livesum") or None, "marked dead")
        after = [value(scrape_server(server), CALLS_IN_FLIGHT, tool="hold") for _ in range(4)]
    assert emptied
    assert running == [1] * 4
    assert after == [0] * 4
    assert folder.is_dir()  # the operator's folder stays


@pytest.mark.any_python
def test_a_metrics_folder_that_cannot_be_made_stops_serve(
    tmp_path: Path, task_store: dict[str, str]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    folder = blocker / "metrics"
    env = {**os.environ, "MCP_WORKERS": "2", "MCP_PORT": "0", MULTIPROC_DIR: str(folder)}
    env |= task_store
    ended = subprocess.run(SERVE, env=env, capture_output=True, text=True, timeout=WAIT_SECONDS)
    assert ended.returncode == 2
    assert ended.stderr.splitlines()[-1] == (
        f"error: bad setting {MULTIPROC_DIR}: {folder} cannot hold the workers' metric files "
        "(Not a directory), or set MCP_METRICS=false"
    )


@pytest.mark.any_python
def test_metrics_off_answers_404_and_makes_no_folder(task_store: dict[str, str]) -> None:
    env = {"MCP_METRICS": "false", "MCP_WORKERS": "2", **task_store}
    with run_server(SERVE, env=env) as server:
        eventually(lambda: "worker(s)" in server.log() or None, "the start line")
        answer = httpx2.get(f"{server.base_url}/metrics")
        server.process.send_signal(signal.SIGTERM)
        server.process.wait(timeout=WAIT_SECONDS)
        log = server.log()
    assert answer.status_code == 404
    assert answer.json() == {
        "error": "not_found",
        "detail": "metrics are off in this service (MCP_METRICS=false)",
    }
    assert merge_line(log) is None


def test_metrics_need_no_token_under_oauth(oauth_issuer: LocalIssuer) -> None:
    env = oauth_issuer.environment("https://mcp.example.com/mcp")
    with serve_http(env=env) as url:
        base = url.removesuffix("/mcp")
        unauthorized = httpx2.post(url, headers=HEADERS, json={"jsonrpc": "2.0", "id": 1})
        answer = httpx2.get(f"{base}/metrics")
    assert unauthorized.status_code == 401
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    assert "python_info" in {name for name, _ in parse(answer.text)}  # the process's own
