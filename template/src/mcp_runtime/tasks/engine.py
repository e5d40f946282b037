"""The task engine: tasks kept and run on Docket (``pydocket``), outliving their process.

Every process of a service is a worker of one docket (``mcp-tasks:<service>``), on
``memory://`` (embedded, one process) or on Redis (every process and replica). A task
is one Docket task, keyed by the task's id, whose only argument is that id: what a run
of it needs (its caller, the request headers its tool declares, its arguments, the
protocol revision) is kept in the task's record, sealed with the service's key
(:mod:`mcp_runtime.tasks.sealing`), as are its last checkpoint and, once it has ended,
its result. In clear the store holds only the task's id, tool, owner digest, status,
status message and times.

Docket leases each running task to the process running it, which renews the lease
(``MCP_TASK_LEASE``): when that process stops without ending the task (``kill -9``, a
lost machine), the lease runs out and another process takes the task over and runs it
again, from its tool's last checkpoint (:mod:`mcp_runtime.execution.checkpoints`). A
process that shuts down stops taking tasks when its drain begins and, at the end of
its grace, hands the tasks it still runs on at once. A run is
:mod:`mcp_runtime.tasks.runs`'s; a process's workers, and the leases of the tasks they
run, :mod:`mcp_runtime.tasks.workers`'s; the store's scripts,
:mod:`mcp_runtime.tasks.store`'s. Creations that arrive together are stored together
(:mod:`mcp_runtime.tasks.batches`).

A task ends ``failed`` only when it was taken over more than ``MCP_TASK_MAX_RESUMES``
times (a task that kills its process each time), or on ``memory://`` when its process
stopped; never because a process looked stopped. Once ``MCP_TASK_TIMEOUT`` has passed
since its creation, whichever runs it had, it answers ``isError`` as a plain call that
times out does. Its record's first end is its last: a status read terminal
never changes. Once ended, the record is kept for the task's ttl, then removed.
"""

import asyncio
import contextlib
import functools
import importlib
import logging
import os
import secrets
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from redis.exceptions import MaxConnectionsError

from mcp_runtime.contract.served_tool import ContractTool
from mcp_runtime.tasks.batches import GroupCommit
from mcp_runtime.tasks.record import TERMINAL, Status, TaskRecord
from mcp_runtime.tasks.request import TaskRequest
from mcp_runtime.tasks.runs import BROKEN, FLUSH_SECONDS, STOPPED, TaskRuns
from mcp_runtime.tasks.sealing import Seal, SealError
from mcp_runtime.tasks.store import (
    CREATE,
    STATUS_FIELDS,
    STORE_ERRORS,
    TaskStoreError,
    pooled,
    read_fields,
    run_scripts,
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
    # Docket is imported when the store first opens (:meth:`TaskEngine._store`): a process
    # that serves no task yet, and every command that only builds the server, never does.
    from docket import Docket, ExecutionState

    from mcp_runtime.tasks.workers import ProcessWorkers

STATES: dict[str, Status] = {
    "scheduled": "working",
    "queued": "working",
    "running": "working",
    "completed": "completed",
    "failed": "failed",
    "cancelled": "cancelled",
}
"""The status of a task whose Docket execution is in each state (by its value)."""
STORE_SLOTS = 32
"""The store commands of requests (creating, reading, cancelling tasks) in flight at once
in one process: a burst of requests waits for a slot instead of emptying the store
client's pool of connections."""
RUN_SLOTS = 4
"""The store commands of runs (their start, checkpoints, status messages and end) in
flight at once in one process, beside the requests': a burst of creations is answered
while the runs it queued wait their turn, a few milliseconds each."""
CREATIONS_AT_ONCE = 64
"""The most creations stored in one batch (each holds its sealed request, arguments
included, in the batch's pipeline)."""

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


def status_of(state: "ExecutionState") -> Status:
    """The status of a task whose Docket execution is in ``state``."""
    return STATES[state.value]


class TaskLimitError(Exception):
    """The caller has as many open tasks as the service allows one caller."""


P = ParamSpec("P")
R = TypeVar("R")


def _reaching_store(
    method: "Callable[Concatenate[TaskEngine, P], Coroutine[Any, Any, R]]",
) -> "Callable[Concatenate[TaskEngine, P], Coroutine[Any, Any, R]]":
    """``method``, raising :class:`TaskStoreError` (and logging one line, without the
    request's values) when the store does not answer."""

    @functools.wraps(method)
    async def reaching(engine: "TaskEngine", /, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await method(engine, *args, **kwargs)
        except STORE_ERRORS as exc:
            error_id = secrets.token_hex(6)
            busy = isinstance(exc, MaxConnectionsError)  # a full pool: the store is there
            what = "had no free connection" if busy else "did not answer"
            logger.error(
                "the task store %s (error id %s): %s: %s",
                what,
                error_id,
                type(exc).__name__,
                exc,
            )
            raise TaskStoreError(error_id, busy=busy) from None

    return reaching


@dataclass(frozen=True)
class _Creation:
    """A task to store: its id, owner, and the keys and arguments of :data:`CREATE`."""

    task_id: str
    owner: str
    keys: list[str]
    args: list[str]


@dataclass(frozen=True)
class EngineSettings:
    """Where tasks are kept and for how long: the engine's share of the service's settings."""

    url: str = "memory://"
    service: str = "service"
    ttl: float = 3600.0
    max_ttl: float = 86400.0
    timeout: float | None = 86400.0
    max_per_caller: int = 100
    poll_interval: float = 1.0
    lease: float = 30.0
    max_resumes: int = 5
    concurrency: int = 100

    @property
    def shared(self) -> bool:
        """Whether tasks are kept where other processes take them over (not ``memory://``)."""
        return self.url != "memory://"


class TaskEngine(TaskRuns):
    """The tasks of one service, as seen from this process (see the module's docstring).

    A service with no task tool has no engine. On Redis, the store opens when the app
    starts (:meth:`start`), so that the process takes over tasks at once; on
    ``memory://``, on first use. :meth:`close` stops this process's workers.
    """

    def __init__(self, settings: EngineSettings, seal: Seal | None = None) -> None:
        self.settings = settings
        self.seal = seal or Seal.for_this_process()
        self.name = f"mcp-tasks:{settings.service}"
        self.worker_name = f"{self.name}:{secrets.token_hex(4)}"
        self.tools: dict[str, ContractTool] = {}
        self.running = {}
        self._slots = asyncio.Semaphore(STORE_SLOTS)
        self._run_slots = asyncio.Semaphore(RUN_SLOTS)
        self._docket: Docket | None = None
        self._opening: asyncio.Future[Docket] | None = None
        self._closing: asyncio.Event | None = None
        self._keeper: asyncio.Task[None] | None = None
        self._workers: ProcessWorkers | None = None
        self._draining = False
        self._starting: asyncio.Task[None] | None = None
        self._function: Callable[..., Any] | None = None  # made when the store opens
        self._creations = GroupCommit(self._create_all, limit=CREATIONS_AT_ONCE)

    # Lifecycle -------------------------------------------------------------------------

    def serve(self, tools: list[ContractTool]) -> None:
        """Run the tasks of ``tools`` (the service's task tools)."""
        self.tools = {tool.name: tool for tool in tools}

    def start(self) -> None:
        """Open the store and this process's worker now, in the background (on Redis, again
        until the store answers): the first task created waits for neither Docket's import
        nor the store's opening, and on Redis this process takes over the tasks of
        processes that stopped even before it serves a task itself. Without it (over
        stdio), the store opens on first use."""
        if self._starting is None:
            self._starting = asyncio.get_running_loop().create_task(
                self._start(), name="mcp-task-store-start"
            )

    async def _start(self) -> None:
        told = False
        while self._docket is None:
            try:
                await self._store()
            except STORE_ERRORS as exc:
                if not told:
                    logger.warning(
                        "the task store did not answer at startup (%s): trying again",
                        type(exc).__name__,
                    )
                    told = True
                await asyncio.sleep(min(5.0, self.settings.lease / 4))

    async def _store(self) -> "Docket":
        """The docket, opened once (by the keeper task, which also runs this worker)."""
        if self._docket is not None:
            return self._docket
        if self._opening is None:
            loop = asyncio.get_running_loop()
            self._opening = loop.create_future()
            self._closing = asyncio.Event()
            self._keeper = loop.create_task(self._keep(self._opening), name="mcp-task-store")
        opening = self._opening
        try:
            return await asyncio.shield(opening)
        except STORE_ERRORS:
            if self._opening is opening:  # the next use tries again
                self._opening = None
            raise

    async def _keep(self, opening: "asyncio.Future[Docket]") -> None:
        """Open the docket and this process's worker, keep a worker taking tasks, and close
        them when told to: one task enters and leaves them, as Docket's context requires."""
        closing = self._closing
        assert closing is not None
        leases: asyncio.Task[None] | None = None
        try:
            # Docket's import (a fifth of the runtime's) off the event loop: requests go on.
            await asyncio.to_thread(import_docket)
            async with contextlib.AsyncExitStack() as stack:
                docket = await stack.enter_async_context(self._new_docket())
                docket.register(self._task())
                settings = self.settings
                from mcp_runtime.tasks.workers import ProcessWorkers

                workers = ProcessWorkers(
                    docket,
                    self.worker_name,
                    concurrency=settings.concurrency,
                    lease=settings.lease,
                    slots=self._slots,
                )
                await workers.add(stack)
                self._workers = workers
                leases = asyncio.get_running_loop().create_task(
                    workers.renew_leases(self._held), name="mcp-task-leases"
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
                self._docket = None
        except Exception as exc:
            if not opening.done():
                opening.set_exception(exc)
            else:
                logger.warning("the task store closed with an error: %s", type(exc).__name__)
        finally:
            if leases is not None:
                leases.cancel()

    def _held(self) -> list[tuple[bytes | str, str]]:
        """The stream message of each task running here, with the worker that holds it."""
        return [(message, worker) for message, worker, _ in self.running.values()]

    def _task(self) -> Callable[..., Any]:
        """The function Docket runs for each task, made once."""
        if self._function is None:
            self._function = self._task_function()
        return self._function

    def _new_docket(self) -> "Docket":
        from docket import Docket

        settings = self.settings
        return Docket(
            name=self.name,
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
        if not self.settings.shared:
            for task_id, (_, _, task) in list(self.running.items()):
                with contextlib.suppress(Exception):
                    await self._end(task_id, "failed", STOPPED)
                if task is not None:
                    task.cancel()
        if self._starting is not None:
            self._starting.cancel()
        keeper, closing = self._keeper, self._closing
        self._keeper = self._closing = self._opening = None
        if keeper is not None and closing is not None:
            closing.set()
            with contextlib.suppress(Exception):
                await keeper

    # Creating --------------------------------------------------------------------------

    @_reaching_store
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
        keep = round(running + ttl + 60)
        sealed = request.sealed_by(self.seal)
        kept_ms = str(round(ttl * 1000))
        await self._creations.submit(
            _Creation(
                task_id,
                owner,
                keys=[self._record_key(task_id), self._open_key(owner), self._owner_key(owner)],
                args=[task_id, repr(now), str(keep), owner, tool.name, kept_ms, sealed],
            )
        )
        created = datetime.fromtimestamp(now, UTC)
        return TaskRecord(
            task_id=task_id,
            tool=tool.name,
            status="working",
            created_at=created,
            updated_at=created,
            ttl_ms=round(ttl * 1000),
            poll_interval_ms=round(settings.poll_interval * 1000),
        )

    async def _create_all(self, creations: Sequence["_Creation"]) -> list[BaseException | None]:
        """Store ``creations`` and queue them on Docket, a round trip for all of each: for
        each, None once queued, or what refused it (it is then not kept)."""
        docket = await self._store()
        cap = self.settings.max_per_caller
        async with self._slots, docket.redis() as redis:
            counts = await run_scripts(redis, CREATE, [(one.keys, one.args) for one in creations])
        answers: list[BaseException | None] = []
        stored: list[_Creation] = []
        open_now: dict[str, int] = {}  # an owner past the cap: its open tasks, counted once
        try:
            for creation, count in zip(creations, counts, strict=True):
                owner = creation.owner
                if isinstance(count, BaseException):
                    answers.append(count)
                    continue
                if count > cap and owner not in open_now:
                    open_now[owner] = await self._open_count(owner)
                if count > cap and open_now[owner] > cap:
                    await self._forget(creation.task_id, owner)
                    open_now[owner] -= 1
                    answers.append(TaskLimitError(AT_THE_CAP.format(cap=cap)))
                else:
                    answers.append(None)
                    stored.append(creation)
            if stored:
                function = self._task()
                calls = [docket.call(function, key=one.task_id)(one.task_id) for one in stored]
                async with self._slots:
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
                        await self._forget(creation.task_id, creation.owner)
        except Exception:
            for creation in stored:
                with contextlib.suppress(*STORE_ERRORS):
                    await self._forget(creation.task_id, creation.owner)
            raise
        return answers

    # Reading ---------------------------------------------------------------------------

    @_reaching_store
    async def get(self, owner: str, task_id: str, *, result: bool = False) -> TaskRecord | None:
        """``owner``'s task ``task_id``; None when there is no such task of theirs. Its
        ``result`` (once completed) is read and opened only when asked for: a status read
        costs the same whatever the result's size."""
        if not task_id or len(task_id) > 128:
            return None
        docket = await self._store()
        names = [*STATUS_FIELDS, "result"] if result else STATUS_FIELDS
        async with self._slots, docket.redis() as redis:
            record = await read_fields(redis, self._record_key(task_id), names)
        if not record or not secrets.compare_digest(record.get("owner", ""), owner):
            return None
        if record.get("status") not in TERMINAL:
            async with self._slots:
                execution = await docket.get_execution(task_id)
            if execution is not None and status_of(execution.state) != "working":
                # Docket ended it without the engine (a fault of the engine's own): it
                # failed, once and for all.
                await self._end(task_id, "failed", BROKEN)
                return await self.get(owner, task_id, result=result)
            return TaskRecord.kept(
                record,
                task_id,
                round(self.settings.poll_interval * 1000),
                moments=[execution.started_at, execution.progress.updated_at] if execution else [],
                message=execution.progress.message if execution else None,
            )
        sealed = record.get("result") if record["status"] == "completed" else None
        opened = None
        if sealed is not None:
            try:
                opened = await self.seal.open_aside(sealed)
            except SealError:
                logger.error("a task's result opens with none of MCP_TASK_KEYS: it failed")
                record |= {"status": "failed", "message": UNREADABLE}
        return TaskRecord.kept(
            record,
            task_id,
            round(self.settings.poll_interval * 1000),
            result=opened,
            failure=BROKEN,
        )

    @_reaching_store
    async def cancel(self, owner: str, task_id: str) -> TaskRecord | None:
        """Cancel ``owner``'s task ``task_id`` if it is working: it ends ``cancelled`` now,
        and its tool, wherever it runs, stops at its next ``await`` and runs its cleanup
        (for up to a second before this answers). The task as it is then; None when unknown."""
        record = await self.get(owner, task_id)
        if record is None or record.terminal:
            return record
        await self._end(task_id, "cancelled", CANCELLED, owner=owner, ttl_ms=record.ttl_ms)
        docket = await self._store()
        async with self._slots:
            await docket.cancel(task_id)
        for _ in range(50):  # the worker takes the signal within milliseconds
            async with self._slots:
                execution = await docket.get_execution(task_id)
            if execution is None or status_of(execution.state) != "working":
                break
            await asyncio.sleep(0.02)
        return await self.get(owner, task_id)

    @_reaching_store
    async def wait(self, owner: str, task_id: str) -> TaskRecord | None:
        """``owner``'s task ``task_id`` once it has ended, with its result; None when
        unknown."""
        delay = 0.02
        while True:
            # A working task has no result yet: reading it with its result reads it once.
            record = await self.get(owner, task_id, result=True)
            if record is None or record.terminal:
                return record
            await asyncio.sleep(delay)
            delay = min(delay * 2, self.settings.poll_interval)

    @_reaching_store
    async def list(self, owner: str) -> list[TaskRecord]:
        """``owner``'s tasks that are still kept, oldest first."""
        docket = await self._store()
        async with self._slots, docket.redis() as redis:
            ids = [raw.decode() for raw in await redis.zrange(self._owner_key(owner), 0, -1)]
        records = []
        for task_id in ids:
            record = await self.get(owner, task_id)
            if record is None:
                async with self._slots, docket.redis() as redis:
                    await redis.zrem(self._owner_key(owner), task_id)
            else:
                records.append(record)
        return records

    # Bookkeeping -----------------------------------------------------------------------

    async def _open_count(self, owner: str) -> int:
        """How many of ``owner``'s tasks are working, pruning those no longer kept."""
        docket = await self._store()
        async with self._slots, docket.redis() as redis:
            members: set[bytes] = await redis.smembers(self._open_key(owner))
        count = 0
        for task_id in [raw.decode() for raw in members]:
            record = await self.get(owner, task_id)
            if record is None or record.terminal:
                async with self._slots, docket.redis() as redis:
                    await redis.srem(self._open_key(owner), task_id)
            else:
                count += 1
        return count

    async def _forget(self, task_id: str, owner: str) -> None:
        """Remove task ``task_id`` of ``owner``, which was not created after all."""
        docket = await self._store()
        async with self._slots, docket.redis() as redis:
            await redis.delete(self._record_key(task_id))
            await redis.srem(self._open_key(owner), task_id)
            await redis.zrem(self._owner_key(owner), task_id)
