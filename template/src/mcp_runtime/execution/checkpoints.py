"""Checkpoints of a task: what its run has done, for a later run to go on from.

A task outlives the process that took it: when that process stops (a deploy, a
scale-down, a crash), another one runs the task again. A task tool that saves a
checkpoint with :func:`save_checkpoint` as it goes finds it again in that later run
with :func:`last_checkpoint`, and :func:`is_resumed` says whether the run is such a
later one. What a checkpoint covers runs once; the work after the last checkpoint may
run twice.

A checkpoint is a small JSON value (at most :data:`MAX_CHECKPOINT_BYTES` as JSON),
saved from an async tool or a sync one alike. It is sealed and stored with the task,
each save replacing the last, in the order saved; a run that ends, or is handed on at
shutdown, first waits for its last checkpoint to be stored. Outside a task (a plain
call, a test calling the tool) a save is checked and kept nowhere, and
:func:`last_checkpoint` is None.
"""

import asyncio
import contextlib
import json
import logging
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar
from typing import Any

__all__ = [
    "MAX_CHECKPOINT_BYTES",
    "TaskRun",
    "is_resumed",
    "last_checkpoint",
    "running_task",
    "save_checkpoint",
]

logger = logging.getLogger(__name__)

MAX_CHECKPOINT_BYTES = 64 * 1024
"""The largest checkpoint, in bytes of its JSON."""
RETRY_SECONDS = 1.0
"""How long a checkpoint whose write failed (the store did not answer) waits to be tried again."""


def save_checkpoint(value: Any) -> None:
    """Save ``value`` (JSON) as the checkpoint of the task being run (see the module's
    docstring). Raises ``TypeError`` when it is not JSON, ``ValueError`` when too large."""
    text = _checked(value)
    run = _current.get()
    if run is not None:
        run.save(text)


def last_checkpoint() -> Any:
    """The last checkpoint the task being run saved, in this run or an earlier one; None
    when it has saved none, and outside a task."""
    run = _current.get()
    return None if run is None or run.checkpoint is None else json.loads(run.checkpoint)


def is_resumed() -> bool:
    """Whether the task being run was run before (its process stopped before it ended)."""
    run = _current.get()
    return run is not None and run.resumed


class TaskRun:
    """One run of a task as its tool sees it: the checkpoint it starts from (JSON text),
    whether it resumes the task, and ``store``, which writes a checkpoint (JSON text)."""

    def __init__(
        self,
        checkpoint: str | None,
        resumed: bool,
        store: Callable[[str], Awaitable[None]],
        *,
        keep_each: bool = False,
    ) -> None:
        self.checkpoint = checkpoint
        self.resumed = resumed
        self._store = store
        self._keep_each = keep_each  # store every checkpoint, not only the latest (tests)
        self._queued: list[str] = []
        self._loop = asyncio.get_running_loop()
        self._thread = threading.get_ident()
        self._pending: str | None = None
        self._writer: asyncio.Task[None] | None = None
        self.open = True

    def save(self, text: str) -> None:
        """Take ``text`` as the checkpoint, and store it (from any thread)."""
        self.checkpoint = text
        if threading.get_ident() == self._thread:
            self._enqueue(text)
        else:
            with contextlib.suppress(RuntimeError):  # the event loop has closed
                self._loop.call_soon_threadsafe(self._enqueue, text)

    def _enqueue(self, text: str) -> None:
        if not self.open:
            return
        if self._keep_each:
            self._queued.append(text)
        else:
            self._pending = text  # a checkpoint not yet written is replaced by a later one
        if self._writer is None or self._writer.done():
            self._writer = self._loop.create_task(self._write(), name="mcp-task-checkpoint")

    async def _write(self) -> None:
        while self._queued or self._pending is not None:
            text = self._queued[0] if self._queued else self._pending
            assert text is not None
            try:
                await self._store(text)
            except Exception as exc:
                logger.warning(
                    "a task's checkpoint was not stored (%s): trying again", type(exc).__name__
                )
                await asyncio.sleep(RETRY_SECONDS)
                continue
            if self._queued:
                self._queued.pop(0)
            elif self._pending == text:
                self._pending = None

    async def flush(self, seconds: float) -> bool:
        """Wait up to ``seconds`` for the checkpoints saved so far to be stored, then take
        no more; whether they were."""
        await asyncio.sleep(0)  # saves from tool threads are queued by now
        self.open = False
        writer = self._writer
        if writer is None or writer.done():
            return self._pending is None and not self._queued
        done, _ = await asyncio.wait({writer}, timeout=seconds)
        if not done:
            writer.cancel()
        return bool(done) and self._pending is None and not self._queued

    def discard(self) -> None:
        """Take no more checkpoints and drop those not yet stored (the task was cancelled)."""
        self.open = False
        if self._writer is not None:
            self._writer.cancel()


@contextlib.contextmanager
def running_task(run: TaskRun) -> Iterator[None]:
    """Serve ``run`` to the checkpoint functions called inside the block."""
    token = _current.set(run)
    try:
        yield
    finally:
        _current.reset(token)


_current: ContextVar[TaskRun | None] = ContextVar("mcp_runtime_task_run", default=None)


def _checked(value: Any) -> str:
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"save_checkpoint: the value is not JSON ({exc}): save dicts with str keys, "
            "lists, strings, finite numbers, booleans and None"
        ) from None
    size = len(text.encode())
    if size > MAX_CHECKPOINT_BYTES:
        raise ValueError(
            f"save_checkpoint: the value takes {size:,} bytes as JSON, more than the "
            f"{MAX_CHECKPOINT_BYTES:,} a checkpoint may: keep in it what a later run needs "
            "to go on (ids, counts, the last step done), and the data itself elsewhere"
        )
    return text
