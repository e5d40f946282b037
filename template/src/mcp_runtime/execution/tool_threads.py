"""The worker threads that run sync tools, with a share of them for each tool.

A sync tool runs in one of at most ``size`` threads, with the context of the call
(so it reads the request's headers). When its call ends first (timeout, shutdown,
the client left), the call answers at once and the thread is *hung*: it keeps its
place until the function really returns, because Python cannot stop a thread. So a
hung tool is counted (:attr:`ToolThreads.busy`), logged, and reported by ``/readyz``
once every thread is taken (:attr:`ToolThreads.exhausted`).

Bulkheads: each tool runs in at most its share of the threads (``limit`` of
:meth:`ToolThreads.run`; by default :attr:`ToolThreads.share`, half the pool), so one
tool hung at its share leaves the other threads to every other tool. A call beyond
its tool's share, or finding every thread taken, waits for a thread within its own
deadline (:func:`never_started` tells, once it ends, that it never got one). A call
whose tool has every thread of its share hung (or that finds every thread of the pool
hung) is refused at once with :class:`ToolBusyError`, and so are the calls already
waiting when that happens.

Threads are daemons: a hung tool never keeps the process from exiting.
"""

import asyncio
import contextlib
import contextvars
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mcp_runtime.observability.metrics import CallMetrics

__all__ = ["ToolBusyError", "ToolThreads", "default_share", "never_started"]

logger = logging.getLogger(__name__)


class ToolBusyError(Exception):
    """A sync call refused at once: the threads it may use are all held by hung calls."""


@dataclass
class _Share:
    """One tool's part of the pool."""

    limit: int
    running: int = 0  # threads running the tool now, hung ones included
    hung: int = 0  # of those, threads whose call has ended


@dataclass(eq=False)
class _Job:
    name: str
    function: Callable[[], Any]
    context: contextvars.Context
    loop: asyncio.AbstractEventLoop
    future: "asyncio.Future[tuple[bool, Any]]"
    running: bool = False
    finished: bool = False
    abandoned: bool = False
    started: float = field(default_factory=time.perf_counter)


class ToolThreads:
    """A pool of daemon threads for sync tools, each tool held to its share of them.

    Written here because the thread pools of asyncio (``run_in_executor``) and anyio
    (``to_thread``) can neither hold a tool to its share of the threads, nor count the
    threads that hung calls keep, nor say at once that none is free.
    """

    def __init__(
        self, size: int = 40, share: int | None = None, *, metrics: CallMetrics | None = None
    ) -> None:
        self.size = size
        self.share = share if share is not None else default_share(size)
        self.metrics = metrics if metrics is not None else CallMetrics(enabled=False)
        self._lock = threading.Lock()
        self._wakeup = threading.Condition(self._lock)
        self._pending: deque[_Job] = deque()  # waiting for a thread, in arrival order
        self._shares: dict[str, _Share] = {}
        self._threads = 0
        self._idle = 0  # threads waiting for a job and not yet woken for one
        self._busy = 0
        self._hung = 0

    @property
    def busy(self) -> int:
        """Threads running a tool now, hung ones included."""
        return self._busy

    @property
    def exhausted(self) -> bool:
        """Whether every thread is taken, so a new sync call must wait."""
        return self._busy >= self.size

    def running(self, name: str) -> int:
        """Threads running the tool ``name`` now, hung ones included."""
        share = self._shares.get(name)
        return 0 if share is None else share.running

    async def run(self, name: str, function: Callable[[], Any], *, limit: int | None = None) -> Any:
        """``function()`` in a worker thread, the tool ``name`` holding at most ``limit`` threads.

        ``limit`` defaults to :attr:`share`. Raises :class:`ToolBusyError` when every
        thread the call may use is hung. The thread is abandoned if the call ends first.
        """
        loop = asyncio.get_running_loop()
        _never_started.set(False)
        job = _Job(name, function, contextvars.copy_context(), loop, loop.create_future())
        self._submit(job, min(limit or self.share, self.size))
        try:
            ok, value = await job.future
        except BaseException:
            _never_started.set(not self._abandon(job))
            raise
        if not ok:
            # Raised here rather than carried by the future: a GeneratorExit coming out
            # of an awaited future would skip the caller's handlers.
            raise value
        return value

    def _submit(self, job: _Job, limit: int) -> None:
        with self._lock:
            share = self._shares.get(job.name)
            if share is None:
                share = self._shares[job.name] = _Share(limit)
            share.limit = limit
            refusal = self._refusal(job.name, share)
            if refusal is not None:
                raise ToolBusyError(refusal)
            self._pending.append(job)
            if share.running >= share.limit:
                return  # it waits for one of its tool's threads to come free
            if self._idle:
                self._idle -= 1  # that thread is claimed: it takes a job when it wakes
                self._wakeup.notify()
            elif self._threads < self.size:
                self._threads += 1
                threading.Thread(target=self._work, name="mcp-tool", daemon=True).start()

    def _refusal(self, name: str, share: _Share) -> str | None:
        """Why a call of ``name`` cannot wait for a thread; None when it can. Under the lock."""
        if share.hung >= share.limit:
            if share.limit == 1:
                held = "the one thread it may use is held by an earlier call that has"
            else:
                held = (
                    f"all {share.limit} of the threads it may use are held by earlier calls "
                    "that have"
                )
            return f"Tool '{name}' is busy: {held} not returned. Try again later."
        if self._hung >= self.size:
            return (
                f"Tool '{name}' is busy: all {self.size} tool threads of the service are held "
                "by earlier calls that have not returned. Try again later."
            )
        return None

    def _next_job(self) -> _Job | None:
        """The first waiting job whose tool has room, taken off the queue. Under the lock."""
        for job in self._pending:
            if self._shares[job.name].running < self._shares[job.name].limit:
                self._pending.remove(job)
                return job
        return None

    def _work(self) -> None:
        while True:
            with self._lock:
                job = self._next_job()
                while job is None:
                    self._idle += 1
                    self._wakeup.wait()
                    job = self._next_job()
                share = self._shares[job.name]
                share.running += 1
                self._busy += 1
                job.running = True
            self.metrics.threads_running(job.name, 1)
            self._run(job, share)

    def _run(self, job: _Job, share: _Share) -> None:
        try:
            outcome: tuple[bool, Any] = (True, job.context.run(job.function))
        except BaseException as exc:  # the call decides what any exception means
            outcome = (False, exc)
        with self._lock:
            job.finished = True
            share.running -= 1
            self._busy -= 1
            hung = job.abandoned
            if hung:
                share.hung -= 1
                self._hung -= 1
        self.metrics.threads_running(job.name, -1)
        if hung:
            logger.info(
                "tool %s returned after its call had ended (%.1f s after it was called); "
                "its thread is free again",
                job.name,
                time.perf_counter() - job.started,
            )
        else:
            # RuntimeError: the event loop has closed, and nobody waits for this answer.
            with contextlib.suppress(RuntimeError):
                job.loop.call_soon_threadsafe(_settle, job.future, *outcome)

    def _abandon(self, job: _Job) -> bool:
        """The call of ``job`` has ended without its answer: let its thread go when it returns.

        Whether the job had started in a thread.
        """
        with self._lock:
            if job.finished or job.abandoned:
                return job.running
            job.abandoned = True
            if not job.running:
                with contextlib.suppress(ValueError):  # refused while it waited
                    self._pending.remove(job)
                return False
            share = self._shares[job.name]
            share.hung += 1
            self._hung += 1
            refused = self._refuse_waiting()
        logger.info(
            "tool %s is still running after its call ended: its thread stays taken until the "
            "function returns (%d of %d threads busy)",
            job.name,
            self._busy,
            self.size,
        )
        if share.hung == share.limit:
            logger.warning(
                "tool %s holds all %d of its threads with calls that have ended and not "
                "returned: its calls answer that it is busy until one returns",
                job.name,
                share.limit,
            )
        if self.exhausted:
            logger.warning(
                "all %d tool threads are taken by sync tools still running: readiness "
                "answers 503 until one returns",
                self.size,
            )
        for waiting, reason in refused:
            waiting.loop.call_soon_threadsafe(_settle, waiting.future, False, ToolBusyError(reason))
        return True

    def _refuse_waiting(self) -> list[tuple[_Job, str]]:
        """Take off the queue each waiting job that can no longer get a thread. Under the lock."""
        refused = []
        for waiting in list(self._pending):
            reason = self._refusal(waiting.name, self._shares[waiting.name])
            if reason is not None:
                self._pending.remove(waiting)
                waiting.abandoned = True
                refused.append((waiting, reason))
        return refused


_never_started: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "mcp_runtime_never_started", default=False
)


def never_started() -> bool:
    """Whether the last sync call of this task ended while it still waited for a thread."""
    return _never_started.get()


def default_share(size: int) -> int:
    """The threads one tool may hold by default: half the pool, at least one."""
    return max(1, size // 2)


def _settle(future: "asyncio.Future[tuple[bool, Any]]", ok: bool, value: Any) -> None:
    if not future.done():
        future.set_result((ok, value))
