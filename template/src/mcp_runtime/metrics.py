"""Prometheus metrics of the tool calls, and their exposition at ``GET /metrics``.

Recorded for each call (the tool's name is the only label besides the outcome; argument
values never are):

- ``mcp_tool_calls_total{tool,outcome}``: calls that have ended;
- ``mcp_tool_call_duration_seconds{tool,outcome}``: how long they took (a histogram);
- ``mcp_tool_calls_in_flight{tool}``: calls running now;
- ``mcp_tool_threads_running{tool}``: worker threads running a sync tool now, those
  whose call has ended included (a tool at its share of the threads, see
  ``MCP_TOOL_THREADS_PER_TOOL``, answers its calls ``busy``).

With several worker processes, ``serve`` sets ``PROMETHEUS_MULTIPROC_DIR`` before the
workers start: each worker writes its figures there, and a scrape of any worker merges
them all. Process metrics (CPU, memory, open files) are exposed with one process only:
they are not merged across workers.
"""

import os

from prometheus_client import (
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    make_asgi_app,
    multiprocess,
)
from starlette.types import ASGIApp

__all__ = [
    "CALL_METRICS",
    "DURATION_BUCKETS",
    "MULTIPROC_DIR",
    "CallMetrics",
    "mark_worker_dead",
    "metrics_app",
]

MULTIPROC_DIR = "PROMETHEUS_MULTIPROC_DIR"
"""The environment variable that puts prometheus-client in multiprocess mode."""

DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
"""Upper bounds of the duration histogram, in seconds: from 5 ms to the default call timeout."""

CALLS = Counter(
    "mcp_tool_calls", "Tool calls that have ended, by tool and outcome.", ["tool", "outcome"]
)
DURATION = Histogram(
    "mcp_tool_call_duration_seconds",
    "How long tool calls took, by tool and outcome.",
    ["tool", "outcome"],
    buckets=DURATION_BUCKETS,
)
CALLS_IN_FLIGHT = Gauge(
    "mcp_tool_calls_in_flight",
    "Tool calls running now, by tool.",
    ["tool"],
    multiprocess_mode="livesum",
)
THREADS_RUNNING = Gauge(
    "mcp_tool_threads_running",
    "Worker threads running a sync tool now, by tool, those whose call has ended included.",
    ["tool"],
    multiprocess_mode="livesum",
)


class CallMetrics:
    """Counts and times the tool calls of this process; does nothing while disabled.

    The labelled series are looked up once per tool (and outcome), then kept.
    """

    def __init__(self) -> None:
        self.enabled = True
        self._in_flight: dict[str, Gauge] = {}
        self._threads: dict[str, Gauge] = {}
        self._ended: dict[tuple[str, str], tuple[Counter, Histogram]] = {}

    def started(self, tool: str) -> None:
        """A call of ``tool`` has started."""
        if not self.enabled:
            return
        gauge = self._in_flight.get(tool)
        if gauge is None:
            gauge = self._in_flight[tool] = CALLS_IN_FLIGHT.labels(tool)
        gauge.inc()

    def finished(self, tool: str, outcome: str, seconds: float) -> None:
        """A call of ``tool`` has ended with ``outcome`` after ``seconds``."""
        if not self.enabled:
            return
        series = self._ended.get((tool, outcome))
        if series is None:
            series = self._ended[tool, outcome] = (
                CALLS.labels(tool, outcome),
                DURATION.labels(tool, outcome),
            )
        calls, duration = series
        calls.inc()
        duration.observe(seconds)
        gauge = self._in_flight.get(tool)
        if gauge is not None:
            gauge.dec()

    def threads_running(self, tool: str, change: int) -> None:
        """``change`` more (or fewer) worker threads run ``tool``; from any thread."""
        if not self.enabled:
            return
        gauge = self._threads.get(tool)
        if gauge is None:
            gauge = self._threads.setdefault(tool, THREADS_RUNNING.labels(tool))
        gauge.inc(change)


CALL_METRICS = CallMetrics()


def metrics_app() -> ASGIApp:
    """The ASGI app answering a scrape: this process's metrics, or every worker's.

    It answers in the Prometheus text format (OpenMetrics if the scraper asks for it).
    """
    path = os.environ.get(MULTIPROC_DIR)
    if not path:
        return make_asgi_app(REGISTRY)
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path)  # type: ignore[no-untyped-call]
    return make_asgi_app(registry)


def mark_worker_dead(pid: int) -> None:
    """Drop the in-flight figures of worker ``pid``, which has exited (its counts stay)."""
    path = os.environ.get(MULTIPROC_DIR)
    if path:
        multiprocess.mark_process_dead(pid, path)  # type: ignore[no-untyped-call]
