"""The task engine: tasks run, are tracked and kept on Docket (``pydocket``).

Each serving process runs its tasks itself, on a docket of its own (named for the
service and the process), so that a task tool reads its caller and its request's
headers as a direct call does, from this process's memory: nothing of the request but
the task's id is written to the store. Docket keeps each task's state, status message
(what the tool last reported with ``report_progress``) and result, on ``memory://``
(embedded, one process) or on Redis, where any process of the service reads and
cancels any task. Beside Docket's records, the engine keeps one small record per task
(its owner's digest, its tool, its times) and each owner's list of tasks, for the
owner checks, ``tasks/list`` and the cap on open tasks.

A task whose process stopped without ending it (``kill -9``, a lost machine) is found
by the next read: its process no longer beats Docket's heartbeat, so the task is
marked ``failed`` with a message saying so, at most ``heartbeat`` times ``missed``
seconds (10 by default) after the process stopped.
"""

import asyncio
import contextlib
import functools
import json
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Concatenate, ParamSpec, TypeVar

from docket import CurrentExecution, Docket, ExecutionState, Worker
from docket.execution import Execution
from redis.exceptions import RedisError

from mcp_runtime.contract.served_tool import ContractTool
from mcp_runtime.observability.outcome import Outcome
from mcp_runtime.sdk import TaskContext, task_context
from mcp_runtime.tasks.record import Status, TaskRecord

__all__ = ["TaskEngine", "TaskLimitError", "TaskStoppedError", "TaskStoreError"]

logger = logging.getLogger(__name__)

STATES: dict[ExecutionState, Status] = {
    ExecutionState.SCHEDULED: "working",
    ExecutionState.QUEUED: "working",
    ExecutionState.RUNNING: "working",
    ExecutionState.COMPLETED: "completed",
    ExecutionState.FAILED: "failed",
    ExecutionState.CANCELLED: "cancelled",
}
LOST = (
    "The service process running this task stopped before it ended (it was killed or its "
    "machine was lost), so the task has no result: call the tool again."
)
INTERNAL_ERROR = -32603


class TaskStoppedError(Exception):
    """A task ended without a result: the service stopped it (its message says why)."""


class TaskLimitError(Exception):
    """The caller has as many open tasks as the service allows one caller."""


class TaskStoreError(Exception):
    """The task store did not answer (its Redis is down or out of reach). The log has a
    line with the error, under the error id this exception holds."""

    def __init__(self, error_id: str) -> None:
        super().__init__(error_id)
        self.error_id = error_id


STORE_ERRORS = (RedisError, OSError)
"""What the store's client raises when the store does not answer."""
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
            logger.error(
                "the task store did not answer (error id %s): %s: %s",
                error_id,
                type(exc).__name__,
                exc,
            )
            raise TaskStoreError(error_id) from None

    return reaching


@dataclass
class LocalTask:
    """A task this process runs: its tool, its arguments and its request's context, kept
    in memory only."""

    tool: ContractTool
    arguments: dict[str, Any]
    context: TaskContext


@dataclass(frozen=True)
class EngineSettings:
    """Where tasks are kept and for how long: the engine's share of the service's settings."""

    url: str = "memory://"
    service: str = "service"
    ttl: float = 3600.0
    timeout: float | None = 86400.0
    max_per_caller: int = 100
    poll_interval: float = 1.0
    heartbeat: float = 2.0
    missed: int = 5
    concurrency: int = 100


class TaskEngine:
    """The tasks of one service, as seen from this process (see the module's docstring).

    Docket starts on the first use, so a service with no task tool, or a process that
    never serves a task, opens no store; :meth:`close` stops this process's worker.
    """

    def __init__(self, settings: EngineSettings) -> None:
        self.settings = settings
        self.instance = secrets.token_hex(4)
        self.prefix = f"mcp-tasks:{settings.service}"
        self.local: dict[str, LocalTask] = {}
        self._dockets: dict[str, Docket] = {}
        self._asked: asyncio.Queue[tuple[str, asyncio.Future[Docket]] | None] | None = None
        self._keeper: asyncio.Task[None] | None = None
        self._function = self._task_function()

    # Lifecycle -------------------------------------------------------------------------

    async def _docket(self, instance: str) -> Docket:
        """The docket of process ``instance``, opened once (by the keeper)."""
        docket = self._dockets.get(instance)
        if docket is not None:
            return docket
        loop = asyncio.get_running_loop()
        if self._asked is None or self._keeper is None:
            self._asked = asyncio.Queue()
            self._keeper = loop.create_task(self._keep(self._asked), name="mcp-task-store")
        opened: asyncio.Future[Docket] = loop.create_future()
        await self._asked.put((instance, opened))
        return await opened

    async def _keep(
        self, asked: "asyncio.Queue[tuple[str, asyncio.Future[Docket]] | None]"
    ) -> None:
        """Open each docket asked for, and this process's worker, and close them all when
        told to: one task enters and leaves them, as Docket's context requires."""
        worker: asyncio.Task[None] | None = None
        async with contextlib.AsyncExitStack() as stack:
            while (request := await asked.get()) is not None:
                instance, opened = request
                try:
                    docket = self._dockets.get(instance)
                    if docket is None:
                        docket = await stack.enter_async_context(self._new_docket(instance))
                        if instance == self.instance:
                            worker = await self._start_worker(docket, stack)
                        self._dockets[instance] = docket
                    opened.set_result(docket)
                except Exception as exc:
                    opened.set_exception(exc)
            if worker is not None:
                worker.cancel()  # Docket's worker stops taking tasks, and waits for its own
                await asyncio.wait({worker}, timeout=1.0)
                if not worker.done():
                    worker.cancel()  # a second cancel stops the tasks still running
                with contextlib.suppress(BaseException):
                    await worker
            self._dockets.clear()

    def _new_docket(self, instance: str) -> Docket:
        settings = self.settings
        return Docket(
            name=f"{self.prefix}:{instance}",
            url=settings.url,
            heartbeat_interval=timedelta(seconds=settings.heartbeat),
            missed_heartbeats=settings.missed,
            execution_ttl=timedelta(seconds=settings.ttl),
        )

    async def _start_worker(
        self, docket: Docket, stack: contextlib.AsyncExitStack
    ) -> "asyncio.Task[None]":
        docket.register(self._function)
        worker = Worker(
            docket,
            name=f"{self.prefix}:{self.instance}",
            concurrency=self.settings.concurrency,
            schedule_automatic_tasks=False,
        )
        await stack.enter_async_context(worker)
        return asyncio.get_running_loop().create_task(worker.run_forever(), name="mcp-task-worker")

    async def close(self) -> None:
        """Stop this process's worker and close the store; a task still running here
        (the drain's grace ended) is marked ``failed``, saying the service stopped."""
        for task_id in list(self.local):
            with contextlib.suppress(Exception):
                await self._fail(self.instance, task_id, STOPPED)
        keeper, asked = self._keeper, self._asked
        self._keeper = self._asked = None
        if keeper is not None and asked is not None:
            await asked.put(None)
            with contextlib.suppress(Exception):
                await keeper

    # Running ---------------------------------------------------------------------------

    def _task_function(self) -> Callable[..., Awaitable[dict[str, Any]]]:
        engine = self

        async def mcp_task(
            task_id: str,
            execution: Execution = CurrentExecution(),  # noqa: B008 - Docket's dependency
        ) -> dict[str, Any]:
            if execution.redelivered:  # its first run's process stopped, or lost its lease
                raise TaskStoppedError(LOST)
            return await engine._run(task_id, execution)

        return mcp_task

    async def _run(self, task_id: str, execution: Execution) -> dict[str, Any]:
        """Run the local task ``task_id``: its tool's answer, as JSON.

        Its status message goes to the execution's own progress (Docket's ``Progress()``
        dependency is one object shared by every run, which concurrent tasks overwrite)."""
        local = self.local.get(task_id)
        if local is None:
            raise TaskStoppedError(LOST)
        local.context.progress = execution.progress
        try:
            result, outcome = await local.tool.serve(local.arguments, local.context, task=True)
        finally:
            self.local.pop(task_id, None)
            await self._ended(task_id)
        if outcome == Outcome.SHUTDOWN:
            logger.warning("a task of %s was stopped by the shutdown: it failed", local.tool.name)
            raise TaskStoppedError(STOPPED)
        return result.model_dump(by_alias=True, mode="json", exclude_none=True)

    # Creating --------------------------------------------------------------------------

    @_reaching_store
    async def create(
        self, tool: ContractTool, arguments: dict[str, Any], ctx: Any, owner: str
    ) -> TaskRecord:
        """Store a new task of ``tool`` for ``owner`` and start it in this process; its
        record once stored. Raises :class:`TaskLimitError` at the cap of open tasks."""
        docket = await self._docket(self.instance)
        settings = self.settings
        if await self._open_count(owner) >= settings.max_per_caller:
            raise TaskLimitError(
                f"This caller already has {settings.max_per_caller} tasks running, as many "
                "as the service allows one caller (MCP_MAX_TASKS_PER_CALLER): wait for one "
                "to end, or cancel one with tasks/cancel, then call again."
            )
        task_id = f"{self.instance}-{secrets.token_urlsafe(24)}"
        now = time.time()
        keep = (settings.timeout or 0) + settings.ttl + 60
        ttl_ms = round(keep * 1000)
        async with docket.redis() as redis, redis.pipeline() as pipe:
            pipe.hset(
                self._record_key(task_id),
                mapping={
                    "owner": owner,
                    "tool": tool.name,
                    "created": repr(now),
                    "ttl_ms": str(ttl_ms),
                },
            )
            pipe.expire(self._record_key(task_id), round(keep))
            pipe.zadd(self._owner_key(owner), {task_id: now})
            pipe.expire(self._owner_key(owner), round(keep))
            pipe.sadd(self._open_key(owner), task_id)
            pipe.expire(self._open_key(owner), round(keep))
            await pipe.execute()
        self.local[task_id] = LocalTask(tool, arguments, task_context(ctx, task_id))
        try:
            await docket.add(self._function, key=task_id)(task_id)
        except BaseException:
            self.local.pop(task_id, None)
            raise
        created = datetime.fromtimestamp(now, UTC)
        return TaskRecord(
            task_id=task_id,
            tool=tool.name,
            status="working",
            created_at=created,
            updated_at=created,
            ttl_ms=ttl_ms,
            poll_interval_ms=round(settings.poll_interval * 1000),
        )

    # Reading ---------------------------------------------------------------------------

    @_reaching_store
    async def get(self, owner: str, task_id: str) -> TaskRecord | None:
        """``owner``'s task ``task_id``; None when there is no such task of theirs."""
        instance = task_id.split("-", 1)[0]
        if not instance or len(task_id) > 128:
            return None
        mine = await self._docket(self.instance)
        async with mine.redis() as redis:
            fields = await redis.hgetall(self._record_key(task_id))
        record = {key.decode(): value.decode() for key, value in fields.items()}
        if not record or not secrets.compare_digest(record.get("owner", ""), owner):
            return None
        docket = await self._docket(instance)
        execution = await docket.get_execution(task_id)
        if execution is None:
            return None
        if STATES[execution.state] == "working" and not await self._alive(docket, instance):
            logger.warning("a task's process stopped before the task ended: it failed")
            await execution.mark_as_failed(LOST)
            await self._ended(task_id, owner)
            await execution.sync()
        return await self._record(record, task_id, execution)

    async def _record(
        self, stored: dict[str, str], task_id: str, execution: Execution
    ) -> TaskRecord:
        status = STATES[execution.state]
        created = datetime.fromtimestamp(float(stored["created"]), UTC)
        moments = [created, execution.started_at, execution.completed_at]
        moments.append(execution.progress.updated_at)
        updated = max(moment for moment in moments if moment is not None)
        result: dict[str, Any] | None = None
        error: dict[str, Any] | None = None
        message: str | None = None
        if status == "working":
            message = execution.progress.message
        elif status == "completed":
            result = await execution.get_result()
        elif status == "failed":
            message = _failure(execution.error)
            error = {"code": INTERNAL_ERROR, "message": message}
        else:
            message = "The task was cancelled."
        return TaskRecord(
            task_id=task_id,
            tool=stored.get("tool", ""),
            status=status,
            created_at=created,
            updated_at=updated,
            ttl_ms=int(stored.get("ttl_ms", "0")),
            poll_interval_ms=round(self.settings.poll_interval * 1000),
            status_message=message,
            result=result,
            error=error,
        )

    async def _alive(self, docket: Docket, instance: str) -> bool:
        """Whether process ``instance`` still beats its docket's heartbeat."""
        if instance == self.instance:
            return True
        name = f"{self.prefix}:{instance}"
        return any(worker.name == name for worker in await docket.workers())

    @_reaching_store
    async def cancel(self, owner: str, task_id: str) -> TaskRecord | None:
        """Cancel ``owner``'s task ``task_id`` if it is working: its tool stops at its next
        ``await`` and its cleanup runs. The task as it is then; None when unknown."""
        record = await self.get(owner, task_id)
        if record is None or record.terminal:
            return record
        docket = await self._docket(task_id.split("-", 1)[0])
        await docket.cancel(task_id)
        await self._ended(task_id, owner)
        for _ in range(50):  # the worker takes the signal within milliseconds
            record = await self.get(owner, task_id)
            if record is None or record.terminal:
                return record
            await asyncio.sleep(0.02)
        return record

    @_reaching_store
    async def wait(self, owner: str, task_id: str) -> TaskRecord | None:
        """``owner``'s task ``task_id`` once it has ended; None when unknown."""
        delay = 0.02
        while True:
            record = await self.get(owner, task_id)
            if record is None or record.terminal:
                return record
            await asyncio.sleep(delay)
            delay = min(delay * 2, self.settings.poll_interval)

    @_reaching_store
    async def list(self, owner: str) -> list[TaskRecord]:
        """``owner``'s tasks that are still kept, oldest first."""
        mine = await self._docket(self.instance)
        async with mine.redis() as redis:
            ids = [raw.decode() for raw in await redis.zrange(self._owner_key(owner), 0, -1)]
        records = []
        for task_id in ids:
            record = await self.get(owner, task_id)
            if record is None:
                async with mine.redis() as redis:
                    await redis.zrem(self._owner_key(owner), task_id)
            else:
                records.append(record)
        return records

    # Bookkeeping -----------------------------------------------------------------------

    async def _open_count(self, owner: str) -> int:
        """How many of ``owner``'s tasks are working, pruning those that have ended."""
        mine = await self._docket(self.instance)
        async with mine.redis() as redis:
            members: set[bytes] = await redis.smembers(self._open_key(owner))
            open_ids = [raw.decode() for raw in members]
        if len(open_ids) < self.settings.max_per_caller:
            return len(open_ids)
        count = 0
        for task_id in open_ids:
            record = await self.get(owner, task_id)
            if record is None or record.terminal:
                await self._ended(task_id, owner)
            else:
                count += 1
        return count

    async def _ended(self, task_id: str, owner: str | None = None) -> None:
        """Take ``task_id`` off its owner's open tasks."""
        mine = await self._docket(self.instance)
        async with mine.redis() as redis:
            if owner is None:
                raw = await redis.hget(self._record_key(task_id), "owner")
                owner = raw.decode() if raw else None
            if owner is not None:
                await redis.srem(self._open_key(owner), task_id)

    async def _fail(self, instance: str, task_id: str, message: str) -> None:
        docket = await self._docket(instance)
        execution = await docket.get_execution(task_id)
        if execution is not None and STATES[execution.state] == "working":
            await execution.mark_as_failed(message)

    def _record_key(self, task_id: str) -> str:
        return f"{self.prefix}:task:{task_id}"

    def _owner_key(self, owner: str) -> str:
        return f"{self.prefix}:owner:{owner}"

    def _open_key(self, owner: str) -> str:
        return f"{self.prefix}:open:{owner}"


STOPPED = (
    "The service stopped while this task ran (it was shut down or restarted, and the task "
    "did not end within the shutdown grace), so the task has no result: call the tool again."
)


def _failure(error: str | None) -> str:
    """The message of a failed task: the engine's own, or a generic one."""
    if error:
        for known in (LOST, STOPPED):
            if known in error:
                return known
    return "The task failed in the service, without a result: call the tool again."


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))
