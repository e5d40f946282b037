"""Alarms: callbacks due after a delay, many of them on one loop timer.

Each call over HTTP sets three: its body's read timeout, the start of the watch for its
client leaving, and its deadline. Nearly every call clears all three long before any is
due. An asyncio timer each would put a handle on the loop's heap and take it back, three
times a call; here an alarm is an entry in a heap of the loop's alarms, and the loop
holds a timer only for the earliest of them. With every call setting the same delays,
an alarm set later is due later, and setting it touches no timer.

An alarm rings on the loop's thread, in the loop's iteration at or after its time, in
the context (``contextvars``) it was set in, as a timer of ``loop.call_at`` does; a
callback that raises is reported to the loop's exception handler, as a timer's is.
"""

import asyncio
import contextvars
import heapq
import itertools
import weakref
from collections.abc import Callable
from types import TracebackType
from typing import Any

__all__ = ["Alarm", "Alarms", "TimeLimit", "alarm_after"]

COMPACT_AT = 64  # cleared alarms kept in the heap before it is rebuilt without them


class Alarm:
    """One callback due at a loop time; :meth:`clear` before then, and it never rings."""

    __slots__ = ("alarms", "callback", "cleared", "context")

    def __init__(self, alarms: "Alarms", callback: Callable[[], object]) -> None:
        self.alarms = alarms
        self.callback = callback
        self.cleared = False
        self.context = contextvars.copy_context()

    def clear(self) -> None:
        """Never ring (nothing, once it has rung or been cleared)."""
        if not self.cleared:
            self.cleared = True
            self.callback, self.context = _nothing, _NO_CONTEXT  # what they held may go now
            self.alarms.cleared_one()


def _nothing() -> None:
    pass


_NO_CONTEXT = contextvars.Context()


class Alarms:
    """The alarms of one event loop, in one heap, with a loop timer for the earliest.

    Holds no reference to its loop (the loop's timers hold it), so that a loop that is
    gone takes its alarms with it.
    """

    __slots__ = ("__weakref__", "armed", "cleared", "heap", "order", "timer")

    def __init__(self) -> None:
        self.heap: list[tuple[float, int, Alarm]] = []
        self.order = itertools.count()  # ties ring in the order they were set
        self.armed = float("inf")  # the time the loop's timer is set for
        self.timer = 0  # which timer is the one set: an earlier one replaces it
        self.cleared = 0  # cleared alarms still in the heap

    def set(
        self, loop: asyncio.AbstractEventLoop, delay: float, callback: Callable[[], object]
    ) -> Alarm:
        """An alarm ringing ``callback`` ``delay`` seconds from now on ``loop``."""
        alarm = Alarm(self, callback)
        when = loop.time() + delay
        heapq.heappush(self.heap, (when, next(self.order), alarm))
        if when < self.armed:
            self._arm(loop, when)
        return alarm

    def _arm(self, loop: asyncio.AbstractEventLoop, when: float) -> None:
        """Set the loop's timer for ``when``; a timer set before rings, and does nothing."""
        self.armed = when
        self.timer += 1
        loop.call_at(when, self.ring, loop, self.timer)

    def cleared_one(self) -> None:
        """Note an alarm cleared; rebuild the heap once most of it is cleared alarms."""
        self.cleared += 1
        if self.cleared > COMPACT_AT and 2 * self.cleared > len(self.heap):
            self.heap = [entry for entry in self.heap if not entry[2].cleared]
            heapq.heapify(self.heap)
            self.cleared = 0

    def ring(self, loop: asyncio.AbstractEventLoop, timer: int) -> None:
        """Ring every alarm that is due, then set a timer for the earliest one left;
        nothing, as a ``timer`` an earlier one replaced."""
        if timer != self.timer:
            return
        heap = self.heap
        now = loop.time()
        self.armed = float("inf")
        while heap and (heap[0][0] <= now or heap[0][2].cleared):
            _, _, alarm = heapq.heappop(heap)
            if alarm.cleared:
                self.cleared -= 1
                continue
            alarm.cleared = True
            callback, context = alarm.callback, alarm.context
            alarm.callback, alarm.context = _nothing, _NO_CONTEXT
            try:
                context.run(callback)
            except (SystemExit, KeyboardInterrupt):
                raise
            except BaseException as exc:
                loop.call_exception_handler(
                    {"message": "Exception in an alarm's callback", "exception": exc}
                )
        if heap:
            self._arm(loop, heap[0][0])


# The alarms of each loop, the loop's as its timers are: gone with it.
_of_loop: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Alarms]" = (
    weakref.WeakKeyDictionary()
)


def alarm_after(delay: float, callback: Callable[[], object]) -> Alarm:
    """An alarm ringing ``callback`` ``delay`` seconds from now on the running loop."""
    loop = asyncio.get_running_loop()
    alarms = _of_loop.get(loop)
    if alarms is None:
        alarms = _of_loop[loop] = Alarms()
    return alarms.set(loop, delay, callback)


class TimeLimit:
    """``asyncio.timeout(delay)`` on an alarm, for a plain ``with`` block in a task: when
    ``delay`` seconds pass first, the task is cancelled once, and leaving the block takes
    back that cancellation and raises :class:`TimeoutError` in its place; a cancellation
    from anything else goes on as it came."""

    __slots__ = ("alarm", "cancelling", "delay", "expired", "task")

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.expired = False
        self.alarm: Alarm | None = None
        self.task: asyncio.Task[Any] | None = None
        self.cancelling = 0

    def __enter__(self) -> "TimeLimit":
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("TimeLimit must be used inside a task")
        self.task = task
        self.cancelling = task.cancelling()
        self.alarm = alarm_after(self.delay, self._expire)
        return self

    def _expire(self) -> None:
        self.expired = True
        if self.task is not None:
            self.task.cancel()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self.alarm is not None:
            self.alarm.clear()
        task, self.task = self.task, None
        if (
            self.expired
            and task is not None
            and task.uncancel() <= self.cancelling
            and exc_type is asyncio.CancelledError
        ):
            raise TimeoutError from exc
