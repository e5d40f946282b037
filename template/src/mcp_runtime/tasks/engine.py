"""The task engine: tasks kept and run on Docket (``pydocket``), outliving their process.

Every process of a service is a worker of one docket (``mcp-tasks:<service>``), on
``memory://`` (embedded, one process) or on Redis (every process and replica). A task
is one Docket task, keyed by the task's id, whose only argument is that id. What a run
of it needs (its caller, the request headers its tool declares, its arguments, the
protocol revision) is kept in the task's record, sealed with the service's key
(:mod:`.sealing`), as are its last checkpoint and, once it has ended, its result. In
clear the store holds only the task's id, tool, owner digest, status, status message
and times. The record is the engine's own, not Docket's state of an execution, which
Docket keeps for one ``execution_ttl`` of the whole docket, with the task's arguments
and result pickled in clear, and gives to whoever knows its key (each held by a test of
Docket alone in ``tests/runtime/test_docket_behaviours.py``): a Docket task's only
argument is the task's id, and its function returns nothing.

Docket leases each running task to the process running it, which renews the lease
(``MCP_TASK_LEASE``): when that process stops without ending the task (``kill -9``, a
lost machine), the lease runs out and another process takes the task over and runs it
again, from its tool's last checkpoint (:mod:`mcp_runtime.execution.checkpoints`). A
process that shuts down stops taking tasks when its drain begins and, at the end of its
grace, hands the tasks it still runs on at once.

A task ends ``failed`` only when it was taken over more than ``MCP_TASK_MAX_RESUMES``
times (a task that kills its process each time), or on ``memory://`` when its process
stopped; never because a process looked stopped. Once ``MCP_TASK_TIMEOUT`` has passed
since its creation, whichever runs it had, it answers ``isError`` as a plain call that
times out does. Its first end is its last. Once ended, the record is kept for the
task's ttl, then removed.

The parts: the keys (:mod:`.keys`), the records and their scripts (:mod:`.store`), the
runs (:mod:`.runs`), this process's workers and their leases (:mod:`.workers`), the
notices of ends and stops (:mod:`.notices`), creations stored together
(:mod:`.batches`); this module puts them together and answers the task methods.
"""

import asyncio
import contextlib
import importlib
import logging
import os
import secrets
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from mcp_runtime.config.stores import reaching
from mcp_runtime.contract.served_tool import ContractTool
from mcp_runtime.observability.errors import ERROR_ID, logged_error
from mcp_runtime.tasks.batches import GroupCommit
from mcp_runtime.tasks.keys import TaskKeys
from mcp_runtime.tasks.notices import READ_SECONDS, TaskNotices
from mcp_runtime.tasks.record import TaskRecord
from mcp_runtime.tasks.request import TaskRequest
from mcp_runtime.tasks.runs import BROKEN, FLUSH_SECONDS, STOPPED, TaskRunner
from mcp_runtime.tasks.sealing import Seal, SealError
from mcp_runtime.tasks.settings import EngineSettings
from mcp_runtime.tasks.store import (
    STATUS_FIELDS,
    STORE_ERRORS,
    Creation,
    TaskStore,
    TaskStoreError,
    pooled,
)

__all__ = [
    "EngineSettings",
    "TaskEngine",
    "TaskLimitError",
    "TaskRequest",
    "TaskStoreError",
]

logger = logging.getLogger(__name__)

if TYPE_CHECKING:
    # Docket is imported when the store first opens (:meth:`TaskEngine._docket_opened`): a
    # process that serves no task yet, and every command that only builds the server,
    # never does.
    from docket import Docket

    from mcp_runtime.tasks.workers import ProcessWorkers

STORE_SLOTS = 32
"""The store commands of requests (creating, reading, cancelling tasks) in flight at once
in one process: a burst of requests waits for a slot instead of emptying the store
client's pool of connections."""
CREATIONS_AT_ONCE = 64
"""The most creations stored in one batch (each holds its sealed request, arguments
included, in the batch's pipeline)."""
STOP_SECONDS = 1.0
"""How long a cancel waits for its task's run to stop (and run its cleanup)."""

CANCELLED = "The task was cancelled."
UNREADABLE = (
    "The task's result opens with none of the service's keys (MCP_TASK_KEYS: the key that "
    "sealed it was dropped before the task expired), so it cannot be read: call the tool "
    "again."
)
AT_THE_CAP = (
    "This caller already has {cap} tasks running, as many as the service allows one caller "
    "(MCP_MAX_TASKS_PER_CALLER): wait for one to end, or cancel one with tasks/cancel, then "
    "call again."
)

KEY_VALUE_CHECKS = "PY_KEY_VALUE_DISABLE_BEARTYPE"
"""The switch of the run-time type checks Docket's key-value store (py-key-value) makes
of the calls into it."""


def import_docket() -> None:
    """Import Docket, with its key-value store's run-time type checks off unless
    ``PY_KEY_VALUE_DISABLE_BEARTYPE`` says otherwise: they check Docket's own calls, never a
    service's code, and cost each process a tenth of a second at the store's opening and
    a little on each store call."""
    os.environ.setdefault(KEY_VALUE_CHECKS, "true")
    importlib.import_module("docket")


class TaskLimitError(Exception):
    """The caller has as many open tasks as the service allows one caller."""


def store_failed(exc: BaseException, busy: bool) -> TaskStoreError:
    """A :class:`TaskStoreError` for ``exc``, logged (without the request's values)."""
    what = "had no free connection" if busy else "did not answer"  # a full pool: it is there
    error_id = logged_error(
        logger, "the task store %s (error id %s): %s: %s", what, ERROR_ID, type(exc).__name__, exc
    )
    return TaskStoreError(error_id, busy=busy)


class TaskEngine:
    """The tasks of one service, as seen from this process (see the module's docstring).

    A service with no task tool has no engine. On Redis, the store opens when the app
    starts (:meth:`start`), so that the process takes over tasks at once; on
    ``memory://``, on first use. :meth:`close` stops this process's workers.
    """

    def __init__(self, settings: EngineSettings, seal: Seal | None = None) -> None:
        self.settings = settings
        self.seal = seal or Seal.for_this_process()
        self.keys = TaskKeys(settings.service)
        self.store = TaskStore(self.keys, self._docket_opened, asyncio.Semaphore(STORE_SLOTS))
        self.runner = TaskRunner(self.store, self.seal, settings, self._taking)
        self.notices = TaskNotices(self.keys.notices, self.runner.stop)
        self._worker_name = self.keys.new_worker()
        self._docket: Docket | None = None
        self._opening: asyncio.Future[Docket] | None = None
        self._closing: asyncio.Event | None = None
        self._holder: asyncio.Task[None] | None = None
        self._workers: ProcessWorkers | None = None
        self._draining = False
        self._closed = False
        self._starting: asyncio.Task[None] | None = None
        self._creations = GroupCommit(self._create_all, limit=CREATIONS_AT_ONCE)

    # Lifecycle -------------------------------------------------------------------------

    def register(self, tools: list[ContractTool]) -> None:
        """Run the tasks of ``tools`` (the service's task tools)."""
        self.runner.tools = {tool.name: tool for tool in tools}

    def start(self) -> None:
        """Open the store and this process's worker now, in the background (on Redis, again
        until the store answers): the first task created waits for neither Docket's import
        nor the store's opening, and on Redis this process takes over the tasks of
        processes that stopped even before it serves a task itself. Without it (over
        stdio), the store opens on first use."""
        self._closed = False
        if self._starting is None:
            self._starting = asyncio.get_running_loop().create_task(
                self._start(), name="mcp-task-store-start"
            )

    async def _start(self) -> None:
        told = False
        while self._docket is None:
            try:
                await self._docket_opened()
            except STORE_ERRORS as exc:
                if not told:
                    logger.warning(
                        "the task store did not answer at startup (%s): trying again",
                        type(exc).__name__,
                    )
                    told = True
                await asyncio.sleep(min(5.0, self.settings.lease / 4))

    async def _docket_opened(self) -> "Docket":
        """The docket, opened once (by the holder task, which also runs this worker); never
        again once closed (a run that ends during the shutdown must not open it anew)."""
        if self._docket is not None:
            return self._docket
        if self._closed:
            raise ConnectionError("the task store was closed: the process is stopping")
        if self._opening is None:
            loop = asyncio.get_running_loop()
            self._opening = loop.create_future()
            self._closing = asyncio.Event()
            self._holder = loop.create_task(self._hold(self._opening), name="mcp-task-store")
        opening = self._opening
        try:
            return await asyncio.shield(opening)
        except STORE_ERRORS:
            if self._opening is opening:  # the next use tries again
                self._opening = None
            raise

    async def _hold(self, opening: "asyncio.Future[Docket]") -> None:
        """Open the docket, this process's worker and its notices, keep a worker taking
        tasks, and close them when told to: one task enters and leaves them, as Docket's
        context requires."""
        closing = self._closing
        assert closing is not None
        helpers: list[asyncio.Task[None]] = []
        try:
            # Docket's import (a fifth of the runtime's) off the event loop: requests go on.
            await asyncio.to_thread(import_docket)
            async with contextlib.AsyncExitStack() as stack:
                docket = await stack.enter_async_context(self._new_docket())
                docket.register(self.runner.function())
                settings = self.settings
                from mcp_runtime.tasks.workers import ProcessWorkers

                workers = ProcessWorkers(
                    docket,
                    self._worker_name,
                    concurrency=settings.concurrency,
                    lease=settings.lease,
                    slots=self.store.slots,
                )
                await workers.add(stack)
                self._workers = workers
                loop = asyncio.get_running_loop()
                helpers.append(
                    loop.create_task(
                        workers.renew_leases(self._running_messages), name="mcp-task-leases"
                    )
                )
                helpers.append(
                    loop.create_task(
                        self.notices.listen(docket, min(5.0, settings.lease / 4)),
                        name="mcp-task-notices",
                    )
                )
                self._docket = docket
                opening.set_result(docket)
                every = 2 * docket.heartbeat_interval.total_seconds()
                while not closing.is_set():
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(closing.wait(), timeout=every)
                    if settings.shared and not closing.is_set() and not self._draining:
                        await workers.keep_taking(stack)
                await workers.stop(FLUSH_SECONDS)
                self.notices.stop()
                for helper in helpers:
                    helper.cancel()
                await asyncio.wait(helpers, timeout=READ_SECONDS + 1)  # before the store closes
                self._docket = None
        except Exception as exc:
            if not opening.done():
                opening.set_exception(exc)
            else:
                logger.warning("the task store closed with an error: %s", type(exc).__name__)
        finally:
            for helper in helpers:
                helper.cancel()

    def _running_messages(self) -> list[tuple[bytes | str, str]]:
        """The stream message of each task running here, with the worker that holds it."""
        return [(running.message, running.worker) for running in self.runner.running.values()]

    def _taking(self) -> str:
        """The name of this process's worker that takes tasks now."""
        return self._workers.taking if self._workers is not None else ""

    def _new_docket(self) -> "Docket":
        from docket import Docket

        settings = self.settings
        return Docket(
            name=self.keys.docket,
            url=pooled(settings.url),
            execution_ttl=timedelta(seconds=max(60.0, settings.lease)),
        )

    def stop_taking(self) -> None:
        """Take no more tasks in this process (its drain has begun); the tasks it runs go
        on until they end, or are handed on at the end of the grace. Safe to call from a
        signal handler."""
        self._draining = True
        if self._workers is not None:
            self._workers.stop_taking()

    async def close(self) -> None:
        """Stop this process's worker and close the store. On ``memory://``, a task still
        running ends ``failed``, saying the service stopped."""
        self._closed = True
        if not self.settings.shared:
            for task_id, running in list(self.runner.running.items()):
                with contextlib.suppress(Exception):
                    await self.runner.end(task_id, "failed", STOPPED)
                if running.task is not None:
                    running.task.cancel()
        if self._starting is not None:
            self._starting.cancel()
        holder, closing = self._holder, self._closing
        self._holder = self._closing = self._opening = None
        if holder is not None and closing is not None:
            closing.set()
            with contextlib.suppress(Exception):
                await holder

    # The task methods ------------------------------------------------------------------

    async def create(
        self, tool: ContractTool, request: TaskRequest, owner: str, ttl_ms: int | None = None
    ) -> TaskRecord:
        """Store a new task of ``tool`` for ``owner``, kept ``ttl_ms`` once ended (the
        service's ``MCP_TASK_TTL`` when None, at most its ``MCP_TASK_MAX_TTL``), and queue
        it; its record once stored. Raises :class:`TaskLimitError` at the cap. Creations
        that arrive together are stored together (:class:`GroupCommit`)."""
        settings = self.settings
        task_id = secrets.token_urlsafe(24)
        ttl = settings.ttl if ttl_ms is None else min(max(ttl_ms / 1000, 1.0), settings.max_ttl)
        now = time.time()
        # Kept while it may run (its timeout, and a lease for each takeover), then its ttl.
        running = (settings.timeout or 0) + settings.lease * (settings.max_resumes + 2)
        creation = self.store.creation(
            task_id,
            owner,
            tool.name,
            kept_seconds=round(running + ttl + 60),
            ttl_ms=round(ttl * 1000),
            sealed_request=request.sealed_by(self.seal),
            now=now,
        )
        with reaching(store_failed):
            await self._creations.submit(creation)
        created = datetime.fromtimestamp(now, UTC)
        return TaskRecord(
            task_id=task_id,
            tool=tool.name,
            status="working",
            created_at=created,
            updated_at=created,
            ttl_ms=round(ttl * 1000),
            poll_interval_ms=self._poll_interval_ms,
        )

    async def _create_all(self, creations: Sequence[Creation]) -> list[BaseException | None]:
        """Store ``creations`` and queue them on Docket, a round trip for all of each: for
        each, None once queued, or what refused it (it is then not kept)."""
        docket = await self._docket_opened()
        cap = self.settings.max_per_caller
        counts = await self.store.create(creations)
        answers: list[BaseException | None] = []
        stored: list[Creation] = []
        open_now: dict[str, int] = {}  # an owner past the cap: its open tasks, counted once
        try:
            for creation, count in zip(creations, counts, strict=True):
                owner = creation.owner
                if isinstance(count, BaseException):
                    answers.append(count)
                    continue
                if count > cap and owner not in open_now:
                    open_now[owner] = await self.store.open_count(owner)
                if count > cap and open_now[owner] > cap:
                    await self.store.forget(creation.task_id, owner)
                    open_now[owner] -= 1
                    answers.append(TaskLimitError(AT_THE_CAP.format(cap=cap)))
                else:
                    answers.append(None)
                    stored.append(creation)
            if stored:
                function = self.runner.function()
                calls = [docket.call(function, key=one.task_id)(one.task_id) for one in stored]
                async with self.store.slots:
                    executions = await docket.add_many(calls, chunk_size=None)
                refused = {
                    execution.key: execution.schedule_exception
                    for execution in executions
                    if execution.disposition.value == "failed"
                }
                for number, creation in enumerate(creations):
                    error = refused.get(creation.task_id)
                    if error is not None:
                        answers[number] = error
                        await self.store.forget(creation.task_id, creation.owner)
        except Exception:
            for creation in stored:
                with contextlib.suppress(*STORE_ERRORS):
                    await self.store.forget(creation.task_id, creation.owner)
            raise
        return answers

    async def get(self, owner: str, task_id: str, *, result: bool = False) -> TaskRecord | None:
        """``owner``'s task ``task_id``, in one round trip; None when there is no such task
        of theirs. Its ``result`` (once completed) is read and unsealed only when asked
        for: a status read costs the same whatever the result's size."""
        if not task_id or len(task_id) > 128:
            return None
        names = [*STATUS_FIELDS, "result"] if result else STATUS_FIELDS
        with reaching(store_failed):
            fields = await self.store.read(task_id, names)
        if not fields or not secrets.compare_digest(fields.get("owner", ""), owner):
            return None
        return await self._record(task_id, fields)

    async def _record(self, task_id: str, fields: dict[str, str]) -> TaskRecord:
        """The task whose record holds ``fields``, its result unsealed when among them."""
        sealed = fields.get("result") if fields.get("status") == "completed" else None
        unsealed = None
        if sealed:
            try:
                unsealed = await self.seal.unseal_in_thread(sealed)
            except SealError:
                logger.error("a task's result opens with none of MCP_TASK_KEYS: it failed")
                fields = fields | {"status": "failed", "message": UNREADABLE}
        return TaskRecord.from_store(
            fields, task_id, self._poll_interval_ms, result=unsealed, failure=BROKEN
        )

    async def cancel(self, owner: str, task_id: str) -> TaskRecord | None:
        """Cancel ``owner``'s task ``task_id`` if it is working, in one round trip: it ends
        ``cancelled`` now, and its tool, wherever it runs, stops at its next ``await`` and
        runs its cleanup (for up to :data:`STOP_SECONDS` before this answers). The task as
        it is then; None when unknown."""
        if not task_id or len(task_id) > 128:
            return None
        with self.notices.watching("stopped", task_id) as stopped, reaching(store_failed):
            cancelled = await self.store.cancel(owner, task_id, CANCELLED)
            if cancelled is None:
                return None
            if cancelled.now and cancelled.ran:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stopped.wait(), STOP_SECONDS)
        return await self._record(task_id, cancelled.fields)

    async def wait(self, owner: str, task_id: str) -> TaskRecord | None:
        """``owner``'s task ``task_id`` once it has ended, with its result; None when
        unknown. Told of the end (:mod:`.notices`), not polling for it."""
        with self.notices.watching("ended", task_id) as ended:
            while True:
                # A working task has no result yet: reading it with its result reads it once.
                record = await self.get(owner, task_id, result=True)
                if record is None or record.terminal:
                    return record
                await self.notices.heard(ended, self.settings.poll_interval)

    async def list(self, owner: str) -> list[TaskRecord]:
        """``owner``'s tasks that are still kept, oldest first, in one round trip."""
        with reaching(store_failed):
            kept = await self.store.list(owner)
        return [await self._record(task_id, fields) for task_id, fields in kept]

    @property
    def _poll_interval_ms(self) -> int:
        return round(self.settings.poll_interval * 1000)
