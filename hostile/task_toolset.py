"""The hostile toolset's trouble from tools a client may run as tasks (``task="optional"``).

Copied into a rendered service's toolsets package as ``hostile_tasks.py``, beside the
hostile toolset (``hostile.py``), whose trouble it raises and returns: the service serves
it as the toolset ``hostile-tasks``.
"""

import time
from typing import Annotated, Literal

from langchain_core.tools import tool
from mcp_runtime import ToolResult, tool_metadata
from pydantic import Field

from .hostile import Kind, LooseResult, TextResult, loose, trouble


@tool_metadata(task="optional")
@tool
def raise_sync_task(kind: Kind) -> ToolResult:
    """Raise the exception named by ``kind`` from a sync tool, run as a task."""
    raise trouble(kind)


@tool_metadata(task="optional")
@tool
async def raise_async_task(kind: Kind) -> ToolResult:
    """Raise the exception named by ``kind`` from an async tool, run as a task."""
    raise trouble(kind)


@tool_metadata(task="optional")
@tool
def unserializable_task(kind: Literal["nan", "bytes"]) -> LooseResult:
    """Return what JSON cannot carry, run as a task."""
    return loose(kind)


@tool_metadata(task="optional")
@tool
def sleep_sync_task(seconds: float) -> ToolResult:
    """Block the calling thread for ``seconds``, then answer, run as a task."""
    time.sleep(seconds)
    return ToolResult(message=f"slept {seconds:g} s")


@tool_metadata(task="optional")
@tool
async def big_task(megabytes: Annotated[int, Field(ge=1, le=30)]) -> TextResult:
    """Answer ``megabytes`` million characters of text, run as a task."""
    return TextResult(message=f"{megabytes} MB", text="x" * (megabytes * 1_000_000))


TOOLS = [raise_sync_task, raise_async_task, unserializable_task, sleep_sync_task, big_task]
