"""Tracing tool calls with OpenTelemetry.

:func:`configure_tracing` turns tracing on at start when the environment asks for it:

- a TracerProvider installed by something else (``opentelemetry-instrument``) is used;
- else, when ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) is
  set and ``OTEL_SDK_DISABLED`` is not true, spans go through a batch processor to the
  OTLP/HTTP exporter, configured by the SDK's own ``OTEL_*`` variables (headers, timeout,
  sampler, resource), with ``service.name`` = ``OTEL_SERVICE_NAME`` or the service's name;
  a protocol other than ``http/protobuf`` is refused (:class:`SettingsError`). The spans
  still queued are sent when the process exits;
- else tracing is off: :func:`start_call_span` returns None and a call pays nothing more.

Each tool call is one SERVER span, ``tools/call <tool>``, with the attributes of the
OpenTelemetry conventions for MCP and the call's outcome (``mcp_runtime.outcome``); an
outcome other than ``ok`` sets status ERROR and ``error.type`` (``tool_error`` for an
``isError`` answer, ``cancelled`` when the client cancelled). Its parent is the trace
context the request carries in ``params._meta`` (``traceparent``, ``tracestate``,
``baggage``, as the conventions for MCP say), else in its HTTP headers (the global
propagator), else the current context. The span is current while the tool runs, sync
tools included, so the tool's own spans are its children. Never an argument, a result,
a header value or an error message.
"""

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import Token

from opentelemetry import context, propagate, trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from mcp_runtime.config.settings import SettingsError
from mcp_runtime.observability.outcome import Outcome
from mcp_runtime.sdk.context import protocol_version, request_headers, request_id, request_meta

__all__ = [
    "CallSpan",
    "check_tracing_settings",
    "configure_tracing",
    "start_call_span",
    "use_tracer_provider",
]

OUTCOME = "mcp_runtime.outcome"
ENDPOINTS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
PROTOCOLS = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
SPOKEN_PROTOCOL = "http/protobuf"
TRACE_KEYS = ("traceparent", "tracestate", "baggage")

_tracer: trace.Tracer | None = None
"""The tracer of tool calls; None while tracing is off."""


class CallSpan:
    """The span of one tool call, current until :meth:`end` records the call's outcome."""

    __slots__ = ("span", "token")

    def __init__(self, span: trace.Span, token: Token[context.Context]) -> None:
        self.span = span
        self.token = token

    def end(self, outcome: Outcome) -> None:
        """Record ``outcome`` (ERROR status unless ``ok``), make the span not current, end it."""
        span = self.span
        span.set_attribute(OUTCOME, outcome)
        if outcome is not Outcome.OK:
            error = "cancelled" if outcome is Outcome.CANCELLED else "tool_error"
            span.set_attribute("error.type", error)
            span.set_status(Status(StatusCode.ERROR, outcome))
        context.detach(self.token)
        span.end()


def start_call_span(tool: str) -> CallSpan | None:
    """The span of a call of ``tool`` starting now, made current; None while tracing is off."""
    tracer = _tracer
    if tracer is None:
        return None
    parent = context.get_current()
    attributes = {
        "mcp.method.name": "tools/call",
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": tool,
    }
    served = request_id()
    if served is not None:
        attributes["jsonrpc.request.id"] = str(served)
    revision = protocol_version()
    if revision is not None:
        attributes["mcp.protocol.version"] = revision
    headers = request_headers()
    if headers is not None:
        attributes["network.transport"] = "tcp"
        attributes["network.protocol.name"] = "http"
    carrier = _meta_carrier() or headers
    if carrier is not None:
        parent = propagate.extract(carrier, context=parent)
    span = tracer.start_span(
        f"tools/call {tool}", context=parent, kind=SpanKind.SERVER, attributes=attributes
    )
    token = context.attach(trace.set_span_in_context(span, parent))
    return CallSpan(span, token)


def _meta_carrier() -> dict[str, str] | None:
    """The trace context the request carries in its ``_meta``; None when it has none."""
    meta = request_meta()
    if not meta or not isinstance(meta.get("traceparent"), str):
        return None
    return {key: value for key in TRACE_KEYS if isinstance(value := meta.get(key), str)}


def check_tracing_settings() -> None:
    """Raise :class:`SettingsError` if tracing would export over a protocol not spoken here."""
    if _installed_provider() is not None or not _export_asked():
        return
    name = next((name for name in PROTOCOLS if os.environ.get(name, "").strip()), None)
    protocol = os.environ[name].strip() if name else SPOKEN_PROTOCOL
    if protocol != SPOKEN_PROTOCOL:
        raise SettingsError(
            f"bad setting {name}: the service exports traces over OTLP/HTTP with "
            f"protobuf only, not {protocol!r}: set it to {SPOKEN_PROTOCOL} (or unset it) "
            "and point OTEL_EXPORTER_OTLP_ENDPOINT at the collector's OTLP/HTTP port "
            "(usually 4318)"
        )


def configure_tracing(service_name: str) -> bool:
    """Turn tracing of tool calls on as the environment says; return whether it is on.

    Called again in the same process, it keeps what the first call set up.
    Raises :class:`SettingsError` for an OTLP protocol the exporter does not speak.
    """
    global _tracer
    if _tracer is not None:
        return True
    provider = _installed_provider()
    if provider is None:
        if not _export_asked():
            return False
        check_tracing_settings()
        provider = _exporting_provider(service_name)
    _tracer = provider.get_tracer(__name__)
    return True


def _installed_provider() -> trace.TracerProvider | None:
    """The global tracer provider, if something has installed a real one."""
    provider = trace.get_tracer_provider()
    if isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
        return None
    return provider


def _export_asked() -> bool:
    """Whether the environment names an OTLP endpoint, and does not disable the SDK."""
    disabled = os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true"
    return not disabled and any(os.environ.get(name, "").strip() for name in ENDPOINTS)


def _exporting_provider(service_name: str) -> trace.TracerProvider:
    """The SDK's provider exporting over OTLP/HTTP, installed as the global provider."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import SERVICE_NAME, OTELResourceDetector, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    # The operator's OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over the default.
    resource = Resource.create({SERVICE_NAME: service_name}).merge(OTELResourceDetector().detect())
    provider = TracerProvider(resource=resource)  # flushes its spans when the process exits
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    return provider


@contextmanager
def use_tracer_provider(provider: trace.TracerProvider) -> Iterator[None]:
    """Trace tool calls with ``provider`` inside the block (for tests), whatever was set up."""
    global _tracer
    saved = _tracer
    _tracer = provider.get_tracer(__name__)
    try:
        yield
    finally:
        _tracer = saved
