"""Runs of tasks: what a process does with each task Docket hands it.

A run counts itself in the task's record (and its takeover), serves the tool as the
caller that created the task, with the headers its tool declares and its last
checkpoint, and ends the record once (its first end is its last). A run stopped by its
process's shutdown is handed on (:class:`HandedOn`: Docket's ``Retry`` runs it again at
once elsewhere); a run that meets a store that does not answer is tried again after a
quarter of a lease; a run whose task is cancelled stops at its tool's next ``await``
and says so. The store commands of runs wait for slots of their own, so that a burst of
requests is answered before the runs it queued.
"""

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from mcp_runtime.auth.oauth import using_caller
from mcp_runtime.auth.request_headers import task_headers
from mcp_runtime.contract.output_contract import error_result
from mcp_runtime.contract.served_tool import ContractTool
from mcp_runtime.execution.checkpoints import TaskRun, running_task
from mcp_runtime.observability.errors import ERROR_ID, logged_error
from mcp_runtime.observability.outcome import Outcome
from mcp_runtime.sdk.tasks import task_context
from mcp_runtime.tasks.record import Status
from mcp_runtime.tasks.request import TaskRequest
from mcp_runtime.tasks.sealing import Seal
from mcp_runtime.tasks.settings import EngineSettings
from mcp_runtime.tasks.store import STORE_ERRORS, TaskStore

if TYPE_CHECKING:
    from docket.execution import Execution

__all__ = ["BROKEN", "FLUSH_SECONDS", "STOPPED", "HandedOn", "Running", "TaskRunner"]

logger = logging.getLogger(__name__)

FLUSH_SECONDS = 5.0
"""How long a run that ends or is handed on waits for its last checkpoint to be stored."""
RUN_SLOTS = 4
"""The store commands of runs (their start, checkpoints, status messages and end) in
flight at once in one process, beside the requests': a burst of creations is answered
while the runs it queued wait their turn, a few milliseconds each."""

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


@dataclass
class Running:
    """A task running here: its stream message and the worker holding it (whose lease
    :meth:`~mcp_runtime.tasks.workers.ProcessWorkers.renew_leases` renews), its asyncio
    task, and whether its caller cancelled it."""

    message: bytes | str
    worker: str
    task: "asyncio.Task[Any] | None"
    cancelled: bool = field(default=False)


class TaskRunner:
    """The runs of the tasks of ``tools`` in this process, on ``store``, opening what they
    keep with ``seal``; ``taking`` names the worker that takes tasks now."""

    def __init__(
        self,
        store: TaskStore,
        seal: Seal,
        settings: EngineSettings,
        taking: Callable[[], str],
    ) -> None:
        self.store = store
        self.seal = seal
        self.settings = settings
        self.taking = taking
        self.tools: dict[str, ContractTool] = {}
        self.running: dict[str, Running] = {}
        self.slots = asyncio.Semaphore(RUN_SLOTS)
        self._function: Callable[..., Awaitable[None]] | None = None

    def function(self) -> Callable[..., Awaitable[None]]:
        """The function Docket runs for each task, made once (Docket is imported here, when
        the store first opens, not with the runtime)."""
        if self._function is None:
            self._function = self._made_function()
        return self._function

    def _made_function(self) -> Callable[..., Awaitable[None]]:
        from docket import CurrentExecution, Retry
        from docket.execution import Execution

        runner = self

        async def mcp_task(
            task_id: str,
            execution: Execution = CurrentExecution(),  # noqa: B008 - Docket's dependency
            retry: Retry = Retry(attempts=None),  # noqa: B008 - how a run is handed on
        ) -> None:
            try:
                await runner.run(task_id, execution)
            except HandedOn:
                retry.after(timedelta(0))  # another process runs it at once
            except STORE_ERRORS as exc:
                logger.warning("a task could not run: the task store did not answer (%s)", exc)
                retry.after(timedelta(seconds=runner.settings.lease / 4))
            except asyncio.CancelledError:
                if not runner.was_cancelled(task_id):
                    raise  # the worker stops: the task runs again elsewhere
                asyncio.current_task().uncancel()  # type: ignore[union-attr]
                with contextlib.suppress(*STORE_ERRORS):
                    await runner.store.tell(f"stopped {task_id}")
            except Exception as exc:
                logged_error(
                    logger, "a task failed in the engine (error id %s)", ERROR_ID, exc_info=exc
                )
                await runner.end(task_id, "failed", BROKEN)
            finally:
                runner.running.pop(task_id, None)

        return mcp_task

    def stop(self, task_id: str) -> None:
        """Stop the run of task ``task_id``, cancelled by its caller, if it runs here: its
        tool stops at its next ``await`` and runs its cleanup."""
        running = self.running.get(task_id)
        if running is not None and running.task is not None and not running.cancelled:
            running.cancelled = True
            running.task.cancel()

    def was_cancelled(self, task_id: str) -> bool:
        running = self.running.get(task_id)
        return running is not None and running.cancelled

    async def run(self, task_id: str, execution: "Execution") -> None:
        """Run task ``task_id`` once more: to its end, or until handed on. It is running
        here from before its record counts the run, so that a cancel told from then on
        stops it."""
        worker = execution.worker or self.taking()
        self.running[task_id] = Running(execution.message_id or b"", worker, asyncio.current_task())
        record = await self.store.begin(task_id, execution.redelivered, self.slots)
        if not record:
            return  # expired, cancelled, or ended by an earlier run
        runs, takeovers = int(record["runs"]), int(record.get("takeovers", "0"))
        owner, ttl_ms = record["owner"], int(record["ttl_ms"])
        end = functools.partial(self.end, task_id, owner=owner, ttl_ms=ttl_ms, slots=self.slots)
        tool = self.tools.get(record.get("tool", ""))
        if takeovers > self.settings.max_resumes:
            logger.warning("a task was taken over %d times: it failed", takeovers)
            await end("failed", TAKEN_OVER_TOO_OFTEN.format(times=takeovers))
            return
        timeout = self.settings.timeout
        left = None if timeout is None else float(record["created"]) + timeout - time.time()
        if left is not None and left <= 0:
            await end("completed", "", self.seal.seal(self._timed_out(tool)))
            return
        try:
            request = TaskRequest.unsealed_by(self.seal, record["request"])
            checkpoint = record.get("checkpoint")
            checkpoint = None if checkpoint is None else self.seal.unseal(checkpoint)
        except Exception:
            logger.error("a task's record could not be opened: it failed")
            await end("failed", UNOPENED)
            return
        if tool is None:
            await end("failed", BROKEN)
            return
        await self._serve(task_id, tool, request, checkpoint, runs > 1, left, end)

    async def _serve(
        self,
        task_id: str,
        tool: ContractTool,
        request: TaskRequest,
        checkpoint: str | None,
        resumed: bool,
        left: float | None,
        end: Callable[..., Awaitable[bool]],
    ) -> None:
        context = task_context(task_id, request.version)
        context.progress = functools.partial(self._report, task_id)
        run = TaskRun(checkpoint, resumed, functools.partial(self._checkpoint, task_id))
        with contextlib.ExitStack() as scope:
            if request.caller is not None:
                scope.enter_context(using_caller(request.caller))
            scope.enter_context(task_headers(tool.name, tool.task_headers, request.headers))
            scope.enter_context(running_task(run))
            try:
                result, outcome = await tool.call(
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
            await end("completed", "", self.seal.seal(self._timed_out(tool)))
            return
        answer = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        await end("completed", "", await self.seal.seal_in_thread(answer))

    def _timed_out(self, tool: ContractTool | None) -> dict[str, Any]:
        """The answer of a task of ``tool`` whose ``MCP_TASK_TIMEOUT`` has run out."""
        name = tool.name if tool is not None else "?"
        text = TIMED_OUT.format(tool=name, seconds=self.settings.timeout or 0)
        answer = error_result(text)
        return answer.model_dump(by_alias=True, mode="json", exclude_none=True)

    async def _report(self, task_id: str, message: str) -> None:
        """Set the task's status message; dropped when the store does not answer."""
        try:
            fields = {"progress": message, "progressed": repr(time.time())}
            await self.store.set_while_working(task_id, fields, self.slots)
        except STORE_ERRORS as exc:
            logger.debug("a task's status message was not stored (%s)", type(exc).__name__)

    async def _checkpoint(self, task_id: str, text: str) -> None:
        sealed = self.seal.seal(text)
        await self.store.set_while_working(task_id, {"checkpoint": sealed}, self.slots)

    async def end(
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
                if owner is None or ttl_ms is None:
                    fields = await self.store.read(task_id, ("owner", "ttl_ms"), slots)
                    owner, ttl_ms = fields.get("owner", ""), int(fields.get("ttl_ms", "0"))
                return await self.store.end(
                    task_id,
                    owner,
                    status=status,
                    message=message,
                    result=result,
                    kept_seconds=max(1, round(ttl_ms / 1000)),
                    slots=slots,
                )
            except STORE_ERRORS:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.5)
