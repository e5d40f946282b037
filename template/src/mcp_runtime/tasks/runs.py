"""Runs of tasks: what a process does with a task Docket hands it (the engine's worker
side, :class:`TaskRuns`, which :class:`~mcp_runtime.tasks.engine.TaskEngine` extends).

A run opens the task's record (:data:`~mcp_runtime.tasks.store.BEGIN`, which counts it
and its takeover), serves the tool as the caller that created it, with the headers its
tool declares and its last checkpoint, and ends the record once (its first end is its
last). A run stopped by its process's shutdown is handed on (:class:`HandedOn`, which
Docket's ``Retry`` runs again at once elsewhere); a run that meets a store that does not
answer is tried again after a quarter of a lease. The store commands of runs wait for
slots of their own, so that a burst of requests is answered before the runs it queued.
"""

import asyncio
import contextlib
import functools
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from mcp_runtime.auth.oauth import using_caller
from mcp_runtime.auth.request_headers import task_headers
from mcp_runtime.contract.output_contract import error_result
from mcp_runtime.contract.served_tool import ContractTool
from mcp_runtime.execution.checkpoints import TaskRun, running_task
from mcp_runtime.observability.outcome import Outcome
from mcp_runtime.sdk.tasks import task_context
from mcp_runtime.tasks.record import Status
from mcp_runtime.tasks.request import TaskRequest
from mcp_runtime.tasks.sealing import Seal
from mcp_runtime.tasks.store import BEGIN, CHECKPOINT, END, STORE_ERRORS, run_script

if TYPE_CHECKING:
    from docket import Docket
    from docket.execution import Execution

    from mcp_runtime.tasks.engine import EngineSettings
    from mcp_runtime.tasks.workers import ProcessWorkers

__all__ = ["BROKEN", "FLUSH_SECONDS", "STOPPED", "HandedOn", "TaskRuns"]

logger = logging.getLogger(__name__)

FLUSH_SECONDS = 5.0
"""How long a run that ends or is handed on waits for its last checkpoint to be stored."""

# What a task's end says: written once, in clear (no request value is in any of them).
STOPPED = (
    "The service stopped while this task ran (it was shut down or restarted, and the task "
    "did not end within the shutdown grace), so the task has no result: call the tool again."
)
TIMED_OUT = (
    "Tool '{tool}' did not finish within {seconds:g} seconds: try again later, or ask for "
    "less at once."
)
"""A task's answer once ``MCP_TASK_TIMEOUT`` has passed since its creation, whichever runs
it had: the text of a plain call's timeout, the timeout the whole task's."""
TAKEN_OVER_TOO_OFTEN = (
    "The task was taken over {times} times, each after the process running it stopped "
    "without ending it (killed, or its machine lost), more than the service allows "
    "(MCP_TASK_MAX_RESUMES), so it has no result. The task may be what stops its process: "
    "call the tool again with less to do, or tell the service's operators."
)
UNOPENED = (
    "The task's kept request opens with none of the service's keys (MCP_TASK_KEYS: the key "
    "that sealed it was dropped), so it cannot run: call the tool again."
)
BROKEN = "The task failed in the service, without a result: call the tool again."


class HandedOn(Exception):  # noqa: N818 - what happened, not an error
    """A run stopped by its process's shutdown: Docket runs the task again at once, in a
    process that is not shutting down."""


class TaskRuns:
    """The runs of tasks in this process, and a task's end. The engine sets these
    attributes and opens the store (:meth:`_store`)."""

    settings: "EngineSettings"
    seal: Seal
    name: str
    tools: dict[str, ContractTool]
    running: dict[str, tuple[bytes | str, str, asyncio.Task[Any] | None]]
    """The tasks running here: their stream message, its worker, the asyncio task."""
    _slots: asyncio.Semaphore
    _run_slots: asyncio.Semaphore
    _workers: "ProcessWorkers | None"

    async def _store(self) -> "Docket":
        raise NotImplementedError

    def _task_function(self) -> Callable[..., Awaitable[None]]:
        """The function Docket runs for each task (Docket is imported here, when the store
        first opens, not with the runtime)."""
        from docket import CurrentExecution, Retry
        from docket.execution import Execution

        engine = self

        async def mcp_task(
            task_id: str,
            execution: Execution = CurrentExecution(),  # noqa: B008 - Docket's dependency
            retry: Retry = Retry(attempts=None),  # noqa: B008 - how a run is handed on
        ) -> None:
            try:
                await engine._run(task_id, execution)
            except HandedOn:
                retry.after(timedelta(0))  # another process runs it at once
            except STORE_ERRORS as exc:
                logger.warning("a task could not run: the task store did not answer (%s)", exc)
                retry.after(timedelta(seconds=engine.settings.lease / 4))
            except Exception as exc:
                error_id = secrets.token_hex(6)
                logger.error("a task failed in the engine (error id %s)", error_id, exc_info=exc)
                await engine._end(task_id, "failed", BROKEN)

        return mcp_task

    async def _run(self, task_id: str, execution: "Execution") -> None:
        """Run task ``task_id`` once more: to its end, or until handed on."""
        docket = await self._store()
        async with self._run_slots, docket.redis() as redis:
            taken_over = "1" if execution.redelivered else "0"
            flat = await run_script(redis, BEGIN, [self._record_key(task_id)], [taken_over])
        if not flat:
            return  # expired, cancelled, or ended by an earlier run
        pairs = zip(flat[::2], flat[1::2], strict=True)
        record = {key.decode(): value.decode() for key, value in pairs}
        runs, takeovers = int(record["runs"]), int(record.get("takeovers", "0"))
        owner, ttl_ms = record["owner"], int(record["ttl_ms"])
        end = functools.partial(
            self._end, task_id, owner=owner, ttl_ms=ttl_ms, slots=self._run_slots
        )
        tool = self.tools.get(record.get("tool", ""))
        if takeovers > self.settings.max_resumes:
            logger.warning("a task was taken over %d times: it failed", takeovers)
            await end("failed", TAKEN_OVER_TOO_OFTEN.format(times=takeovers))
            return
        timeout = self.settings.timeout
        left = None if timeout is None else float(record["created"]) + timeout - time.time()
        if left is not None and left <= 0:
            await end("completed", "", self.seal.close(self._timed_out(tool)))
            return
        try:
            request = TaskRequest.opened_by(self.seal, record["request"])
            checkpoint = record.get("checkpoint")
            checkpoint = None if checkpoint is None else self.seal.open(checkpoint)
        except Exception:
            logger.error("a task's record could not be opened: it failed")
            await end("failed", UNOPENED)
            return
        if tool is None:
            await end("failed", BROKEN)
            return
        worker = execution.worker or (self._workers.taking if self._workers else "")
        self.running[task_id] = (execution.message_id or b"", worker, asyncio.current_task())
        try:
            await self._serve(task_id, tool, request, checkpoint, runs > 1, execution, left, end)
        finally:
            self.running.pop(task_id, None)

    async def _serve(
        self,
        task_id: str,
        tool: ContractTool,
        request: TaskRequest,
        checkpoint: str | None,
        resumed: bool,
        execution: "Execution",
        left: float | None,
        end: Callable[..., Awaitable[bool]],
    ) -> None:
        context = task_context(task_id, request.version)
        context.progress = functools.partial(self._report, execution)
        run = TaskRun(checkpoint, resumed, functools.partial(self._checkpoint, task_id))
        with contextlib.ExitStack() as scope:
            if request.caller is not None:
                scope.enter_context(using_caller(request.caller))
            scope.enter_context(task_headers(tool.name, tool.task_headers, request.headers))
            scope.enter_context(running_task(run))
            try:
                result, outcome = await tool.serve(
                    request.arguments, context, task=True, timeout=left, task_id=task_id
                )
            except BaseException:
                run.discard()  # cancelled: its record says so already
                raise
        stored = await run.flush(FLUSH_SECONDS)
        if outcome == Outcome.SHUTDOWN:
            if self.settings.shared:
                if not stored:
                    logger.warning("a handed-on task's last checkpoint was not stored")
                logger.info("a task of %s was handed on at shutdown", tool.name)
                raise HandedOn(task_id)
            logger.warning("a task of %s was stopped by the shutdown: it failed", tool.name)
            await end("failed", STOPPED)
            return
        if outcome == Outcome.TIMEOUT:
            await end("completed", "", self.seal.close(self._timed_out(tool)))
            return
        answer = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        await end("completed", "", await self.seal.close_aside(answer))

    def _timed_out(self, tool: ContractTool | None) -> dict[str, Any]:
        """The answer of a task of ``tool`` whose ``MCP_TASK_TIMEOUT`` has run out."""
        name = tool.name if tool is not None else "?"
        text = TIMED_OUT.format(tool=name, seconds=self.settings.timeout or 0)
        answer = error_result(text)
        return answer.model_dump(by_alias=True, mode="json", exclude_none=True)

    async def _report(self, execution: "Execution", message: str) -> None:
        """Set the task's status message; dropped when the store does not answer."""
        try:
            async with self._run_slots:
                await execution.progress.set_message(message)
        except STORE_ERRORS as exc:
            logger.debug("a task's status message was not stored (%s)", type(exc).__name__)

    async def _checkpoint(self, task_id: str, text: str) -> None:
        docket = await self._store()
        sealed = self.seal.close(text)
        async with self._run_slots, docket.redis() as redis:
            await run_script(redis, CHECKPOINT, [self._record_key(task_id)], [sealed])

    async def _end(
        self,
        task_id: str,
        status: Status,
        message: str,
        result: str = "",
        *,
        owner: str | None = None,
        ttl_ms: int | None = None,
        slots: asyncio.Semaphore | None = None,
    ) -> bool:
        """End task ``task_id`` with ``status``, unless it has ended already; whether it
        ended now. Its record is then kept for the task's ttl (``ttl_ms``, and its
        ``owner``, are read from it when not given). While the store does not answer,
        tries again for up to a lease. A run's end waits for the runs' ``slots``."""
        deadline = time.monotonic() + self.settings.lease
        while True:
            try:
                docket = await self._store()
                key = self._record_key(task_id)
                async with slots or self._slots, docket.redis() as redis:
                    if owner is None or ttl_ms is None:
                        owner = (await redis.hget(key, "owner") or b"").decode()
                        ttl_ms = int(await redis.hget(key, "ttl_ms") or b"0")
                    kept = str(max(1, round(ttl_ms / 1000)))
                    ended = await run_script(
                        redis,
                        END,
                        [key, self._open_key(owner)],
                        [status, message, result, repr(time.time()), kept, task_id],
                    )
                return bool(ended)
            except STORE_ERRORS:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.5)

    def _record_key(self, task_id: str) -> str:
        return f"{self.name}:record:{task_id}"

    def _owner_key(self, owner: str) -> str:
        return f"{self.name}:owner:{owner}"

    def _open_key(self, owner: str) -> str:
        return f"{self.name}:open:{owner}"
