"""The tool calls this process is serving: counted, cut short at shutdown, cancelled by clients.

Each call runs inside :meth:`InFlight.call`. On SIGTERM the server drains
(``draining``): it takes no new calls and waits for :attr:`InFlight.count` to reach
zero; when the grace period ends first, :meth:`InFlight.cut_short` stops the calls
still running, and each answers ``isError`` with the outcome ``shutdown``.

A client's ``notifications/cancelled`` that the MCP session cannot deliver (stateless
streamable HTTP: each POST has a session of its own) reaches the call through
:meth:`InFlight.cancel`, by the caller and the JSON-RPC id of the call's request; the
call answers ``isError`` with the outcome ``cancelled``.
"""

import asyncio
import logging
from collections.abc import Callable
from typing import Any, Literal

from mcp.types import RequestId

from mcp_runtime.execution.alarms import Alarm, alarm_after

__all__ = ["InFlight", "OpenRequests", "Owner", "RunningCall", "StopReason"]

logger = logging.getLogger(__name__)

StopReason = Literal["shutdown", "client"]
"""Who stopped a call before its deadline: shutdown (its grace ended), or its client."""
Owner = str
"""Who made a call: its caller's digest (:func:`mcp_runtime.auth.oauth.owner_digest`)."""


class RunningCall:
    """One call in flight, as the context its tool runs in: its deadline, and who stopped
    it (``shutdown``, ``client``).

    Stopping cancels the task the call runs in, once, as :func:`asyncio.timeout` does (so
    a tool's shielded cleanup runs to its end); leaving the ``with`` block takes back that
    cancellation, and only that one, so a cancellation from anything else (the SDK's own,
    an enclosing scope's) goes on as it came. A call that was stopped answers as stopped
    even when its tool caught the cancellation and returned a value after all.
    """

    __slots__ = (
        "_calls",
        "_cancelling",
        "_deadline",
        "_task",
        "cancel_requested",
        "owner",
        "request_id",
        "stopped_by",
        "timeout",
        "tool",
    )

    def __init__(
        self,
        tool: str,
        owner: Owner,
        request_id: RequestId | None,
        timeout: float | None,
        calls: set["RunningCall"],
    ) -> None:
        self.tool = tool
        self.owner = owner
        self.request_id = request_id
        self.timeout = timeout
        self.stopped_by: StopReason | None = None
        self.cancel_requested = False
        self._calls = calls
        self._task: asyncio.Task[Any] | None = None
        self._deadline: Alarm | None = None
        self._cancelling = 0

    def __enter__(self) -> "RunningCall":
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("a tool call runs in an asyncio task")
        self._task = task
        self._cancelling = task.cancelling()
        if self.timeout is not None:
            self._deadline = alarm_after(self.timeout, self._cancel)
        self._calls.add(self)
        if self.stopped_by is not None:
            self._cancel()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *_: object) -> bool:
        self._calls.discard(self)
        if self._deadline is not None:
            self._deadline.clear()
        task, self._task = self._task, None
        if not self.cancel_requested or task is None:
            return False
        return task.uncancel() <= self._cancelling and exc_type is asyncio.CancelledError

    def _cancel(self) -> None:
        if self._task is not None and not self.cancel_requested:
            self.cancel_requested = True
            self._task.cancel()

    def stop(self, by: StopReason) -> None:
        """Cancel the call; the first to stop it is the one its answer names."""
        if self.stopped_by is None:
            self.stopped_by = by
        self._cancel()

    def stopped(self, by: StopReason) -> bool:
        """Whether ``by`` stopped the call before it had its value."""
        return self.cancel_requested and self.stopped_by == by

    def timed_out(self) -> bool:
        """Whether the call's deadline passed before it had its value (and nothing else
        stopped it first)."""
        return self.cancel_requested and self.stopped_by is None


class InFlight:
    """The calls in flight in this process, and where shutdown stands."""

    def __init__(self) -> None:
        self._calls: set[RunningCall] = set()
        self._when_draining: list[Callable[[], None]] = []
        self.draining = False
        self.stopping = False

    @property
    def count(self) -> int:
        """How many tool calls are running now."""
        return len(self._calls)

    def call(
        self,
        tool: str = "",
        owner: Owner = "anonymous",
        request_id: RequestId | None = None,
        timeout: float | None = None,
    ) -> RunningCall:
        """The context to run one call of ``tool`` in, made by ``owner`` in the request
        ``request_id``, cut short after ``timeout`` seconds (None: never)."""
        call = RunningCall(tool, owner, request_id, timeout, self._calls)
        if self.stopping:
            call.stop("shutdown")
        return call

    def begin_draining(self) -> None:
        """Take no new calls (readiness answers 503); the calls in flight go on. The first
        time, call what :meth:`on_draining` was given (safe from a signal handler)."""
        if self.draining:
            return
        self.draining = True
        for call in self._when_draining:
            call()

    def on_draining(self, call: Callable[[], None]) -> None:
        """Call ``call`` when draining begins (it must be safe to call from a signal handler)."""
        self._when_draining.append(call)

    def cut_short(self) -> None:
        """Stop every call still running; call from the event loop's thread."""
        self.stopping = True
        for call in list(self._calls):
            call.stop("shutdown")

    def cancel(self, owner: Owner, request_id: RequestId) -> bool:
        """Cancel the call ``owner`` made in the request ``request_id``; whether one was.

        Only a call that nothing else matches is cancelled: without a verified caller,
        two clients may both have a call with the same id, and then neither is.
        Call from the event loop's thread.
        """
        matching = [
            call
            for call in self._calls
            if call.request_id == request_id
            and call.owner == owner
            and type(call.request_id) is type(request_id)
        ]
        if len(matching) > 1:
            logger.info(
                "a client's cancel matches %d calls in flight (the same request id, and no "
                "verified caller to tell them apart): none of them is cancelled",
                len(matching),
            )
            return False
        if not matching:
            logger.debug("a client cancelled a request that no call in flight here serves")
            return False
        [call] = matching
        call.stop("client")
        return True


class OpenRequests:
    """How many requests the HTTP front has passed on to the SDK and not yet seen answered.

    GET streams are not counted: they last as long as the client keeps them open.
    Shutdown waits for this count (and the calls in flight) to reach zero.
    """

    def __init__(self) -> None:
        self.count = 0
