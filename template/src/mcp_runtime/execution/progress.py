"""Progress notifications of tool calls: :func:`report_progress`.

A tool reports how far it has come with ``report_progress(progress, total, message)``,
from an async tool or from a sync one (which runs in a tool thread). When the client
asked for progress (a ``_meta.progressToken`` in its ``tools/call``), each report is
sent as a ``notifications/progress`` on the call's own stream, in the order reported,
and all of them before the call's result. Otherwise, and outside a served call (a
tool called in-process with ``ainvoke``), a report sends nothing.

``progress`` and ``total`` are numbers, finite, and ``message`` a string or None,
else the report raises ``TypeError`` or ``ValueError``. Within a served call,
``progress`` must be greater than the call's previous report (the protocol says
progress increases), else the report raises ``ValueError`` naming both values,
whether or not the client asked for progress. A notification to a client that has
left is dropped (one DEBUG line) and the call answers as usual.
"""

import asyncio
import contextlib
import logging
import math
import threading
from collections import deque
from contextvars import ContextVar, Token
from types import TracebackType
from typing import Any

from mcp.types import ProgressToken

__all__ = ["report_progress", "reporting_progress"]

logger = logging.getLogger(__name__)

Report = tuple[float, float | None, str | None]


def report_progress(
    progress: float, total: float | None = None, message: str | None = None
) -> None:
    """Report the progress of the tool call being served (see the module's docstring)."""
    _check_number("progress", progress)
    if total is not None:
        _check_number("total", total)
    if message is not None and not isinstance(message, str):
        raise TypeError(
            f"report_progress: message must be a string or None, not {type(message).__name__}"
        )
    call = _current.get()
    if call is not None:
        call.report(progress, total, message)


def reporting_progress(context: Any) -> "CallProgress":
    """Serve :func:`report_progress` for the call of ``context`` (the SDK's, or None)."""
    return CallProgress(context, _progress_token(context))


class CallProgress:
    """The progress of one served call, as an async context manager around the call.

    Reports are checked in the reporting thread and sent by one task on the event
    loop, in order; leaving the block without an exception waits until they are sent.
    """

    __slots__ = (
        "context",
        "last",
        "loop",
        "open",
        "pending",
        "reset",
        "sender",
        "streamed",
        "thread",
        "token",
    )

    def __init__(self, context: Any, token: ProgressToken | None) -> None:
        self.context = context
        self.token = token
        self.last: float | None = None
        self.open = True
        self.reset: Token[CallProgress | None] | None = None
        self.sender: asyncio.Task[None] | None = None
        self.pending: deque[Report] = deque()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread = 0
        self.streamed = False  # a report was sent: the call's answer is a stream

    async def __aenter__(self) -> "CallProgress":
        if self.token is not None:
            self.loop = asyncio.get_running_loop()
            self.thread = threading.get_ident()
        self.reset = _current.set(self)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self.reset is not None:
            _current.reset(self.reset)
        self.open = False
        sender = self.sender
        if sender is None or sender.done():
            return
        if exc_type is None:
            await sender  # the result goes out after every report
        else:
            sender.cancel()

    def report(self, progress: float, total: float | None, message: str | None) -> None:
        """Check a report of this call and, when the client asked for progress, send it."""
        if self.last is not None and progress <= self.last:
            raise ValueError(
                f"report_progress: progress must increase with each report of a call, "
                f"but {progress} came after {self.last}"
            )
        self.last = progress
        loop = self.loop
        if loop is None or not self.open:
            return
        self.streamed = True
        if threading.get_ident() == self.thread:
            self._enqueue((progress, total, message))
        else:
            with contextlib.suppress(RuntimeError):  # the event loop has closed
                loop.call_soon_threadsafe(self._enqueue, (progress, total, message))

    def _enqueue(self, report: Report) -> None:
        loop = self.loop
        if not self.open or loop is None:
            return
        self.pending.append(report)
        if self.sender is None or self.sender.done():
            self.sender = loop.create_task(self._send())

    async def _send(self) -> None:
        while self.pending:
            progress, total, message = self.pending.popleft()
            try:
                await self.context.report_progress(progress, total, message)
            except Exception as exc:
                logger.debug("a progress notification was not sent (%s)", type(exc).__name__)
                self.pending.clear()
                self.loop = None  # the client has left: the call's later reports are dropped


_current: ContextVar[CallProgress | None] = ContextVar("mcp_runtime_progress", default=None)


def _check_number(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"report_progress: {name} must be a number, not {type(value).__name__}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"report_progress: {name} must be a finite number, not {value}")


def _progress_token(context: Any) -> ProgressToken | None:
    """The progress token of the request ``context`` serves; None when it has none."""
    if context is None:
        return None
    try:
        meta = context.request_context.meta
    except ValueError:  # a tool context outside a request
        return None
    return None if meta is None else meta.get("progress_token")
