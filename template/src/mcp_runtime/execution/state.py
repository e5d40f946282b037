"""What one service owns while it serves, in one object passed to its parts.

A :class:`ServiceState` holds a service's tool threads, its calls in flight, the
requests its HTTP front has open, its call metrics, its task engine and the store of the
data its tools keep, in this process.
The server's tools run with it (the gate binds each to the state it is given), the HTTP app answers
readiness and scrapes from it, and the process drains it at shutdown. Nothing of it is
global: two servers built in one process, as tests build them, share nothing.
"""

from typing import Protocol

from mcp_runtime.config.settings import ServiceSettings
from mcp_runtime.data.store import DataStore
from mcp_runtime.execution.in_flight import InFlight, OpenRequests
from mcp_runtime.execution.tool_threads import ToolThreads
from mcp_runtime.observability.metrics import CallMetrics

__all__ = ["ServiceState", "TaskService"]


class TaskService(Protocol):
    """What a process asks of its service's task engine
    (:class:`mcp_runtime.tasks.engine.TaskEngine`)."""

    def start(self) -> None:
        """Open the task store in the background, as the app starts."""

    def stop_taking(self) -> None:
        """Take no more tasks: the drain has begun. Safe to call from a signal handler."""

    async def close(self) -> None:
        """Stop this process's workers and close the store."""


class ServiceState:
    """One service's tool threads, calls in flight, open requests and call metrics.

    Sized as ``settings`` say (``MCP_TOOL_THREADS``, ``MCP_TOOL_THREADS_PER_TOOL``,
    ``MCP_METRICS``); without settings, with their defaults. Its tools' calls are served
    ``settings`` (:func:`mcp_runtime.config.settings.current_settings`); without
    settings, those of the environment.
    """

    __slots__ = ("calls", "data", "metrics", "requests", "settings", "tasks", "threads")

    def __init__(self, settings: ServiceSettings | None = None) -> None:
        self.settings = settings
        defaults = ServiceSettings.defaults() if settings is None else settings
        self.metrics = CallMetrics(enabled=defaults.metrics)
        self.threads = ToolThreads(
            defaults.tool_threads, defaults.tool_threads_per_tool, metrics=self.metrics
        )
        self.calls = InFlight()
        self.requests = OpenRequests()
        self.tasks: TaskService | None = None  # when the service serves task tools
        self.data: DataStore | None = None  # the data its tools keep
