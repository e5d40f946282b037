"""This process's workers of the service's docket, kept taking tasks, and the leases of
the tasks they run.

A process runs one Docket worker, which takes tasks from the docket's stream and runs
them. Two behaviours of Docket 0.27 are not what a service needs, each held by a test of
Docket alone in ``tests/runtime/test_docket_behaviours.py`` (when one fails, Docket no
longer behaves so, and its workaround here goes):

- After an error of its polling loop (its read of the stream, its redelivery sweep, an
  acknowledgement), Docket's worker takes no task until the tasks it runs have ended,
  which for a task of hours is hours, and drops its heartbeat meanwhile
  (``test_after_a_store_error_a_worker_takes_no_task_until_its_running_tasks_end``).
  :meth:`ProcessWorkers.keep_taking` then starts another worker of the process, and
  stops the first once it beats again.
- In that same wait, it stops renewing its running tasks' leases, while the tasks run
  on; another process would then take them over and run them twice
  (``test_after_a_store_error_a_worker_stops_renewing_the_leases_of_its_running_tasks``).
  :meth:`ProcessWorkers.renew_leases` renews the leases of the tasks this process runs.
"""

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta

from docket import Docket, Worker

from mcp_runtime.tasks.store import STORE_ERRORS

__all__ = ["ProcessWorkers"]

logger = logging.getLogger(__name__)

Held = Iterable[tuple[bytes | str, str]]
"""The stream messages of the tasks a process runs, each with the worker that holds it."""


class ProcessWorkers:
    """The workers of this process on ``docket``, named after ``name``: each runs up to
    ``concurrency`` tasks at once and holds each for ``lease`` seconds between renewals;
    ``slots`` bounds the commands they send the store at once."""

    def __init__(
        self,
        docket: Docket,
        name: str,
        *,
        concurrency: int,
        lease: float,
        slots: asyncio.Semaphore,
    ) -> None:
        self.docket = docket
        self.name = name
        self.concurrency = concurrency
        self.lease = lease
        self.slots = slots
        self.runs: dict[str, asyncio.Task[None]] = {}  # each worker's run_forever, by name
        self.taking = ""  # the name of the worker that takes tasks
        self.begun: dict[str, float] = {}  # when each began (time.monotonic)

    async def add(self, stack: contextlib.AsyncExitStack) -> None:
        """Start a worker, entered on ``stack``: from now on, the one that takes tasks."""
        name = self.name if not self.begun else f"{self.name}.{len(self.begun)}"
        worker = Worker(
            self.docket,
            name=name,
            concurrency=self.concurrency,
            redelivery_timeout=timedelta(seconds=self.lease),
            schedule_automatic_tasks=False,
        )
        await stack.enter_async_context(worker)
        run = asyncio.get_running_loop().create_task(worker.run_forever(), name="mcp-task-worker")
        self.runs[name] = run
        self.taking = name
        self.begun[name] = time.monotonic()

    async def keep_taking(self, stack: contextlib.AsyncExitStack) -> None:
        """Keep a worker taking tasks, when the one that takes them has stopped beating its
        heartbeat after a store error (see the module's docstring); call every two
        heartbeats or so."""
        try:
            async with self.slots:
                workers = await self.docket.workers()
        except STORE_ERRORS:
            return
        beating = {worker.name: worker.last_seen for worker in workers}
        window = 3 * self.docket.heartbeat_interval
        stale = datetime.now(UTC) - window
        for name, run in list(self.runs.items()):
            fresh = name in beating and beating[name] > stale
            begun = time.monotonic() - self.begun[name] > window.total_seconds()
            if run.done():
                del self.runs[name]
            elif name != self.taking and fresh:
                stop(run)  # back from its outage: the newer one takes tasks
            elif name == self.taking and not fresh and begun:
                logger.warning(
                    "the task worker stopped taking tasks after a store error, until its "
                    "running tasks end: another one takes them meanwhile"
                )
                await self.add(stack)

    def stop_taking(self) -> None:
        """Take no more tasks; the tasks running go on. Safe to call from a signal handler."""
        for run in list(self.runs.values()):
            if not run.done():
                run.get_loop().call_soon_threadsafe(stop, run)

    async def stop(self, seconds: float) -> None:
        """Stop every worker: they take no more tasks, and the tasks they run end, or are
        stopped once ``seconds`` have passed."""
        runs = list(self.runs.values())
        for run in runs:
            stop(run)
        if runs:
            await asyncio.wait(runs, timeout=seconds)
        for run in runs:
            if not run.done():
                run.cancel()  # a second cancel stops the tasks still running
            with contextlib.suppress(BaseException):
                await run
        self.runs.clear()

    async def renew_leases(self, held: Callable[[], Held]) -> None:
        """Renew, four times a lease, the leases of the tasks ``held()`` names, whatever
        Docket's worker does."""
        docket = self.docket
        while True:
            await asyncio.sleep(self.lease / 4)
            by_worker: dict[str, list[bytes | str]] = {}
            for message, worker in held():
                if message:
                    by_worker.setdefault(worker, []).append(message)
            for worker, messages in by_worker.items():
                try:
                    async with self.slots, docket.redis() as redis:
                        await redis.xclaim(
                            name=docket.stream_key,
                            groupname=docket.worker_group_name,
                            consumername=worker,
                            min_idle_time=0,
                            message_ids=messages,
                            idle=0,
                            justid=True,
                        )
                except STORE_ERRORS as exc:
                    logger.debug("the leases of running tasks were not renewed (%s)", exc)


def stop(run: "asyncio.Task[None]") -> None:
    """Stop the worker whose ``run_forever`` is ``run`` taking tasks, once: Docket's worker
    stops reading, and waits for its tasks."""
    if not run.done() and run.cancelling() == 0:
        run.cancel()
