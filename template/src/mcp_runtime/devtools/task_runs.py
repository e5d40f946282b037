"""A tool called as a run of a task, in a test: the checkpoint it starts from, and the
checkpoints it saves.

``async with task_run(checkpoint) as run:`` calls the tools called inside the block as a
run of a task would: :func:`mcp_runtime.last_checkpoint` answers ``checkpoint``,
:func:`mcp_runtime.is_resumed` whether one was given (a run that takes a task over),
and each :func:`mcp_runtime.save_checkpoint` is kept, in order, in ``run.saved``.
"""

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp_runtime.execution.checkpoints import TaskRun, running_task

__all__ = ["SavedCheckpoints", "task_run"]


class SavedCheckpoints:
    """What the tools of a :func:`task_run` block saved: each checkpoint, in order."""

    def __init__(self) -> None:
        self.saved: list[Any] = []

    async def store(self, text: str) -> None:
        self.saved.append(json.loads(text))


@asynccontextmanager
async def task_run(checkpoint: Any = None) -> AsyncIterator[SavedCheckpoints]:
    """Call tools inside the block as a run of a task that starts from ``checkpoint``
    (None: its first run); see the module's docstring."""
    saved = SavedCheckpoints()
    text = None if checkpoint is None else json.dumps(checkpoint)
    run = TaskRun(text, checkpoint is not None, saved.store, keep_each=True)
    with running_task(run):
        yield saved
    await run.flush(5.0)
