"""The worker threads that run sync tools.

A sync tool runs in one of at most ``size`` threads, with the context of the call
(so it reads the request's headers). When its call ends first (timeout, shutdown,
the client left), the call answers at once and the thread is abandoned: it keeps
its place in the pool until the function really returns, because Python cannot
stop a thread. So a hung tool is counted (:attr:`ToolThreads.busy`), logged, and
reported by ``/readyz`` once every thread is taken (:attr:`ToolThreads.exhausted`);
calls that find the pool full wait for a thread within their own deadline.

Threads are daemons: a hung tool never keeps the process from exiting.
"""

import asyncio
import contextlib
import contextvars
import functools
import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["TOOL_THREADS", "ToolThreads"]

logger = logging.getLogger(__name__)


@dataclass
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
    """A pool of daemon threads for sync tools, counting each thread until it is free."""

    def __init__(self, size: int = 40) -> None:
        self.size = size
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0
        self._idle = 0
        self._queued = 0
        self._busy = 0

    @property
    def busy(self) -> int:
        """Threads running a tool now, abandoned ones included."""
        return self._busy

    @property
    def exhausted(self) -> bool:
        """Whether every thread is taken, so a new sync call must wait."""
        return self._busy >= self.size

    def resize(self, size: int) -> None:
        """Allow ``size`` threads from now on (threads already started stay)."""
        self.size = size

    async def run(
        self, name: str, function: Callable[..., Any], /, *args: Any, **kwargs: Any
    ) -> Any:
        """``function(*args, **kwargs)`` in a worker thread; abandon the thread if the call ends."""
        loop = asyncio.get_running_loop()
        job = _Job(
            name=name,
            function=functools.partial(function, *args, **kwargs),
            context=contextvars.copy_context(),
            loop=loop,
            future=loop.create_future(),
        )
        self._submit(job)
        try:
            ok, value = await job.future
        except BaseException:
            with self._lock:
                job.abandoned = not job.finished
                running = job.running and job.abandoned
            if running:
                logger.info(
                    "tool %s is still running after its call ended: its thread stays taken "
                    "until the function returns (%d of %d threads busy)",
                    name,
                    self._busy,
                    self.size,
                )
                if self.exhausted:
                    logger.warning(
                        "all %d tool threads are taken by sync tools still running: new sync "
                        "calls wait for one to return (readiness answers 503 meanwhile)",
                        self.size,
                    )
            raise
        if not ok:
            # Raised here rather than carried by the future: a GeneratorExit coming out
            # of an awaited future would skip the caller's handlers.
            raise value
        return value

    def _submit(self, job: _Job) -> None:
        # Every job put on the queue is taken by exactly one thread: an idle one
        # (claimed here), or the next one to finish (when the pool is full).
        with self._lock:
            if self._idle:
                self._idle -= 1
            elif self._threads < self.size:
                self._threads += 1
                threading.Thread(
                    target=self._work, args=(job,), name="mcp-tool", daemon=True
                ).start()
                return
            else:
                self._queued += 1
        self._jobs.put(job)

    def _work(self, job: _Job) -> None:
        while True:
            self._run(job)
            with self._lock:
                if self._queued:
                    self._queued -= 1
                else:
                    self._idle += 1
            job = self._jobs.get()

    def _run(self, job: _Job) -> None:
        with self._lock:
            if job.abandoned:
                return
            job.running = True
            self._busy += 1
        try:
            outcome: tuple[bool, Any] = (True, job.context.run(job.function))
        except BaseException as exc:  # the call decides what any exception means
            outcome = (False, exc)
        with self._lock:
            job.finished = True
        if job.abandoned:
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
        with self._lock:
            self._busy -= 1


def _settle(future: "asyncio.Future[tuple[bool, Any]]", ok: bool, value: Any) -> None:
    if not future.done():
        future.set_result((ok, value))


TOOL_THREADS = ToolThreads()
