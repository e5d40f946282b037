"""Tracing of tool calls: one SERVER span a call, through real client sessions.

In memory and over a real uvicorn server in process, the spans are read from the SDK's
in-memory exporter (the ``call_spans`` fixture); end to end, a real ``serve`` process
exports them over OTLP/HTTP to a receiver on a loopback port.
"""

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anyio
import pytest
import uvicorn
from langchain_core.tools import tool
from mcp import StdioServerParameters
from mcp.client import Client
from opentelemetry import trace
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanContext, SpanKind, StatusCode

from mcp_runtime import ToolError, ToolResult
from mcp_runtime.config.settings import ServiceSettings, SettingsError
from mcp_runtime.contract.toolsets import Toolset, find_service
from mcp_runtime.observability.tracing import (
    check_tracing_settings,
    configure_tracing,
    start_call_span,
)
from mcp_runtime.sdk import MCPServer
from mcp_runtime.serving.http_app import build_app
from mcp_runtime.serving.server import build_server
from mcp_runtime.testing import connect, connect_http, free_port, run_server

pytestmark = pytest.mark.anyio

SECRET = "Zanzibar-7f3q"
"""An argument value that must never reach a span."""
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"
SERVE = [sys.executable, "-m", "mcp_runtime", "serve"]
OTLP_ENVIRONMENT = (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    "OTEL_SDK_DISABLED",
    "OTEL_SERVICE_NAME",
)

seen_contexts: list[SpanContext] = []
waiting: list[anyio.Event] = []


@tool
def sync_span(word: str) -> ToolResult:
    """Note the current span, in a worker thread."""
    seen_contexts.append(trace.get_current_span().get_span_context())
    return ToolResult(message="noted")


@tool
async def async_span(word: str) -> ToolResult:
    """Note the current span."""
    seen_contexts.append(trace.get_current_span().get_span_context())
    return ToolResult(message="noted")


@tool
def refuse(word: str) -> ToolResult | ToolError:
    """Answer with a ToolError."""
    return ToolError(error="not_found", detail=f"nothing called {word}")


@tool
def crash(word: str) -> ToolResult:
    """Raise an unexpected error."""
    raise ValueError(f"no {word}")


@tool
async def wait(word: str) -> ToolResult:
    """Wait until cancelled."""
    waiting[0].set()
    await anyio.sleep_forever()
    return ToolResult(message="never")


TOOLS = (sync_span, async_span, refuse, crash, wait)


@pytest.fixture
def traced() -> MCPServer:
    """A server of the test's tools, errors unmasked (so messages hold the argument)."""
    settings = ServiceSettings(auth="none", mask_errors=False)
    return build_server([Toolset("traced", TOOLS)], name="traced", settings=settings)


def attribute_text(span: ReadableSpan) -> str:
    """Everything a span records besides its ids, as text."""
    parts = [span.name, repr(dict(span.attributes or {})), repr(span.status.description)]
    parts += [f"{event.name} {dict(event.attributes or {})}" for event in span.events]
    parts += [repr(dict(link.attributes or {})) for link in span.links]
    return " ".join(parts)


async def test_a_call_is_one_server_span_with_the_conventions_attributes(
    server: MCPServer, call_spans: InMemorySpanExporter
) -> None:
    async with connect(server) as session:
        result = await session.call_tool("hello", {"name": SECRET})
    assert result.is_error is False
    [span] = call_spans.get_finished_spans()
    assert span.name == "tools/call hello"
    assert span.kind is SpanKind.SERVER
    assert dict(span.attributes or {}) == {
        "mcp.method.name": "tools/call",
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "hello",
        "jsonrpc.request.id": "2",  # the client lists the tools (1) before its first call
        "mcp.protocol.version": "2025-11-25",
        "mcp_runtime.outcome": "ok",
    }
    assert span.status.status_code is StatusCode.UNSET
    assert span.parent is None
    assert span.end_time is not None
    assert SECRET not in attribute_text(span)


@pytest.mark.parametrize(
    ("name", "arguments", "outcome"),
    [
        ("refuse", {"word": SECRET}, "tool_error"),
        ("crash", {"word": SECRET}, "exception"),
        ("refuse", {"word": [SECRET]}, "bad_arguments"),
    ],
)
async def test_a_failed_call_is_an_error_span_without_its_values(
    traced: MCPServer,
    call_spans: InMemorySpanExporter,
    name: str,
    arguments: dict[str, Any],
    outcome: str,
) -> None:
    async with connect(traced) as session:
        result = await session.call_tool(name, arguments)
    assert result.is_error is True
    [span] = call_spans.get_finished_spans()
    assert span.name == f"tools/call {name}"
    assert span.attributes is not None
    assert span.attributes["mcp_runtime.outcome"] == outcome
    assert span.attributes["error.type"] == "tool_error"
    assert span.status.status_code is StatusCode.ERROR
    assert span.events == ()
    assert SECRET not in attribute_text(span)


async def test_a_cancelled_call_ends_its_span_as_cancelled(
    traced: MCPServer, call_spans: InMemorySpanExporter
) -> None:
    waiting[:] = [anyio.Event()]

    async with connect(traced) as session, anyio.create_task_group() as group:
        group.start_soon(session.call_tool, "wait", {"word": SECRET})
        with anyio.fail_after(30):
            await waiting[0].wait()
        group.cancel_scope.cancel()  # the client sends notifications/cancelled for its call
    [span] = call_spans.get_finished_spans()
    assert span.name == "tools/call wait"
    assert span.attributes is not None
    assert span.attributes["mcp_runtime.outcome"] == "cancelled"
    assert span.attributes["error.type"] == "cancelled"
    assert span.status.status_code is StatusCode.ERROR


@pytest.mark.parametrize("name", ["sync_span", "async_span"])
async def test_the_call_span_is_current_while_the_tool_runs(
    traced: MCPServer, call_spans: InMemorySpanExporter, name: str
) -> None:
    seen_contexts.clear()
    async with connect(traced) as session:
        await session.call_tool(name, {"word": "x"})
    [span] = call_spans.get_finished_spans()
    assert seen_contexts == [span.get_span_context()]


class InProcess:
    """A real uvicorn server on a loopback port, in a thread of the test's process."""

    def __init__(self, server: MCPServer) -> None:
        self.port = free_port()
        app = build_app(server, ServiceSettings(auth="none"))
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        self.uvicorn = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.uvicorn.run, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        while not self.uvicorn.started:
            if not self.thread.is_alive():
                pytest.fail("the test server did not start")
            threading.Event().wait(0.02)
        return f"http://127.0.0.1:{self.port}/mcp"

    def __exit__(self, *exc: object) -> None:
        self.uvicorn.should_exit = True
        self.thread.join(timeout=10)


async def test_over_http_the_span_continues_the_requests_trace(
    call_spans: InMemorySpanExporter,
) -> None:
    headers = {"traceparent": TRACEPARENT, "tracestate": "rojo=1", "x-demo-token": SECRET}
    with InProcess(build_server()) as url:
        async with connect_http(url, headers=headers) as session:
            result = await session.call_tool("hello", {"name": "Ada"})
    assert result.is_error is False
    [span] = call_spans.get_finished_spans()
    assert span.parent is not None
    assert span.parent.is_remote
    assert f"{span.parent.trace_id:032x}" == TRACE_ID
    assert f"{span.parent.span_id:016x}" == PARENT_ID
    assert f"{span.context.trace_id:032x}" == TRACE_ID
    assert span.context.trace_state.to_header() == "rojo=1"
    assert dict(span.attributes or {}) == {
        "mcp.method.name": "tools/call",
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "hello",
        "jsonrpc.request.id": "2",  # the client lists the tools (1) before its first call
        "mcp.protocol.version": "2025-11-25",
        "network.transport": "tcp",
        "network.protocol.name": "http",
        "mcp_runtime.outcome": "ok",
    }
    assert SECRET not in attribute_text(span)


META_TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
META_PARENT_ID = "b7ad6b7169203331"


async def test_the_trace_context_in_meta_wins_over_the_headers(
    call_spans: InMemorySpanExporter,
) -> None:
    meta = {"traceparent": f"00-{META_TRACE_ID}-{META_PARENT_ID}-01", "tracestate": "congo=t61"}
    with InProcess(build_server()) as url:
        async with connect_http(url, headers={"traceparent": TRACEPARENT}) as session:
            result = await session.call_tool("hello", {"name": "Ada"}, meta=meta)
            plain = await session.call_tool("hello", {"name": "Ada"})
    assert result.is_error is False
    assert plain.is_error is False
    from_meta, from_headers = call_spans.get_finished_spans()
    assert from_meta.parent is not None
    assert f"{from_meta.parent.trace_id:032x}" == META_TRACE_ID
    assert f"{from_meta.parent.span_id:016x}" == META_PARENT_ID
    assert from_meta.context.trace_state.to_header() == "congo=t61"
    assert from_headers.parent is not None
    assert f"{from_headers.parent.trace_id:032x}" == TRACE_ID


async def test_over_stdio_and_in_memory_the_meta_gives_the_parent(
    server: MCPServer, call_spans: InMemorySpanExporter
) -> None:
    meta = {"traceparent": f"00-{META_TRACE_ID}-{META_PARENT_ID}-01"}
    async with connect(server) as session:
        result = await session.call_tool("hello", {"name": "Ada"}, meta=meta)
    assert result.is_error is False
    [span] = call_spans.get_finished_spans()
    assert span.parent is not None
    assert span.parent.is_remote
    assert f"{span.parent.span_id:016x}" == META_PARENT_ID
    assert f"{span.context.trace_id:032x}" == META_TRACE_ID


def test_without_an_endpoint_tracing_is_off(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in OTLP_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    assert configure_tracing("traced") is False
    assert start_call_span("hello") is None
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    assert configure_tracing("traced") is False
    assert start_call_span("hello") is None


class Receiver:
    """An OTLP/HTTP trace receiver on a loopback port, keeping each request it gets."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        bodies = self.bodies

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["content-length"]))
                if self.path == "/v1/traces":
                    bodies.append(body)
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200 if self.path == "/v1/traces" else 404)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.http.server_address[1]}"
        self.thread = threading.Thread(target=self.http.serve_forever, daemon=True)

    def spans(self) -> list[tuple[str, dict[str, str]]]:
        """Each span received: its service's name, and its name, ids and attributes."""
        found = []
        for body in self.bodies:
            request = ExportTraceServiceRequest.FromString(body)
            for resource_spans in request.resource_spans:
                resource = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        fields = {a.key: a.value.string_value for a in span.attributes}
                        fields["name"] = span.name
                        fields["trace_id"] = span.trace_id.hex()
                        fields["parent_span_id"] = span.parent_span_id.hex()
                        found.append((resource["service.name"], fields))
        return found

    def __enter__(self) -> "Receiver":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.http.shutdown()
        self.http.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as running:
        yield running


@pytest.mark.any_python
@pytest.mark.parametrize(
    ("workers", "service_name"), [("1", None), ("2", "hello-service-elsewhere")]
)
async def test_serve_exports_the_spans_over_otlp_and_flushes_them_at_shutdown(
    receiver: Receiver, workers: str, service_name: str | None, task_store: dict[str, str]
) -> None:
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
        "OTEL_BSP_SCHEDULE_DELAY": "600000",  # nothing is sent before shutdown
        "MCP_WORKERS": workers,
        **task_store,  # the workers share their tasks
    }
    if service_name is not None:
        env["OTEL_SERVICE_NAME"] = service_name
    calls = 4
    with run_server(SERVE, env=env) as server:
        async with connect_http(server.url, headers={"traceparent": TRACEPARENT}) as session:
            for _ in range(calls):
                result = await session.call_tool("hello", {"name": SECRET})
                assert result.is_error is False
        assert receiver.bodies == []
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(timeout=30) == 0
    spans = receiver.spans()
    expected = {
        "mcp.method.name": "tools/call",
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "hello",
        "mcp.protocol.version": "2025-11-25",
        "network.transport": "tcp",
        "network.protocol.name": "http",
        "mcp_runtime.outcome": "ok",
        "name": "tools/call hello",
        "trace_id": TRACE_ID,
        "parent_span_id": PARENT_ID,
    }
    request_ids = [span.pop("jsonrpc.request.id") for _, span in spans]
    # The client's own ids: distinct numbers (it lists the tools after its first call).
    assert len(set(request_ids)) == calls
    assert all(request_id.isdigit() for request_id in request_ids)
    assert spans == [(service_name or find_service().name, expected)] * calls
    assert not any(SECRET.encode() in body for body in receiver.bodies)


async def test_serve_over_stdio_exports_root_spans(receiver: Receiver) -> None:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "600000"}
    parameters = StdioServerParameters(
        command=sys.executable, args=[*SERVE[1:], "--transport", "stdio"], env=env
    )
    async with Client(parameters, mode="legacy") as session:
        result = await session.call_tool("hello", {"name": SECRET})
    assert result.is_error is False
    expected = {
        "mcp.method.name": "tools/call",
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "hello",
        "jsonrpc.request.id": "2",  # the client lists the tools (1) before its first call
        "mcp.protocol.version": "2025-11-25",
        "mcp_runtime.outcome": "ok",
        "name": "tools/call hello",
    }
    [(service, span)] = receiver.spans()
    assert service == find_service().name
    assert span.pop("parent_span_id") == ""
    assert len(span.pop("trace_id")) == 32
    assert span == expected
    assert not any(SECRET.encode() in body for body in receiver.bodies)


# Each transport and each variable once (which variable wins is checked in process below).
@pytest.mark.parametrize(
    ("transport", "name"),
    [
        ("streamable-http", "OTEL_EXPORTER_OTLP_PROTOCOL"),
        ("stdio", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"),
    ],
)
def test_a_protocol_the_exporter_does_not_speak_is_refused_at_start(
    transport: str, name: str
) -> None:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", name: "grpc"}
    finished = run_command([*SERVE, "--transport", transport], env)
    assert finished.returncode == 2
    assert finished.stderr == (
        f"error: bad setting {name}: the service exports traces over OTLP/HTTP with protobuf "
        "only, not 'grpc': set it to http/protobuf (or unset it) and point "
        "OTEL_EXPORTER_OTLP_ENDPOINT at the collector's OTLP/HTTP port (usually 4318)\n"
    )


def test_the_protocol_is_checked_only_for_the_services_own_exporter(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in OTLP_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    check_tracing_settings()  # no endpoint: nothing is exported
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf")
    check_tracing_settings()  # the traces' own protocol wins
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json")
    with pytest.raises(SettingsError) as caught:
        check_tracing_settings()
    assert str(caught.value) == (
        "bad setting OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: the service exports traces over "
        "OTLP/HTTP with protobuf only, not 'http/json': set it to http/protobuf (or unset it) "
        "and point OTEL_EXPORTER_OTLP_ENDPOINT at the collector's OTLP/HTTP port (usually 4318)"
    )


INSTALLED_FIRST = """
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mcp_runtime.observability.tracing import (
    check_tracing_settings,
    configure_tracing,
    start_call_span,
)

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
check_tracing_settings()
assert configure_tracing("traced")
span = start_call_span("hello")
assert span is not None
span.end("ok")
print([span.name for span in exporter.get_finished_spans()])
"""


def test_a_tracer_provider_installed_first_is_used() -> None:
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
    }
    finished = run_command([sys.executable, "-c", INSTALLED_FIRST], env)
    assert (finished.returncode, finished.stderr) == (0, "")
    assert finished.stdout == "['tools/call hello']\n"


def run_command(command: Sequence[str], env: dict[str, str]) -> "subprocess.CompletedProcess[str]":
    return subprocess.run(
        command,
        env={**os.environ, **env, "MCP_PORT": str(free_port())},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
