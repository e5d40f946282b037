"""What the contract costs: each figure is a ratio against a baseline measured in the same run.

1. Per tools/call over an in-memory MCP session (the SDK's client, JSON-RPC framed): the
   contract path (a LangChain tool through mcp_runtime's gate) against the same
   function registered natively in the SDK's MCPServer with structured output.
2. The startup gate: time per tool for 10, 100 and 1,000 generated tools, against the
   SDK's own conversion of the same functions (``Tool.from_function``, no contract).
3. Stateless streamable HTTP throughput and p50/p99 latency, in each era (a client of
   2025-11-25, and of 2026-07-28): the service's app against the SDK's MCPServer
   answering JSON (``json_response=True``) and answering SSE (its default), against
   fastmcp 4.x, each serving the same tool natively on the same mcp, and against a bare
   ASGI responder that answers a fixed body (the floor); each under uvicorn on
   loopback (fastmcp's row needs fastmcp installed: ``nox -s benchmark`` adds it).
4. The checks that keep every answer sendable (nesting depth, valid Unicode): a
   result's whole answer against the same validation and serialization without them.
5. Tracing and metrics: per call of the served tool alone, per tools/call in memory
   and over streamable HTTP, the service with metrics, tracing (the SDK's batch
   processor, an exporter that drops the spans) or both on, against the same service
   with both off.
6. Startup: the CPU time of a process that runs the command line (``contract``: import
   the whole runtime, build the server, exit) against the same process with the cyclic
   collector left running during the imports and over what they built, and against it
   with the collector paused during the imports but left to walk what they built.
7. Tasks, over streamable HTTP as a client of 2026-07-28 sends them: a call of a task
   tool made a task and polled to its result, against a plain call of the same tool,
   with tasks kept in memory and on Redis (a ``redis-server`` the script starts); and a
   plain call of a tool of a service that serves task tools, against the same call of
   a service that serves none (in memory, and over HTTP); and 200 task creations sent at
   once through two processes of the service on one Redis, against 200 plain calls of
   the same tool sent the same way (p50 and p99 of each, and the ratio of the p99s).
8. Large results, over streamable HTTP as a client of 2025-11-25 sends them: 1, 5, 20
   and 100 MB of text answered inline, against kept for the caller and linked, then
   read whole (``resources/read``) or downloaded (``GET /data/<id>``): the time of each,
   and the peak memory the serving process added to answer it (its RSS high-water mark,
   reset before each), each against inline's.
9. Instructions per call, counted (only when named: ``--sections 9``; it needs valgrind):
   the floor, the SDK's MCPServer answering JSON and the service, each under uvicorn in a
   process of its own under valgrind's cachegrind, in each era: the instructions of 240
   calls less those of 40, over 200. A count, not a time: it moves by under 1% from run
   to run where the throughput rows move by 5 to 10%, though a count weighs every
   instruction alike (the throughput rows are the figures that count).

10. The app alone, each server's, driven over ASGI in one process (no HTTP server, no
   socket), as a client of each era: 3,000 ``tools/call`` POSTs a round, one after
   another, each followed by one turn of the event loop as a server gives it; the
   service's time a call against the SDK's MCPServer answering JSON, medians of rounds.
   The part of a call that is the app's own, without the HTTP server's.
11. Data at scale (only when named: ``--sections 11``; ``--big`` adds 10 GiB), the service
   on one core, its ledger on Redis, medians of interleaved rounds (one of 10 GiB), the
   peak memory and Redis's growth the most of them: keeping a file of 1 GiB (and 10 GiB) on the
   directory store, from the file's path and from an async iterator, against a copy of
   the same file (``shutil.copyfile``, then ``fsync``), and downloading it
   (``GET /data/<id>``) against Starlette's ``FileResponse`` of the same file, each as a
   ratio to its floor, with the service's peak memory growth and Redis's memory growth;
   20 downloads of 1 GiB at once against 20 ``FileResponse`` downloads; and 1 GiB on the
   S3 store of moto's server (when moto is installed) against a plain upload to that
   server and a read of it by the same ranges. ``BENCHMARK_DATA_DIR`` names the disk
   folder to use (a temporary one otherwise: mind a ``/tmp`` held in memory).
12. Tasks told, not polled: in one process, with tasks in memory and on Redis (a
   ``redis-server`` the script starts), the engine's default poll interval (1 s): how long
   after its task's end a waiting ``tasks/result`` has the result, told of the end,
   against the wait as the engine polled before (a read, with its Docket state, backing
   off to the poll interval); a cancel of a running task in one round trip and a wait for
   its run to stop, against the five steps before (a read, the end, Docket's cancel, its
   state polled, a read); and a list and a count of 100 tasks of one caller in one round
   trip, against reading them one after another.

Run it in a rendered service's environment (``nox -s benchmark`` does):

    uv run --project SERVICE python benchmarks/contract_cost.py [--quick]
"""

import argparse
import asyncio
import base64
import concurrent.futures
import contextlib
import importlib.util
import json
import logging
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import types
from collections.abc import Awaitable, Callable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any, NotRequired
from urllib.parse import urlsplit

import httpx2
import jsonschema
import uvicorn
from langchain_core.tools import StructuredTool, tool
from mcp.client import Client
from mcp.types import CallToolResult, TextContent
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from typing_extensions import TypedDict

from mcp_runtime import ToolError, ToolResult, to_mcp_tool, tool_metadata
from mcp_runtime.config.settings import ServiceSettings
from mcp_runtime.contract.toolsets import Toolset
from mcp_runtime.devtools.local_issuer import LocalIssuer
from mcp_runtime.execution.state import ServiceState
from mcp_runtime.observability.tracing import use_tracer_provider
from mcp_runtime.sdk import MCPServer, served_tools
from mcp_runtime.sdk.tools import SDKTool
from mcp_runtime.serving.http_app import build_app
from mcp_runtime.serving.server import build_server, state_of
from mcp_runtime.testing import free_port

GREETING = {"message": "Hello, Ada!", "greeting": "Hello, Ada!"}


class HelloResult(ToolResult):
    """A greeting."""

    greeting: NotRequired[str]


def greet(name: str) -> HelloResult:
    """Greet a person by name."""
    return HelloResult(message=f"Hello, {name}!", greeting=f"Hello, {name}!")


async def greet_async(name: str) -> HelloResult:
    """Greet a person by name."""
    return greet(name)


def greet_or_fail(name: str) -> HelloResult | ToolError:
    """Greet a person by name."""
    return greet(name)


def native_server(function: Callable[..., Any]) -> MCPServer:
    """The baseline: the tool registered natively, with MCPServer's structured output.

    Annotated ``-> HelloResult``, as the SDK would wrap a union in ``{"result": ...}``.
    """
    server = MCPServer("native")
    server.add_tool(function, name="hello", structured_output=True)
    return server


def contract_server(function: Callable[..., Any]) -> MCPServer:
    """The contract path: the same function as a LangChain tool, through the runtime."""
    return build_server([Toolset("hello", (tool("hello")(function),))], name="contract")


async def per_call(server: MCPServer, calls: int) -> list[float]:
    timings = []
    async with Client(server, mode="legacy", cache=None) as session:
        for _ in range(50):  # warm up
            await session.call_tool("hello", {"name": "Ada"})
        for _ in range(calls):
            started = time.perf_counter()
            result = await session.call_tool("hello", {"name": "Ada"})
            timings.append(time.perf_counter() - started)
            assert result.structured_content == GREETING
    return timings


async def direct_calls(served: SDKTool, calls: int) -> list[float]:
    """Each call's time of the served tool's ``run``, without a session or transport."""
    timings = []
    for _ in range(50):  # warm up
        await served.run({"name": "Ada"})
    for _ in range(calls):
        started = time.perf_counter()
        result = await served.run({"name": "Ada"})
        timings.append(time.perf_counter() - started)
        assert result.structured_content == GREETING
    return timings


def generated_tools(count: int) -> list[StructuredTool]:
    tools = []
    for number in range(count):
        annotations = {f"value_{number}": NotRequired[int], "label": NotRequired[str]}
        result = types.new_class(
            f"Result{number}",
            (ToolResult,),
            {},
            lambda namespace, a=annotations: namespace.update({"__annotations__": a}),
        )

        def function(query: str) -> Any:
            return {"message": query}

        function.__annotations__["return"] = result | ToolError
        tools.append(
            StructuredTool.from_function(
                function, name=f"tool_{number}", description="A generated tool."
            )
        )
    return tools


def sdk_conversion(generated: StructuredTool) -> object:
    """The SDK's own conversion of the tool's function: its tool, with structured output."""
    assert generated.func is not None
    return SDKTool.from_function(
        generated.func, name=generated.name, description=generated.description
    )


def gate_per_tool(count: int, convert: Callable[[StructuredTool], object]) -> float:
    """Median seconds per tool to ``convert`` ``count`` fresh tools (3 rounds)."""
    timings = []
    for _ in range(3):
        tools = generated_tools(count)
        started = time.perf_counter()
        for generated in tools:
            convert(generated)
        timings.append((time.perf_counter() - started) / count)
    return statistics.median(timings)


SERVER_CORES = {0}
CALLER_CORES = {1}


def http_targets() -> dict[str, tuple[str, str | None]]:
    """Each server of the HTTP rows: its factory in ``http_targets.py``, and ``oauth``
    when it verifies bearer tokens. fastmcp's row only when fastmcp is installed."""
    targets: dict[str, tuple[str, str | None]] = {
        "bare ASGI responder": ("bare", None),
        "SDK MCPServer, JSON": ("sdk_json", None),
        "SDK MCPServer, SSE": ("sdk_sse", None),
    }
    if importlib.util.find_spec("fastmcp") is not None:
        targets["fastmcp 4.x"] = ("fastmcp", None)
    targets["service"] = ("service", None)
    targets["service, OAuth"] = ("service", "oauth")
    return targets


@contextlib.contextmanager
def on_cores(cores: set[int]) -> Iterator[None]:
    """Within the block, this process runs on ``cores`` only (where the system allows)."""
    if not hasattr(os, "sched_setaffinity") or not cores <= os.sched_getaffinity(0):
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cores)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


class ServedProcess:
    """``http_targets.FACTORY`` under uvicorn in a process of its own, on one core."""

    last_pid: int | None = None  # the process of the last one started
    pids: dict[str, int] = {}  # noqa: RUF012 - each one started, by its URL

    def __init__(self, factory: str, env: dict[str, str]) -> None:
        self.port = free_port()
        self.command = [
            *(sys.executable, "-m", "uvicorn", "--factory", f"http_targets:{factory}"),
            *("--app-dir", str(Path(__file__).parent), "--host", "127.0.0.1"),
            *("--port", str(self.port), "--log-level", "error", "--no-access-log"),
        ]
        self.env = {**os.environ, **env}
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> str:
        cores = SERVER_CORES if os.sched_getaffinity(0) >= SERVER_CORES else None
        self.process = subprocess.Popen(
            self.command,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=(lambda: os.sched_setaffinity(0, cores)) if cores else None,
        )
        ServedProcess.last_pid = self.process.pid
        deadline = time.monotonic() + 60
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    break
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{self.command} did not start") from None
                time.sleep(0.05)
        url = f"http://127.0.0.1:{self.port}/mcp"
        ServedProcess.pids[url] = self.process.pid
        return url

    def __exit__(self, *exc: object) -> None:
        assert self.process is not None
        self.process.terminate()
        self.process.wait(timeout=30)


class Served:
    """An ASGI app under uvicorn on a free loopback port, in a thread."""

    def __init__(self, app: Any) -> None:
        self.port = free_port()
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="error")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        while not self.server.started:
            time.sleep(0.01)
        return f"http://127.0.0.1:{self.port}/mcp"

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join()


MODERN = "2026-07-28"


def hello_request(url: str, token: str | None, era: str) -> bytes:
    """A ``tools/call`` of ``hello`` to ``url``, as a client of ``era`` sends it over
    HTTP/1.1, with ``token`` as its bearer token if one is given."""
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    params: dict[str, Any] = {"name": "hello", "arguments": {"name": "Ada"}}
    if era == MODERN:
        headers |= {"mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": "hello"}
        params["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
        }
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
    address = urlsplit(url)
    head = f"POST {address.path} HTTP/1.1\r\nhost: {address.netloc}\r\n" + "".join(
        f"{name}: {value}\r\n" for name, value in headers.items()
    )
    return f"{head}content-length: {len(body)}\r\n\r\n{body}".encode()


async def load(
    url: str, seconds: float, concurrency: int, token: str | None = None, era: str = "2025-11-25"
) -> tuple[float, list[float]]:
    """Calls per second and each call's latency, with ``concurrency`` callers for ``seconds``.

    Each request sends ``token`` as its bearer token, if one is given, and is sent as a
    client of ``era`` sends it.
    """
    address = urlsplit(url)
    request = hello_request(url, token, era)
    latencies: list[float] = []
    deadline = time.perf_counter() + seconds

    async def caller() -> None:
        connection: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        while time.perf_counter() < deadline:
            if connection is None:
                connection = await asyncio.open_connection(address.hostname, address.port)
            reader, writer = connection
            started = time.perf_counter()
            writer.write(request)
            status, answer, keep_alive = await read_response(reader)
            latencies.append(time.perf_counter() - started)
            assert status == 200, (status, answer[:300])
            assert b"Hello, Ada!" in answer, answer[:300]
            if not keep_alive:
                writer.close()
                connection = None
        if connection is not None:
            connection[1].close()

    started = time.perf_counter()
    await asyncio.gather(*(caller() for _ in range(concurrency)))
    elapsed = time.perf_counter() - started
    return len(latencies) / elapsed, latencies


async def read_response(reader: asyncio.StreamReader) -> tuple[int, bytes, bool]:
    """One HTTP/1.1 response: its status, its body (whole, or its chunks joined), and
    whether the connection stays open. The load's own client: a general one (httpx2)
    costs more than the fastest servers here, and would measure itself."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    fields = {}
    for line in lines[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            fields[name.strip().lower()] = value.strip().lower()
    if "content-length" in fields:
        answer = await reader.readexactly(int(fields["content-length"]))
    else:  # chunked
        chunks = []
        while True:
            size = int((await reader.readuntil(b"\r\n")).strip().split(b";")[0], 16)
            chunks.append(await reader.readexactly(size + 2))
            if size == 0:
                break
        answer = b"".join(chunk[:-2] for chunk in chunks)
    return status, answer, fields.get("connection") != "close"


class Row(TypedDict):
    """One row of a table."""

    name: str
    score: int


class TableResult(ToolResult):
    """Rows of a table."""

    rows: NotRequired[list[Row]]


class FreeResult(ToolResult):
    """Rows of free-form values, whose depth only the value itself tells."""

    rows: NotRequired[list[dict[str, Any]]]


def answer_checks(function: Callable[[], Any], rows: int, calls: int) -> tuple[float, float]:
    """Seconds per answer of a ``rows``-row result: without the checks, and with them."""
    contract = to_mcp_tool(tool("table")(function)).contract
    value = {"message": "m", "rows": [{"name": f"row {n}", "score": n} for n in range(rows)]}

    def unchecked() -> None:  # the same answer, built without the checks
        payload = contract.result.dump_python(
            contract.result.validate_python(value, strict=True), mode="json"
        )
        text = json.dumps(payload, ensure_ascii=False, allow_nan=False)
        CallToolResult(
            content=[TextContent(type="text", text=text)], structuredContent=payload, isError=False
        )

    def checked() -> None:
        assert contract.to_call_result(value).structured_content is not None

    timings: list[list[float]] = [[], []]
    for _ in range(5):
        for index, run in enumerate((unchecked, checked)):
            started = time.perf_counter()
            for _ in range(calls):
                run()
            timings[index].append((time.perf_counter() - started) / calls)
    return statistics.median(timings[0]), statistics.median(timings[1])


def table() -> TableResult:
    """Return a table."""
    return TableResult(message="m")


def free_table() -> FreeResult:
    """Return a table of free-form rows."""
    return FreeResult(message="m")


class DroppingExporter(SpanExporter):
    """An exporter that drops the spans: the cost measured is the service's, not a network's."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


def observed(
    run: Callable[[], Awaitable[Any]],
    state: ServiceState,
    *,
    metrics: bool,
    tracing: TracerProvider | None,
) -> Callable[[], Awaitable[Any]]:
    """``run`` with the metrics (of ``state``) and tracing of tool calls on or off, as asked."""

    async def observing() -> Any:
        state.metrics.enabled = metrics
        try:
            if tracing is None:
                return await run()
            with use_tracer_provider(tracing):
                return await run()
        finally:
            state.metrics.enabled = True

    return observing


# The same command line with the runtime's collector settings undone: the baseline of 6.
COLLECTING = (
    "import gc, runpy; gc.disable = gc.freeze = lambda: None; "
    "runpy.run_module('mcp_runtime', run_name='__main__')"
)
# The same with the collector paused while the runtime imports, but what the import built
# left for the collector to walk (not moved to its oldest generation): the second baseline.
WALKED = (
    "import gc, runpy; freeze = gc.freeze; gc.freeze = gc.unfreeze = lambda: None; "
    "import mcp_runtime; gc.freeze = freeze; "
    "runpy.run_module('mcp_runtime', run_name='__main__')"
)


def startup_cpu(rounds: int) -> tuple[float, float, float]:
    """Median CPU seconds of ``python -m mcp_runtime contract``: as shipped, collecting,
    and with what the import built walked."""
    shipped: list[float] = []
    collecting: list[float] = []
    walked: list[float] = []
    variants = (
        (["-m", "mcp_runtime"], shipped),
        (["-c", COLLECTING], collecting),
        (["-c", WALKED], walked),
    )
    for _ in range(rounds):
        for command, times in variants:
            before = os.times()
            subprocess.run([sys.executable, *command, "contract"], capture_output=True, check=True)
            after = os.times()
            user = after.children_user - before.children_user
            times.append(user + after.children_system - before.children_system)
    return statistics.median(shipped), statistics.median(collecting), statistics.median(walked)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def interleaved(rounds: int, *runs: Callable[[], Awaitable[Any]]) -> list[list[Any]]:
    """Run each measurement ``rounds`` times, alternating, so drift hits both alike."""
    results: list[list[Any]] = [[] for _ in runs]
    for _ in range(rounds):
        for index, run in enumerate(runs):
            results[index].append(asyncio.run(run()))
    return results


def section_1(calls: int, rounds: int, seconds: float) -> None:
    print("1. per tools/call over an in-memory session, median of medians")
    variants = {
        "async tool": (greet_async, greet_async),
        "sync tool": (greet, greet),
        "sync, XResult | ToolError": (greet, greet_or_fail),
    }
    for label, (native_function, contract_function) in variants.items():
        native, contract = interleaved(
            rounds,
            lambda f=native_function: per_call(native_server(f), calls),
            lambda f=contract_function: per_call(contract_server(f), calls),
        )
        native_us = statistics.median(statistics.median(run) for run in native) * 1e6
        contract_us = statistics.median(statistics.median(run) for run in contract) * 1e6
        print(
            f"   {label:26s} native {native_us:7.1f} us   contract {contract_us:7.1f} us"
            f"   ratio {contract_us / native_us:.3f}"
        )

    print("   of which the client's own check (jsonschema.validate, as the Python SDK runs it)")
    for label, function in (("XResult", greet), ("XResult | ToolError", greet_or_fail)):
        schema = to_mcp_tool(tool("hello")(function)).output_schema
        payload = greet("Ada")
        started = time.perf_counter()
        for _ in range(calls):
            jsonschema.validate(payload, schema)
        print(f"   {label:26s} {(time.perf_counter() - started) / calls * 1e6:7.1f} us")


def section_2(calls: int, rounds: int, seconds: float) -> None:
    print("2. startup gate, time per tool, against the SDK's own conversion (no contract)")
    for count in (10, 100, 1000):
        gate, sdk = gate_per_tool(count, to_mcp_tool), gate_per_tool(count, sdk_conversion)
        print(
            f"   {count:5d} tools: gate {gate * 1e3:.3f} ms per tool"
            f"   SDK Tool.from_function {sdk * 1e3:.3f} ms   ratio {gate / sdk:.3f}"
        )


# Per era: the service's throughput at least this many times the SDK's MCPServer answering
# JSON, and at least this fraction of the bare ASGI responder's (the floor).
HTTP_TARGETS = {"2025-11-25": (2.5, 0.25), MODERN: (1.5, 0.40)}


def section_3(calls: int, rounds: int, seconds: float) -> None:
    print(
        f"3. streamable HTTP, 8 concurrent callers, {seconds:g} s per run, {rounds} runs; "
        "each server a process of its own on one core, the callers on another"
    )
    targets = http_targets()
    with LocalIssuer() as issuer, contextlib.ExitStack() as servers:
        oauth = {
            "MCP_AUTH": "oauth",
            "MCP_OAUTH_ISSUER": issuer.issuer,
            "MCP_OAUTH_JWKS_URL": issuer.jwks_url,
            "MCP_RESOURCE_URL": "http://127.0.0.1/mcp",  # the tokens' audience
        }
        token = issuer.token(audience=oauth["MCP_RESOURCE_URL"], expires_in=3600)
        urls: dict[str, tuple[str, str | None]] = {}
        for label, (factory, env) in targets.items():
            environment = oauth if env == "oauth" else {"MCP_AUTH": "none"}
            url = servers.enter_context(ServedProcess(factory, environment))
            urls[label] = (url, token if env == "oauth" else None)
        with on_cores(CALLER_CORES):
            for era in ("2025-11-25", MODERN):
                print(f"   a client of {era}:")
                runs = interleaved(
                    rounds,
                    *(partial(load, url, seconds, 8, key, era) for url, key in urls.values()),
                )
                era_rates: dict[str, float] = {}
                tails: dict[str, float] = {}
                for label, label_runs in zip(urls, runs, strict=True):
                    era_rates[label] = statistics.median(rate for rate, _ in label_runs)
                    latencies = [latency for _, run in label_runs for latency in run]
                    p50 = percentile(latencies, 0.5) * 1e3
                    p99 = percentile(latencies, 0.99) * 1e3
                    tails[label] = p99 / p50
                    print(
                        f"     {label:20s} {era_rates[label]:8.1f} calls/s"
                        f"   p50 {p50:6.2f} ms   p99 {p99:6.2f} ms   p99/p50 {p99 / p50:5.2f}"
                    )
                service_rate = era_rates["service"]
                for baseline in ("SDK MCPServer, JSON", "SDK MCPServer, SSE", "fastmcp 4.x"):
                    if baseline in era_rates:
                        ratio = service_rate / era_rates[baseline]
                        print(f"     service / {baseline} throughput = {ratio:.3f}")
                fraction = service_rate / era_rates["bare ASGI responder"]
                print(f"     service / bare ASGI responder throughput = {fraction:.3f}")
                oauth = era_rates["service, OAuth"] / service_rate
                print(f"     service with OAuth / service without throughput = {oauth:.3f}")
                over_sdk, of_floor = HTTP_TARGETS[era]
                targets = {
                    f"service >= {over_sdk}x SDK MCPServer, JSON": service_rate
                    >= over_sdk * era_rates["SDK MCPServer, JSON"],
                    f"service >= {of_floor:.0%} of the floor": fraction >= of_floor,
                    "service with OAuth >= 0.9x without": oauth >= 0.9,
                    "service p99 <= 2x p50, with and without OAuth": max(
                        tails["service"], tails["service, OAuth"]
                    )
                    <= 2,
                }
                for target, met in targets.items():
                    print(f"     target: {target}: {'met' if met else 'MISSED'}")


def section_4(calls: int, rounds: int, seconds: float) -> None:
    print("4. per answer: building it without and with the checks (depth, Unicode)")
    for label, function in (("typed rows", table), ("free-form rows", free_table)):
        for rows in (1, 100, 10_000):
            unchecked, checked = answer_checks(function, rows, max(1, calls // max(1, rows // 10)))
            print(
                f"   {label:14s} {rows:6d}: without {unchecked * 1e6:9.1f} us"
                f"   with {checked * 1e6:9.1f} us   ratio {checked / unchecked:.3f}"
            )


def section_5(calls: int, rounds: int, seconds: float) -> None:
    print("5. tracing and metrics, against the same service with both off")
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(DroppingExporter()))
    modes: dict[str, tuple[bool, TracerProvider | None]] = {
        "off": (False, None),
        "metrics": (True, None),
        "tracing": (False, provider),
        "both": (True, provider),
    }
    server = contract_server(greet_async)
    [served] = served_tools(server)
    measured_runs = {
        "the served tool, called directly": lambda: direct_calls(served, calls * 5),
        "in memory": lambda: per_call(server, calls),
    }
    for where, measure in measured_runs.items():
        runs = interleaved(
            rounds,
            *(
                observed(measure, state_of(server), metrics=metrics, tracing=tracing)
                for metrics, tracing in modes.values()
            ),
        )
        medians = {
            label: statistics.median(statistics.median(run) for run in mode_runs) * 1e6
            for label, mode_runs in zip(modes, runs, strict=True)
        }
        print(f"   {where}:")
        for label, median in medians.items():
            print(
                f"     {label:8s} {median:8.1f} us per call   ratio {median / medians['off']:.3f}"
            )
    settings = ServiceSettings(stateless=True, auth="none")
    toolset = Toolset("hello", (tool("hello")(greet_async),))
    observed_server = build_server([toolset], name="contract", settings=settings)
    state = state_of(observed_server)
    with Served(build_app(observed_server, settings)) as url:
        rates = interleaved(
            rounds,
            observed(lambda: load(url, seconds, 8), state, metrics=False, tracing=None),
            observed(lambda: load(url, seconds, 8), state, metrics=True, tracing=provider),
        )
    off_rate, both_rate = (statistics.median(rate for rate, _ in mode) for mode in rates)
    print(
        f"   HTTP: off {off_rate:8.1f} calls/s   both {both_rate:8.1f} calls/s"
        f"   cost ratio (off / both throughput) {off_rate / both_rate:.3f}"
    )
    provider.shutdown()


def section_6(calls: int, rounds: int, seconds: float) -> None:
    print("6. startup: CPU of `python -m mcp_runtime contract`, against the collector running")
    shipped, collecting, walked = startup_cpu(rounds * 2)
    print(
        f"   as shipped {shipped:6.3f} s   collecting {collecting:6.3f} s"
        f"   ratio {shipped / collecting:.3f}"
    )
    print(
        f"   as shipped {shipped:6.3f} s   import walked {walked:6.3f} s"
        f"   ratio {shipped / walked:.3f}"
    )


TASKS = "io.modelcontextprotocol/tasks"


@tool_metadata(task="optional")
@tool
async def long_hello(name: str) -> HelloResult:
    """Greet a person by name, as a task when the client asks."""
    return greet(name)


def modern_body(method: str, params: dict[str, Any], tasks: bool) -> dict[str, Any]:
    capabilities: dict[str, Any] = {"extensions": {TASKS: {}}} if tasks else {}
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    }
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params | {"_meta": meta}}


async def task_calls(url: str, calls: int, as_task: bool) -> list[float]:
    """Each call's time of ``long_hello``: plain, or as a task polled (at once, then every
    millisecond) until its result."""
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    headers |= {"mcp-protocol-version": MODERN}
    call = {"name": "long_hello", "arguments": {"name": "Ada"}}
    timings = []
    async with httpx2.AsyncClient(timeout=30) as client:
        for number in range(calls + 20):
            started = time.perf_counter()
            sent = headers | {"mcp-method": "tools/call", "mcp-name": "long_hello"}
            answer = (
                await client.post(url, json=modern_body("tools/call", call, as_task), headers=sent)
            ).json()
            result = answer["result"]
            if as_task:
                task = {"taskId": result["taskId"]}
                polled = headers | {"mcp-method": "tasks/get"}
                while result.get("status") != "completed":
                    if result.get("resultType") == "complete":
                        await asyncio.sleep(0.001)
                    got = await client.post(
                        url, json=modern_body("tasks/get", task, True), headers=polled
                    )
                    result = got.json()["result"]
                result = result["result"]
            if number >= 20:  # the first ones warm up
                timings.append(time.perf_counter() - started)
            assert result["structuredContent"] == GREETING, result
    return timings


@contextlib.contextmanager
def redis_server() -> Iterator[str | None]:
    """A ``redis-server`` of the script's own on a free port; None when none is installed."""
    found = shutil.which("redis-server")
    if found is None:
        yield None
        return
    port = free_port()
    command = [
        found,
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
    ]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("redis-server did not start") from None
                time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(timeout=10)


async def burst(urls: Sequence[str], count: int, as_task: bool) -> list[float]:
    """Each answer's time of ``count`` calls sent at once, each on a connection of its own,
    spread over ``urls``: of ``long_hello`` made a task (its creation), or of ``hello``."""
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    name = "long_hello" if as_task else "hello"
    headers |= {"mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": name}
    body = modern_body("tools/call", {"name": name, "arguments": {"name": "Ada"}}, as_task)
    limits = httpx2.Limits(max_connections=count, max_keepalive_connections=0)
    async with httpx2.AsyncClient(timeout=60, limits=limits) as client:

        async def one(number: int) -> float:
            started = time.perf_counter()
            answer = await client.post(urls[number % len(urls)], json=body, headers=headers)
            result = answer.json()["result"]
            assert ("taskId" in result) if as_task else result["isError"] is False, result
            return time.perf_counter() - started

        return list(await asyncio.gather(*(one(number) for number in range(count))))


def section_7(calls: int, rounds: int, seconds: float) -> None:
    print("7. tasks: a task polled to its result against a plain call of the same tool")
    key = base64.urlsafe_b64encode(os.urandom(32)).decode()
    with redis_server() as redis_url:
        if redis_url is not None:
            env = {
                "MCP_AUTH": "none",
                "MCP_TASKS_URL": redis_url,
                "MCP_TASK_KEYS": key,
                "MCP_MAX_TASKS_PER_CALLER": "100000",
                "MCP_LOG_LEVEL": "WARNING",
            }
            with (
                ServedProcess("service_with_tasks", env) as first,
                ServedProcess("service_with_tasks", env) as second,
            ):
                plain, tasked = interleaved(
                    rounds,
                    lambda: burst([first, second], 200, as_task=False),
                    lambda: burst([first, second], 200, as_task=True),
                )
            shown = {}
            for label, runs in (("plain", plain), ("task", tasked)):
                shown[label] = [
                    statistics.median(percentile(run, share) for run in runs) * 1e3
                    for share in (0.5, 0.99)
                ]
            print(
                "   200 at once through two processes on Redis: plain calls p50 "
                f"{shown['plain'][0]:7.1f} ms p99 {shown['plain'][1]:7.1f} ms   task creations "
                f"p50 {shown['task'][0]:7.1f} ms p99 {shown['task'][1]:7.1f} ms   "
                f"p99 ratio {shown['task'][1] / shown['plain'][1]:.2f}"
            )
        for store, url in (("memory://", "memory://"), ("Redis", redis_url)):
            if url is None:
                print(f"   {store:10s} not measured: redis-server is not installed")
                continue
            settings = ServiceSettings(
                stateless=True,
                auth="none",
                tasks_url=url,
                task_keys=key,  # type: ignore[arg-type]
            )
            toolset = Toolset("hello", (long_hello,))
            server = build_server([toolset], name="tasks", settings=settings)
            with Served(build_app(server, settings)) as served_url:
                plain, tasked = interleaved(
                    rounds,
                    lambda u=served_url: task_calls(u, calls // 4, as_task=False),
                    lambda u=served_url: task_calls(u, calls // 4, as_task=True),
                )
            plain_us = statistics.median(statistics.median(run) for run in plain) * 1e6
            task_us = statistics.median(statistics.median(run) for run in tasked) * 1e6
            print(
                f"   {store:10s} plain call {plain_us:8.1f} us   task to its result "
                f"{task_us:8.1f} us   ratio {task_us / plain_us:.2f}"
            )
    print("   a plain call of a service that serves task tools, against one that serves none")
    settings = ServiceSettings(stateless=True, auth="none")
    plain_toolset = Toolset("hello", (tool("hello")(greet_async),))
    with_tasks = build_server(
        [plain_toolset, Toolset("long", (long_hello,))], name="t", settings=settings
    )
    without = build_server([plain_toolset], name="t", settings=settings)
    with_runs, without_runs = interleaved(
        rounds, lambda: per_call(with_tasks, calls), lambda: per_call(without, calls)
    )
    with_us = statistics.median(statistics.median(run) for run in with_runs) * 1e6
    without_us = statistics.median(statistics.median(run) for run in without_runs) * 1e6
    print(
        f"   in memory  without {without_us:7.1f} us   with {with_us:7.1f} us"
        f"   ratio {with_us / without_us:.3f}"
    )
    with (
        Served(build_app(with_tasks, settings)) as with_url,
        Served(build_app(without, settings)) as without_url,
    ):
        rates = interleaved(
            rounds,
            lambda: load(with_url, seconds, 8, era=MODERN),
            lambda: load(without_url, seconds, 8, era=MODERN),
        )
    with_rate, without_rate = (statistics.median(rate for rate, _ in runs) for runs in rates)
    print(
        f"   HTTP       without {without_rate:8.1f} calls/s   with {with_rate:8.1f} calls/s"
        f"   cost ratio (without / with throughput) {without_rate / with_rate:.3f}"
    )


def peak_reset(pid: int) -> int:
    """Reset the high-water mark of ``pid``'s resident memory; its resident bytes now."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")
    return resident(pid, "VmRSS")


def resident(pid: int, field: str) -> int:
    """``pid``'s ``VmRSS`` or ``VmHWM`` (its peak), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) * 1024
    raise LookupError(field)


def rpc_body(method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}


LEGACY_HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2025-11-25",
}


def large_result(url: str, pid: int, megabytes: int, way: str) -> tuple[float, int]:
    """One large result the ``way`` asked (``inline``, ``read``, ``download``): its seconds,
    and the bytes the serving process's peak memory rose above its memory before it."""
    client = httpx2.Client(timeout=300)
    before = peak_reset(pid)
    started = time.perf_counter()
    tool = "inline" if way == "inline" else "linked"
    params = {"name": tool, "arguments": {"megabytes": megabytes}}
    answer = client.post(url, json=rpc_body("tools/call", params), headers=LEGACY_HEADERS)
    result = answer.json()["result"]
    if way == "inline":
        size = len(result["structuredContent"]["data"])
    elif way == "read":
        uri = result["structuredContent"]["file"]["uri"]
        body = rpc_body("resources/read", {"uri": uri})
        read = client.post(url, json=body, headers=LEGACY_HEADERS)
        size = len(read.json()["result"]["contents"][0]["text"])
    else:
        download = result["structuredContent"]["file"]["download"]
        with client.stream("GET", url.removesuffix("/mcp") + download) as got:
            size = sum(len(piece) for piece in got.iter_bytes())
    seconds = time.perf_counter() - started
    client.close()
    if size != megabytes * 1_000_000:
        raise RuntimeError(f"{way} of {megabytes} MB answered {size} bytes")
    return seconds, resident(pid, "VmHWM") - before


def section_8(calls: int, rounds: int, seconds: float) -> None:
    print("8. large results: inline against kept and linked, then read or downloaded")
    if not Path("/proc/self/clear_refs").exists():
        print("   not measured: the peak memory of a process is read from Linux's /proc")
        return
    env = {
        "MCP_AUTH": "none",
        "MCP_MAX_RESULT_BYTES": str(512 * 1024 * 1024),
        "MCP_MAX_DATA_BYTES_PER_CALLER": str(64 * 1024**3),  # every round keeps its data
        "MCP_DATA_URL": tempfile.mkdtemp(prefix="mcp-data-bench-"),
        "MCP_LOG_LEVEL": "WARNING",
    }
    sizes = (1, 5, 20) if calls < 1000 else (1, 5, 20, 100)
    ways = ("inline", "read", "download")
    with ServedProcess("service_with_data", env) as url:
        assert ServedProcess.last_pid is not None
        pid = ServedProcess.last_pid
        large_result(url, pid, 1, "inline")  # warm: the first call builds what all share
        for megabytes in sizes:
            measure = partial(asyncio.to_thread, large_result, url, pid, megabytes)
            runs = interleaved(rounds, *(partial(measure, way) for way in ways))
            measured = {
                way: (
                    statistics.median(run[0] for run in way_runs),
                    statistics.median(run[1] for run in way_runs),
                )
                for way, way_runs in zip(ways, runs, strict=True)
            }
            inline_time, inline_memory = measured["inline"]
            cells = [
                f"   {megabytes:3d} MB  inline {inline_time * 1e3:7.0f} ms "
                f"{inline_memory / 1e6:6.0f} MB"
            ]
            for way in ways[1:]:
                took, memory = measured[way]
                cells.append(
                    f"{way} {took * 1e3:6.0f} ms ({took / inline_time:.2f}x) "
                    f"{memory / 1e6:5.0f} MB ({memory / max(inline_memory, 1):.2f}x)"
                )
            print("   ".join(cells))


async def send_calls(url: str, era: str, count: int) -> None:
    """``count`` calls of ``hello`` to ``url`` as a client of ``era``, 8 connections at once."""
    address = urlsplit(url)
    request = hello_request(url, None, era)

    async def caller(calls: int) -> None:
        reader, writer = await asyncio.open_connection(address.hostname, address.port)
        for _ in range(calls):
            writer.write(request)
            status, answer, _ = await read_response(reader)
            if status != 200 or b"Hello, Ada!" not in answer:
                raise RuntimeError(f"a call answered {status}: {answer[:300]!r}")
        writer.close()

    await asyncio.gather(*(caller(count // 8) for _ in range(8)))


def counted_instructions(factory: str, era: str, calls: int) -> int:
    """The instructions a process serving ``http_targets.FACTORY`` under uvicorn runs, under
    valgrind's cachegrind, from its start to its end, having answered 80 calls and then
    ``calls`` more, as a client of ``era`` sends them."""
    port = free_port()
    with tempfile.TemporaryDirectory() as folder:
        command = [
            *("valgrind", "--tool=cachegrind", "--cache-sim=no"),
            f"--cachegrind-out-file={folder}/counts",
            *(sys.executable, "-m", "uvicorn", "--factory", f"http_targets:{factory}"),
            *("--app-dir", str(Path(__file__).parent), "--host", "127.0.0.1"),
            *("--port", str(port), "--log-level", "error", "--no-access-log"),
            *("--timeout-keep-alive", "600"),  # a call under cachegrind takes milliseconds
        ]
        environment = {**os.environ, "MCP_AUTH": "none", "PYTHONHASHSEED": "0"}
        process = subprocess.Popen(
            command, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        deadline = time.monotonic() + 600
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{factory} did not start under valgrind") from None
                time.sleep(0.5)
        url = f"http://127.0.0.1:{port}/mcp"
        asyncio.run(send_calls(url, era, 80))  # warm: what the first calls build
        asyncio.run(send_calls(url, era, calls))
        process.send_signal(signal.SIGINT)
        _, errors = process.communicate(timeout=600)
    for line in errors.decode().splitlines():
        if "I refs:" in line or "I   refs:" in line:
            return int(line.rpartition(":")[2].replace(",", ""))
    raise RuntimeError(f"cachegrind counted nothing for {factory}: {errors[-500:]!r}")


def section_9(calls: int, rounds: int, seconds: float) -> None:
    print(
        "9. instructions per call, counted: each server of the HTTP rows in a process of its "
        "own under valgrind's cachegrind (uvicorn and the app, from start to end), 40 calls "
        "against 240; the difference over 200"
    )
    if shutil.which("valgrind") is None:
        print("   not measured: valgrind is not installed")
        return
    targets = {"bare ASGI responder": "bare", "SDK MCPServer, JSON": "sdk_json"}
    targets["service"] = "service"
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        for era in ("2025-11-25", MODERN):
            print(f"   a client of {era}:")
            counted: dict[str, float] = {}
            for label, factory in targets.items():
                fewer, more = pool.map(partial(counted_instructions, factory, era), (40, 240))
                counted[label] = (more - fewer) / 200
                print(f"     {label:20s} {counted[label]:12,.0f} instructions a call")
            service = counted["service"]
            for baseline in ("SDK MCPServer, JSON", "bare ASGI responder"):
                print(f"     {baseline} / service = {counted[baseline] / service:.3f}")


async def asgi_calls(app: Any, era: str, count: int) -> float:
    """Seconds a call of ``count`` ``tools/call`` POSTs of ``hello`` to ``app`` over ASGI,
    as a client of ``era`` sends them (after its lifespan has started)."""
    request = hello_request("http://127.0.0.1:8000/mcp", None, era)
    head, body = request.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")[1:]
    headers = [tuple(part.encode("latin-1") for part in line.split(": ", 1)) for line in lines]
    scope_of: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 50000),
        "scheme": "http",
        "method": "POST",
        "root_path": "",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "query_string": b"",
    }

    async def call() -> None:
        received = False
        sent: list[Any] = []

        async def receive() -> dict[str, Any]:
            nonlocal received
            if not received:
                received = True
                return {"type": "http.request", "body": body, "more_body": False}
            await asyncio.Event().wait()
            raise AssertionError("unreachable")

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        await app({**scope_of, "headers": list(headers), "state": {}}, receive, send)
        await asyncio.sleep(0)  # the loop's turn a server gives between requests
        if sent[0]["status"] != 200 or b"Hello, Ada!" not in sent[-1]["body"]:
            raise RuntimeError(f"the app answered {sent}")

    for _ in range(200):
        await call()
    started = time.perf_counter()
    for _ in range(count):
        await call()
    return (time.perf_counter() - started) / count


@contextlib.asynccontextmanager
async def lifespan_of(app: Any) -> Any:
    """Within the block, ``app``'s lifespan has started; it shuts down after it."""
    incoming: asyncio.Queue[dict[str, str]] = asyncio.Queue()
    started = asyncio.Event()

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "lifespan.startup.complete":
            started.set()

    running = asyncio.create_task(app({"type": "lifespan", "state": {}}, incoming.get, send))
    await incoming.put({"type": "lifespan.startup"})
    await started.wait()
    try:
        yield
    finally:
        await incoming.put({"type": "lifespan.shutdown"})
        await running


async def app_rounds(apps: Sequence[Any], count: int, rounds: int) -> dict[str, list[list[float]]]:
    """Per era, each app's seconds a call in each of ``rounds`` interleaved rounds."""
    async with contextlib.AsyncExitStack() as stack:
        for app in apps:
            await stack.enter_async_context(lifespan_of(app))
        measured: dict[str, list[list[float]]] = {}
        for era in ("2025-11-25", MODERN):
            measured[era] = [[] for _ in apps]
            for _ in range(rounds):
                for index, app in enumerate(apps):
                    measured[era][index].append(await asgi_calls(app, era, count))
        return measured


def section_10(calls: int, rounds: int, seconds: float) -> None:
    print("10. the app alone over ASGI in one process, per tools/call, median of rounds")
    sys.path.insert(0, str(Path(__file__).parent))
    import http_targets

    root, runtime = logging.getLogger(), logging.getLogger("mcp_runtime")
    saved = (list(root.handlers), root.level, runtime.level)
    environment = {"MCP_AUTH": "none", "MCP_LOG_FORMAT": "text", "MCP_LOG_LEVEL": "INFO"}
    before = {name: os.environ.get(name) for name in environment}
    os.environ.update(environment)
    # The call log lines go where the HTTP rows send them: nowhere.
    with open(os.devnull, "w") as devnull, contextlib.redirect_stderr(devnull):
        try:
            apps = (http_targets.service(), http_targets.sdk_json())
            measured = asyncio.run(app_rounds(apps, calls * 3 // 2, rounds))
            for era, runs in measured.items():
                service_us, sdk_us = (statistics.median(run) * 1e6 for run in runs)
                print(
                    f"   {era}: service {service_us:6.1f} us   SDK MCPServer, JSON "
                    f"{sdk_us:6.1f} us   ratio {sdk_us / service_us:.2f}"
                )
        finally:
            root.handlers[:] = saved[0]
            root.setLevel(saved[1])
            runtime.setLevel(saved[2])
            for name, value in before.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


GIB = 1024**3


def gib_file(path: Path, size: int) -> None:
    """A file of ``size`` bytes of varied content (not all zeros), written a block at a time."""
    block = os.urandom(64 * 1024 * 1024)
    with path.open("wb") as out:
        left = size
        while left > 0:
            left -= out.write(block[: min(left, len(block))])
        out.flush()
        os.fsync(out.fileno())


def copied(source: Path, target: Path) -> float:
    """The seconds of a copy of ``source`` (``shutil.copyfile``, then ``fsync``): the floor."""
    os.sync()  # each write starts with no other's dirty pages to flush
    started = time.perf_counter()
    shutil.copyfile(source, target)
    with target.open("rb") as done:
        os.fsync(done.fileno())
    took = time.perf_counter() - started
    target.unlink()
    return took


def kept_by_call(
    url: str, pid: int, tool: str, arguments: dict[str, Any]
) -> tuple[float, int, dict[str, Any]]:
    """The seconds of one call of ``tool``, the serving process's peak memory growth, and
    the link its result holds."""
    os.sync()  # each write starts with no other's dirty pages to flush
    before = peak_reset(pid)
    started = time.perf_counter()
    body = rpc_body("tools/call", {"name": tool, "arguments": arguments})
    answer = httpx2.post(url, json=body, headers=LEGACY_HEADERS, timeout=3600)
    took = time.perf_counter() - started
    result = answer.json()["result"]
    if result["isError"]:
        raise RuntimeError(f"{tool} answered {result['content'][0]['text']}")
    return took, resident(pid, "VmHWM") - before, result["structuredContent"]["file"]


def rate(size: int, took: float) -> str:
    """``size`` bytes in ``took`` seconds, in MB/s."""
    return f"{size / took / 1e6:7.0f} MB/s"


def grown(memory: int) -> str:
    """A memory growth, in MiB."""
    return f"peak memory +{memory / 2**20:5.0f} MiB"


def downloaded(url: str, size: int) -> float:
    """The seconds of a download of ``url``, read to its end and dropped."""
    started = time.perf_counter()
    got_bytes = 0
    with httpx2.stream("GET", url, timeout=3600) as got:
        for piece in got.iter_raw(1024 * 1024):
            got_bytes += len(piece)
    if got_bytes != size:
        raise RuntimeError(f"a download of {size} bytes gave {got_bytes}")
    return time.perf_counter() - started


def at_once(urls: Sequence[str], size: int) -> float:
    """The seconds of the downloads of ``urls``, all at once."""
    started = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(len(urls)) as pool:
        list(pool.map(lambda url: downloaded(url, size), urls))
    return time.perf_counter() - started


def redis_memory(redis_url: str) -> int:
    import redis

    return int(redis.Redis.from_url(redis_url).info("memory")["used_memory"])


def section_11(calls: int, rounds: int, seconds: float, big: bool = False) -> None:
    print("11. data at scale: keeping and downloading, against a copy and a FileResponse")
    if not Path("/proc/self/clear_refs").exists():
        print("   not measured: the peak memory of a process is read from Linux's /proc")
        return
    base = tempfile.mkdtemp(prefix="mcp-data-bench-", dir=os.environ.get("BENCHMARK_DATA_DIR"))
    folder = Path(base)
    key = base64.urlsafe_b64encode(os.urandom(32)).decode()
    try:
        with redis_server() as redis_url:
            if redis_url is None:
                print("   not measured: redis-server is not installed")
                return
            env = {
                "MCP_AUTH": "none",
                "MCP_DATA_URL": str(folder / "data"),
                "MCP_TASKS_URL": redis_url,
                "MCP_TASK_KEYS": key,
                "MCP_CALL_TIMEOUT": "3600",
                "MCP_LOG_LEVEL": "WARNING",
            }
            with (
                ServedProcess("service_keeping", env) as url,
                ServedProcess("file_response", {}) as floor_url,
            ):
                pid = _pid_of(url)
                base_url = url.removesuffix("/mcp")
                floor_base = floor_url.removesuffix("/mcp")
                warm = folder / "warm.bin"
                gib_file(warm, 1024 * 1024)  # the first keep opens the ledger, its pools
                _, _, file = kept_by_call(url, pid, "keep_file", {"path": str(warm)})
                kept_by_call(url, pid, "keep_stream", {"megabytes": 1})
                downloaded(base_url + file["download"], 1024 * 1024)
                downloaded(f"{floor_base}/file?path={warm}", 1024 * 1024)
                for size in (GIB, 10 * GIB) if big else (GIB,):
                    source = folder / "source.bin"
                    gib_file(source, size)
                    label = f"{size // GIB:2d} GiB"
                    # Interleaved rounds (one of 10 GiB): a disk's pace moves from one
                    # minute to the next, and every way meets the same moments.
                    runs: dict[str, list[float]] = {}
                    memory: dict[str, list[int]] = {}
                    for _ in range(rounds if size == GIB else 1):
                        runs.setdefault("copy", []).append(copied(source, folder / "copy.bin"))
                        redis_before = redis_memory(redis_url)
                        took, grew, file = kept_by_call(
                            url, pid, "keep_file", {"path": str(source)}
                        )
                        redis_grew = redis_memory(redis_url) - redis_before
                        runs.setdefault("file", []).append(took)
                        memory.setdefault("file", []).append(grew)
                        memory.setdefault("redis", []).append(redis_grew)
                        took, grew, _ = kept_by_call(
                            url, pid, "keep_stream", {"megabytes": size // (1024 * 1024)}
                        )
                        runs.setdefault("stream", []).append(took)
                        memory.setdefault("stream", []).append(grew)
                        floor = downloaded(f"{floor_base}/file?path={source}", size)
                        runs.setdefault("floor", []).append(floor)
                        before = peak_reset(pid)
                        runs.setdefault("download", []).append(
                            downloaded(base_url + file["download"], size)
                        )
                        memory.setdefault("download", []).append(resident(pid, "VmHWM") - before)
                    copy, kept, streamed, floor, download = (
                        statistics.median(runs[way])
                        for way in ("copy", "file", "stream", "floor", "download")
                    )
                    most = {way: max(grown_by) for way, grown_by in memory.items()}
                    print(
                        f"   {label} keep a file    {rate(size, kept)} ({copy / kept:.2f}x a "
                        f"copy at {rate(size, copy).strip()})   {grown(most['file'])}   Redis "
                        f"+{most['redis'] / 1e3:.1f} kB"
                    )
                    print(
                        f"   {label} keep a stream  {rate(size, streamed)} ({copy / streamed:.2f}x "
                        f"a copy)   {grown(most['stream'])}"
                    )
                    print(
                        f"   {label} download      {rate(size, download)} ({floor / download:.2f}x "
                        f"FileResponse at {rate(size, floor).strip()})   {grown(most['download'])}"
                    )
                    source.unlink()
                # Twenty downloads of 1 GiB at once.
                source = folder / "source.bin"
                gib_file(source, GIB)
                _, _, file = kept_by_call(url, pid, "keep_file", {"path": str(source)})
                before = peak_reset(pid)
                twenty = at_once([base_url + file["download"]] * 20, GIB)
                twenty_memory = resident(pid, "VmHWM") - before
                floor_twenty = at_once([f"{floor_base}/file?path={source}"] * 20, GIB)
                print(
                    f"   20 downloads of 1 GiB at once {rate(20 * GIB, twenty)} in all "
                    f"({floor_twenty / twenty:.2f}x FileResponse)   {grown(twenty_memory)}"
                )
            section_11_s3(folder, env, pid_of=_pid_of)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _pid_of(url: str) -> int:
    """The process serving ``url``."""
    return ServedProcess.pids[url]


def section_11_s3(folder: Path, env: dict[str, str], pid_of: Callable[[str], int]) -> None:
    """1 GiB on the S3 store of moto's server: keeping and downloading, against a plain
    upload to that server and a read of the object by the same ranges."""
    if importlib.util.find_spec("moto") is None:
        print("   S3: not measured: moto is not installed")
        return
    import obstore
    from obstore.store import S3Store

    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    moto = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx2.put(f"{endpoint}/bench-data", timeout=1).raise_for_status()
                break
            except httpx2.HTTPError:
                if time.monotonic() > deadline:
                    raise RuntimeError("moto's server did not start") from None
                time.sleep(0.1)
        credentials = {
            "AWS_ENDPOINT_URL": endpoint,
            "AWS_ALLOW_HTTP": "true",
            "AWS_ACCESS_KEY_ID": "bench",
            "AWS_SECRET_ACCESS_KEY": "bench",
            "AWS_REGION": "us-east-1",
        }
        source = folder / "source.bin"
        if not source.exists():
            gib_file(source, GIB)
        bucket = S3Store(
            "bench-data",
            endpoint=endpoint,
            access_key_id="bench",
            secret_access_key="bench",
            region="us-east-1",
            client_options={"allow_http": True},
        )
        started = time.perf_counter()
        obstore.put(bucket, "floor/source.bin", source, chunk_size=16 * 1024 * 1024)
        upload = time.perf_counter() - started
        started = time.perf_counter()
        step = 8 * (1024 * 1024 + 33)
        for offset in range(0, GIB, step):
            obstore.get_range(bucket, "floor/source.bin", start=offset, end=min(offset + step, GIB))
        ranged = time.perf_counter() - started
        served_env = env | credentials | {"MCP_DATA_URL": "s3://bench-data/data"}
        with ServedProcess("service_keeping", served_env) as url:
            pid = pid_of(url)
            kept, memory, file = kept_by_call(url, pid, "keep_file", {"path": str(source)})
            download = downloaded(url.removesuffix("/mcp") + file["download"], GIB)
        print(
            f"    1 GiB on S3 (moto)  keep {GIB / kept / 1e6:6.0f} MB/s ({upload / kept:.2f}x an "
            f"upload at {GIB / upload / 1e6:.0f} MB/s)   download {GIB / download / 1e6:6.0f} MB/s "
            f"({ranged / download:.2f}x ranged reads at {GIB / ranged / 1e6:.0f} MB/s)   "
            f"peak memory +{memory / 2**20:5.0f} MiB"
        )
    finally:
        moto.terminate()
        moto.wait(timeout=30)


RELEASES: dict[str, asyncio.Event] = {}


@tool_metadata(task="optional")
@tool
async def held_hello(name: str) -> HelloResult:
    """Greet a person by name once the benchmark releases the name."""
    await RELEASES[name].wait()
    return greet(name)


def task_engine(url: str, key: str) -> Any:
    """The task engine of a service of ``held_hello`` with tasks at ``url``, in this process."""
    from mcp_runtime.tasks.engine import TaskEngine

    settings = ServiceSettings(stateless=True, auth="none", tasks_url=url, task_keys=key)  # type: ignore[arg-type]
    if url == "memory://":
        settings = ServiceSettings(stateless=True, auth="none")
    state = ServiceState(settings)
    name = f"bench-{os.urandom(4).hex()}"
    build_server([Toolset("held", (held_hello,))], name=name, settings=settings, state=state)
    engine = state.tasks
    assert isinstance(engine, TaskEngine)
    return engine


async def held_task(engine: Any, owner: str = "bench") -> tuple[str, str]:
    """A new task of ``held_hello``, running: its id and the name that releases it."""
    from mcp_runtime.tasks.request import TaskRequest

    name = os.urandom(6).hex()
    RELEASES[name] = asyncio.Event()
    request = TaskRequest(None, {}, {"name": name}, "2025-11-25")
    record = await engine.create(engine.runner.tools["held_hello"], request, owner)
    while record.task_id not in engine.runner.running:
        await asyncio.sleep(0.001)
    return record.task_id, name


async def polled_wait(engine: Any, owner: str, task_id: str) -> Any:
    """The wait as the engine did it before it was told of ends: read the task (and its
    Docket state while it works), backing off from 20 ms to the poll interval."""
    docket = await engine._docket_opened()
    delay = 0.02
    while True:
        record = await engine.get(owner, task_id, result=True)
        if record is None or record.terminal:
            return record
        await docket.get_execution(task_id)
        await asyncio.sleep(delay)
        delay = min(delay * 2, engine.settings.poll_interval)


async def five_step_cancel(engine: Any, owner: str, task_id: str) -> Any:
    """The cancel as the engine did it before: read the task, end it, cancel it on Docket,
    poll Docket's state until the run has stopped, read the task again."""
    from mcp_runtime.tasks.engine import CANCELLED

    docket = await engine._docket_opened()
    await engine.get(owner, task_id)
    await docket.get_execution(task_id)
    await engine.runner.end(task_id, "cancelled", CANCELLED)
    await docket.cancel(task_id)
    for _ in range(50):
        execution = await docket.get_execution(task_id)
        if execution is None or execution.state.value not in {"scheduled", "queued", "running"}:
            break
        await asyncio.sleep(0.02)
    return await engine.get(owner, task_id)


async def told_rows(url: str, key: str, tasks: int) -> dict[str, list[float]]:
    """Each measurement of section 12, on the tasks store at ``url``."""
    engine = task_engine(url, key)
    engine.start()
    found: dict[str, list[float]] = {
        "polled": [],
        "told": [],
        "cancel before": [],
        "cancel": [],
        "list before": [],
        "list": [],
        "count before": [],
        "count": [],
    }
    try:
        for number in range(2 * tasks):
            task_id, name = await held_task(engine)
            way = "told" if number % 2 else "polled"
            wait = engine.wait if way == "told" else partial(polled_wait, engine)
            waiting = asyncio.ensure_future(wait("bench", task_id))
            await asyncio.sleep(0.2 + (number // 2) * 1.3 / tasks)  # a task of 0.2 to 1.5 s
            released = time.perf_counter()
            RELEASES[name].set()
            record = await waiting
            found[way].append(time.perf_counter() - released)
            assert record.status == "completed", record
        for number in range(2 * tasks):
            task_id, name = await held_task(engine)
            way = "cancel" if number % 2 else "cancel before"
            cancel = engine.cancel if way == "cancel" else partial(five_step_cancel, engine)
            started = time.perf_counter()
            record = await cancel("bench", task_id)
            found[way].append(time.perf_counter() - started)
            assert record.status == "cancelled", record
        held = [await held_task(engine, owner="lister") for _ in range(100)]
        docket = await engine._docket_opened()
        for _ in range(tasks):
            started = time.perf_counter()
            async with docket.redis() as redis:
                listed_ids = await redis.zrange(engine.keys.owner("lister"), 0, -1)
            ids = [raw.decode() for raw in listed_ids]
            for task_id in ids:
                await engine.get("lister", task_id)
                await docket.get_execution(task_id)
            found["list before"].append(time.perf_counter() - started)
            started = time.perf_counter()
            listed = await engine.list("lister")
            found["list"].append(time.perf_counter() - started)
            assert len(listed) == len(ids) == 100
            started = time.perf_counter()
            async with docket.redis() as redis:
                members = await redis.smembers(engine.keys.open("lister"))
            for raw in members:
                await engine.get("lister", raw.decode())
                await docket.get_execution(raw.decode())
            found["count before"].append(time.perf_counter() - started)
            started = time.perf_counter()
            assert await engine.store.open_count("lister") == 100
            found["count"].append(time.perf_counter() - started)
        for _, name in held:
            RELEASES[name].set()
    finally:
        await engine.close()
    return found


def section_12(calls: int, rounds: int, seconds: float) -> None:
    print("12. tasks told, not polled: each step before and now, in one process")
    key = base64.urlsafe_b64encode(os.urandom(32)).decode()
    tasks = 8 if calls < 1000 else 16
    with redis_server() as redis_url:
        for store, url in (("memory://", "memory://"), ("Redis", redis_url)):
            if url is None:
                print(f"   {store:10s} not measured: redis-server is not installed")
                continue
            found = asyncio.run(told_rows(url, key, tasks))
            ms = {label: [value * 1e3 for value in values] for label, values in found.items()}
            for label, before, now in (
                ("result after its task's end", "polled", "told"),
                ("cancel of a running task", "cancel before", "cancel"),
                ("list of 100 tasks", "list before", "list"),
                ("count of 100 open tasks", "count before", "count"),
            ):
                was, is_now = statistics.median(ms[before]), statistics.median(ms[now])
                print(
                    f"   {store:10s} {label:28s} before p50 {was:7.1f} ms max "
                    f"{max(ms[before]):7.1f} ms   now p50 {is_now:6.1f} ms max "
                    f"{max(ms[now]):6.1f} ms   ratio {is_now / was:.3f}"
                )


SECTIONS = {
    1: section_1,
    2: section_2,
    3: section_3,
    4: section_4,
    5: section_5,
    6: section_6,
    7: section_7,
    8: section_8,
    9: section_9,
    10: section_10,
    11: section_11,
    12: section_12,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds, for a smoke run")
    parser.add_argument("--big", action="store_true", help="section 11 keeps 10 GiB too")
    parser.add_argument(
        "--sections",
        default="1,2,3,4,5,6,7,8,10,12",
        help="the sections to run, comma-separated (9, which needs valgrind, and 11, which "
        "writes gigabytes, only when named)",
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    calls, rounds, seconds = (200, 2, 1.0) if args.quick else (2000, 5, 5.0)
    for number in sorted(int(part) for part in args.sections.split(",")):
        if number == 11:
            section_11(calls, rounds, seconds, big=args.big)
        else:
            SECTIONS[number](calls, rounds, seconds)


if __name__ == "__main__":
    main()
