"""Prometheus metrics of the tool calls, and their exposition at ``GET /metrics``.

Each call is counted, timed and gauged in flight by tool and outcome, and each sync
tool's running threads are gauged by tool; argument values never label a series. The
series, and how several workers merge theirs, are in the service's
``docs/observability.md``.
"""

import os
import time
from bisect import bisect_left
from collections.abc import Iterator
from itertools import accumulate

from prometheus_client import (
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    make_asgi_app,
    multiprocess,
)
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString
from starlette.types import ASGIApp

from mcp_runtime.observability.outcome import Outcome

__all__ = [
    "DURATION_BUCKETS",
    "MULTIPROC_DIR",
    "CallMetrics",
    "LocalCalls",
    "ProcessMetrics",
    "SharedCalls",
    "mark_worker_dead",
]

MULTIPROC_DIR = "PROMETHEUS_MULTIPROC_DIR"
"""The environment variable that puts prometheus-client in multiprocess mode."""

NO_CREATED = "PROMETHEUS_DISABLE_CREATED_SERIES"
"""The environment variable that leaves out the ``_created`` series (prometheus-client's)."""

DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
"""Upper bounds of the duration histogram, in seconds: from 5 ms to the default call timeout."""

CALLS_HELP = "Tool calls that have ended, by tool and outcome."
DURATION_HELP = "How long tool calls took, by tool and outcome."
IN_FLIGHT_HELP = "Tool calls running now, by tool."


class Ended:
    """The calls of one tool that ended with one outcome: how many, and how long they took."""

    __slots__ = ("buckets", "count", "created", "seconds")

    def __init__(self) -> None:
        self.count = 0.0
        self.seconds = 0.0
        self.buckets = [0.0] * (len(DURATION_BUCKETS) + 1)  # the last one: +Inf
        self.created = time.time()


class LocalCalls(Collector):
    """The call metrics of one process, kept as plain numbers and read at each scrape.

    Updated and scraped from the event loop's thread (a scrape copies what it reads),
    without the lock each prometheus-client value takes; the samples are those the
    prometheus-client metrics of the same names would expose, ``_created`` included.
    """

    def __init__(self) -> None:
        self.in_flight: dict[str, float] = {}
        self.ended: dict[tuple[str, str], Ended] = {}

    def started(self, tool: str) -> None:
        self.in_flight[tool] = self.in_flight.get(tool, 0.0) + 1.0

    def finished(self, tool: str, outcome: Outcome, seconds: float) -> None:
        ended = self.ended.get((tool, outcome))
        if ended is None:
            ended = self.ended[tool, outcome] = Ended()
        ended.count += 1.0
        ended.seconds += seconds
        ended.buckets[bisect_left(DURATION_BUCKETS, seconds)] += 1.0
        running = self.in_flight.get(tool)
        if running is not None:
            self.in_flight[tool] = running - 1.0

    def describe(self) -> Iterator[Metric]:
        """The metric families, without samples (their names guard against duplicates)."""
        yield CounterMetricFamily("mcp_tool_calls", CALLS_HELP, labels=["tool", "outcome"])
        yield HistogramMetricFamily(
            "mcp_tool_call_duration_seconds", DURATION_HELP, labels=["tool", "outcome"]
        )
        yield GaugeMetricFamily("mcp_tool_calls_in_flight", IN_FLIGHT_HELP, labels=["tool"])

    def collect(self) -> Iterator[Metric]:
        created = os.environ.get(NO_CREATED, "false").lower() not in ("true", "1", "t")
        ended = list(self.ended.items())
        calls = CounterMetricFamily("mcp_tool_calls", CALLS_HELP, labels=["tool", "outcome"])
        duration = HistogramMetricFamily(
            "mcp_tool_call_duration_seconds", DURATION_HELP, labels=["tool", "outcome"]
        )
        for labels, series in ended:
            calls.add_metric(labels, series.count, created=series.created if created else None)
        yield calls
        bounds = [*map(floatToGoString, DURATION_BUCKETS), "+Inf"]
        for labels, series in ended:
            buckets = [*accumulate(series.buckets)]
            duration.add_metric(labels, list(zip(bounds, buckets, strict=True)), series.seconds)
            if created:
                labelled = dict(zip(("tool", "outcome"), labels, strict=True))
                duration.add_sample(f"{duration.name}_created", labelled, series.created)
        yield duration
        in_flight = GaugeMetricFamily("mcp_tool_calls_in_flight", IN_FLIGHT_HELP, labels=["tool"])
        for tool, running in list(self.in_flight.items()):
            in_flight.add_metric([tool], running)
        yield in_flight


class SharedCalls:
    """The call metrics of one of several worker processes, in prometheus-client's
    multiprocess files, which a scrape of any worker merges."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        labels = ["tool", "outcome"]
        self.calls = Counter("mcp_tool_calls", CALLS_HELP, labels, registry=registry)
        self.duration = Histogram(
            "mcp_tool_call_duration_seconds",
            DURATION_HELP,
            labels,
            buckets=DURATION_BUCKETS,
            registry=registry,
        )
        self.gauge = Gauge(
            "mcp_tool_calls_in_flight",
            IN_FLIGHT_HELP,
            ["tool"],
            multiprocess_mode="livesum",
            registry=registry,
        )
        self.in_flight: dict[str, Gauge] = {}
        self.ended: dict[tuple[str, str], tuple[Counter, Histogram]] = {}

    def started(self, tool: str) -> None:
        gauge = self.in_flight.get(tool)
        if gauge is None:
            gauge = self.in_flight[tool] = self.gauge.labels(tool)
        gauge.inc()

    def finished(self, tool: str, outcome: Outcome, seconds: float) -> None:
        series = self.ended.get((tool, outcome))
        if series is None:
            series = self.ended[tool, outcome] = (
                self.calls.labels(tool, outcome),
                self.duration.labels(tool, outcome),
            )
        calls, duration = series
        calls.inc()
        duration.observe(seconds)
        gauge = self.in_flight.get(tool)
        if gauge is not None:
            gauge.dec()


THREADS_HELP = (
    "Worker threads running a sync tool now, by tool, those whose call has ended included."
)


class ProcessMetrics(Collector):
    """prometheus-client's registry of the process: its CPU, memory and garbage collector
    figures, and any metric a toolset registers there, served with the call metrics."""

    def collect(self) -> Iterator[Metric]:
        yield from REGISTRY.collect()


class CallMetrics:
    """The call metrics of one service in this process; they record nothing while disabled.

    In one process the figures are :class:`LocalCalls`, scraped from :attr:`registry`
    after the process's own (:class:`ProcessMetrics`); with several workers
    (``PROMETHEUS_MULTIPROC_DIR`` set when the process starts) they are
    :class:`SharedCalls`, in the files that a scrape of any worker merges.
    """

    def __init__(self, *, enabled: bool = True) -> None:
        self.enabled = enabled
        self.shared = bool(os.environ.get(MULTIPROC_DIR))
        self.registry = CollectorRegistry()
        self.calls: LocalCalls | SharedCalls
        if self.shared:
            self.calls = SharedCalls(registry=None)
        else:
            self.registry.register(ProcessMetrics())
            self.calls = LocalCalls()
            self.registry.register(self.calls)
        self.threads = Gauge(
            "mcp_tool_threads_running",
            THREADS_HELP,
            ["tool"],
            multiprocess_mode="livesum",
            registry=None if self.shared else self.registry,
        )
        self._threads: dict[str, Gauge] = {}

    def started(self, tool: str) -> None:
        """A call of ``tool`` has started."""
        if self.enabled:
            self.calls.started(tool)

    def finished(self, tool: str, outcome: Outcome, seconds: float) -> None:
        """A call of ``tool`` has ended with ``outcome`` after ``seconds``."""
        if self.enabled:
            self.calls.finished(tool, outcome, seconds)

    def threads_running(self, tool: str, change: int) -> None:
        """``change`` more (or fewer) worker threads run ``tool``; from any thread."""
        if not self.enabled:
            return
        gauge = self._threads.get(tool)
        if gauge is None:
            gauge = self._threads.setdefault(tool, self.threads.labels(tool))
        gauge.inc(change)

    def app(self) -> ASGIApp:
        """The ASGI app answering a scrape: these metrics, or every worker's.

        It answers in the Prometheus text format (OpenMetrics if the scraper asks for it).
        """
        path = os.environ.get(MULTIPROC_DIR)
        if not self.shared or not path:
            return make_asgi_app(self.registry)
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry, path)  # type: ignore[no-untyped-call]
        return make_asgi_app(registry)


def mark_worker_dead(pid: int) -> None:
    """Drop the in-flight figures of worker ``pid``, which has exited (its counts stay)."""
    path = os.environ.get(MULTIPROC_DIR)
    if path:
        multiprocess.mark_process_dead(pid, path)  # type: ignore[no-untyped-call]
