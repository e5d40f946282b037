"""Tasks through fastmcp-tasks' client (``fastmcp_tasks``: ``call_tool_task`` on fastmcp's
``Client``, 2026-07-28, the ``io.modelcontextprotocol/tasks`` extension), on its default
settings, against a service serving the long-jobs and tasks-fixtures toolsets.

- ``prepare_report`` (a task when asked for) as a task: created ``working``, its status
  message the tool's last progress report, its result typed, exact;
- the same tool through a plain ``call_tool``, which the extension drives to its end;
- ``failing_job`` (only a task): the tool's ``ToolError``, typed, as an error result;
- ``slow_compute`` cancelled while it runs: the task ends ``cancelled``.

With ``MCP_TASK_CHECKS=rolling``, only ``slow_compute`` of ``ROLLING_SECONDS`` as a task,
read to its result while the service's processes are replaced one after the other.

    python task_clients.py URL STORE

Runs in an environment of its own with ``fastmcp-tasks==4.1.4`` (which installs with
fastmcp 4.1.4 only). ``STORE`` names where the service keeps its tasks, for the report.
Exit status 0 when every check passes; otherwise 1, each failure printed as a FAIL line.
"""

import asyncio
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from fastmcp import Client  # type: ignore[import-not-found]
from fastmcp.exceptions import ToolError  # type: ignore[import-not-found]
from fastmcp_tasks import call_tool_task  # type: ignore[import-not-found]

REPORT = {
    "message": "A report on rain in 2 sections.",
    "sections": ["Section 1 on rain.", "Section 2 on rain."],
}
FAILED_JOB = {"error": "job_failed", "detail": "The job failed, as it always does."}
failures: list[str] = []


async def report_as_task(client: Any) -> str | None:
    task = await call_tool_task(client, "prepare_report", {"topic": "rain", "sections": 2})
    if task.create_result.status != "working" or len(task.task_id) < 32:
        return f"created {task.create_result!r}"
    seen = set()
    while (status := await task.status()).status == "working":
        seen.add(status.status_message)
        await asyncio.sleep(0.2)
    if "section 1 of 2 written" not in seen:
        return f"no status message from the tool's progress: saw {sorted(map(str, seen))}"
    result = await task.result()
    return None if result.structured_content == REPORT else f"result {result!r}"


async def report_plainly(client: Any) -> str | None:
    result = await client.call_tool("prepare_report", {"topic": "rain", "sections": 2})
    return None if result.structured_content == REPORT else f"result {result!r}"


async def tool_error(client: Any) -> str | None:
    task = await call_tool_task(client, "failing_job", raise_on_error=False)
    result = await task.result()
    if result.is_error and result.structured_content == FAILED_JOB:
        return None
    return f"result {result!r}"


async def tool_error_raised(client: Any) -> str | None:
    try:
        await (await call_tool_task(client, "failing_job"))
    except ToolError as error:
        return None if "job_failed" in str(error) else f"the error says {error}"
    return "no ToolError raised"


async def cancelled(client: Any) -> str | None:
    task = await call_tool_task(client, "slow_compute", {"seconds": 30})
    await asyncio.sleep(0.5)
    await task.cancel()
    final = await task.wait(timeout=10)
    return None if final.status == "cancelled" else f"ended {final.status}"


ROLLING_SECONDS = 10
ROLLED = {"message": f"computed roll in {ROLLING_SECONDS} s"}


async def across_a_rolling_restart(client: Any) -> str | None:
    task = await call_tool_task(
        client, "slow_compute", {"seconds": ROLLING_SECONDS, "label": "roll"}
    )
    result = await task.result()
    return None if result.structured_content == ROLLED else f"result {result!r}"


ROLLING = {"slow_compute: its result read across a rolling restart": across_a_rolling_restart}
CHECKS: dict[str, Callable[[Any], Awaitable[str | None]]] = {
    "prepare_report as a task: status message, typed result": report_as_task,
    "prepare_report through call_tool, driven to its end": report_plainly,
    "failing_job: its ToolError, typed": tool_error,
    "failing_job: call_tool_task raises ToolError": tool_error_raised,
    "slow_compute: cancelled while it runs": cancelled,
}


async def check(
    url: str, store: str, what: str, run: Callable[[Any], Awaitable[str | None]]
) -> None:
    label = f"fastmcp-tasks client ({store}): {what}"
    try:
        async with Client(url) as client:
            problem = await asyncio.wait_for(run(client), 120)
    except Exception as exc:  # the check reports any failure, whatever its kind
        problem = f"{type(exc).__name__}: {exc}"
    if problem is None:
        print(f"ok   {label}")
    else:
        failures.append(label)
        print(f"FAIL {label}: {problem}")


async def main(url: str, store: str) -> int:
    chosen = ROLLING if os.environ.get("MCP_TASK_CHECKS") == "rolling" else CHECKS
    await asyncio.gather(*(check(url, store, what, run) for what, run in chosen.items()))
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main(sys.argv[1], sys.argv[2])))
