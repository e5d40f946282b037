"""The conformance suite's fixture tools of its tasks scenarios, as a service's team
would write them (``nox -s clients`` adds this toolset to the render it checks).

The tools the scenarios call by name: ``greet`` (plain), ``slow_compute`` (a task when
the client opts in), ``failing_job`` (only a task; a ``ToolError``), and
``protocol_error_job`` (only a task; an exception). The scenarios' tools that ask the
client for input mid-task are not here: a LangChain tool cannot (see
``conformance_tasks.json``). With ``TASKS_FIXTURES_STARTED`` set, ``slow_compute`` adds
a line to that file as each run starts, for a check to know its tasks are running; with
``TASKS_FIXTURES_RELEASED`` set, each run computes until that file exists (at most
``HELD_AT_MOST`` seconds) instead of for its ``seconds``, so that a check decides when.
"""

import asyncio
import os

from langchain_core.tools import tool
from mcp_runtime import ToolError, ToolResult, tool_metadata

HELD_AT_MOST = 300.0


@tool
def greet(name: str) -> ToolResult:
    """Greet a person by name."""
    return ToolResult(message=f"Hello, {name}!")


@tool_metadata(task="optional")
@tool
async def slow_compute(seconds: float = 1, label: str = "") -> ToolResult:
    """Compute for a number of seconds."""
    started = os.environ.get("TASKS_FIXTURES_STARTED")
    if started:
        with open(started, "a") as lines:
            lines.write(f"{label}\n")
    released = os.environ.get("TASKS_FIXTURES_RELEASED")
    if released:
        await held_until(released)
    else:
        await asyncio.sleep(seconds)
    return ToolResult(message=f"computed {label} in {seconds:g} s")


async def held_until(released: str) -> None:
    """Wait until the file ``released`` exists, or ``HELD_AT_MOST`` seconds have passed."""
    for _ in range(int(HELD_AT_MOST * 10)):
        if os.path.exists(released):
            return
        await asyncio.sleep(0.1)


@tool_metadata(task="required")
@tool
async def failing_job() -> ToolResult | ToolError:
    """A job that fails as a tool's error."""
    await asyncio.sleep(0.5)
    return ToolError(error="job_failed", detail="The job failed, as it always does.")


@tool_metadata(task="required")
@tool
async def protocol_error_job() -> ToolResult:
    """A job that fails with an exception."""
    await asyncio.sleep(0.2)
    raise RuntimeError("the job broke")


TOOLS = [greet, slow_compute, failing_job, protocol_error_job]
