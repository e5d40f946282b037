"""Progress of long calls: ``report_progress`` from async and sync tools, through real clients.

In memory and over streamable HTTP against a real ``serve`` process (the slow test
service's ``counting`` toolset), a client that asks for progress gets every report, in
order and before the result; a client that does not ask gets none.
"""

import math
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import anyio
import pytest
from langchain_core.tools import tool
from mcp import types
from mcp.client import Client

from mcp_runtime import ToolResult, report_progress
from mcp_runtime.contract.toolsets import Toolset
from mcp_runtime.execution.progress import CallProgress, reporting_progress
from mcp_runtime.sdk import MCPServer
from mcp_runtime.serving.server import build_server
from mcp_runtime.testing import RunningServer, connect, connect_http, run_server

pytestmark = pytest.mark.anyio

SLOW_SERVICE = [sys.executable, str(Path(__file__).with_name("slow_service.py"))]
STEPS = 3
EXPECTED = [(float(step), float(STEPS), f"step {step} of {STEPS}") for step in (1, 2, 3)]

Reports = list[tuple[float, float | None, str | None]]


@tool
async def count_up(steps: int) -> ToolResult:
    """Count to ``steps``, reporting each step as progress."""
    for step in range(1, steps + 1):
        await anyio.sleep(0)
        report_progress(step, steps, f"step {step} of {steps}")
    return ToolResult(message=f"counted to {steps}")


@tool
def count_up_thread(steps: int) -> ToolResult:
    """Count to ``steps`` in a tool thread, reporting each step as progress."""
    for step in range(1, steps + 1):
        report_progress(step, steps, f"step {step} of {steps}")
    return ToolResult(message=f"counted to {steps}")


@tool
async def count_down() -> ToolResult:
    """Report progress 2, then 1: progress that does not increase."""
    report_progress(2)
    report_progress(1)
    return ToolResult(message="counted down")


@tool
async def plain() -> ToolResult:
    """Report progress with nothing but a number."""
    report_progress(0.5)
    return ToolResult(message="done")


TOOLSET = Toolset("counting", (count_up, count_up_thread, count_down, plain))


@pytest.fixture
def counting_server() -> MCPServer:
    return build_server([TOOLSET], name="counting")


@pytest.fixture
def counting_service(tmp_path: Path) -> Iterator[RunningServer]:
    """The slow test service, serving its ``counting`` toolset, as its own process."""
    env = {"SLOW_SERVICE_DIR": str(tmp_path), "MCP_TOOLSETS": "counting"}
    with run_server(SLOW_SERVICE, env=env) as server:
        yield server


class Recorder:
    """A progress callback that records each report."""

    def __init__(self) -> None:
        self.reports: Reports = []

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.reports.append((progress, total, message))


class Seen:
    """A client's message handler: every message the server sent it, in order."""

    def __init__(self) -> None:
        self.messages: list[Any] = []

    async def __call__(self, message: Any) -> None:
        self.messages.append(message)

    def progress(self) -> list[types.ProgressNotificationParams]:
        """The progress notifications among them."""
        return [
            message.params
            for message in self.messages
            if isinstance(message, types.ProgressNotification)
        ]


@pytest.mark.parametrize("name", ["count_up", "count_up_thread"])
async def test_a_tool_reports_progress_in_memory(counting_server: MCPServer, name: str) -> None:
    recorder = Recorder()
    async with connect(counting_server) as session:
        result = await session.call_tool(name, {"steps": STEPS}, progress_callback=recorder)
        reported_before_the_result = list(recorder.reports)
    assert result.is_error is False
    assert result.structured_content == {"message": f"counted to {STEPS}"}
    assert reported_before_the_result == EXPECTED


@pytest.mark.parametrize("name", ["count_up", "count_up_thread"])
async def test_a_tool_reports_progress_over_http(
    counting_service: RunningServer, name: str
) -> None:
    recorder = Recorder()
    async with connect_http(counting_service.url) as session:
        result = await session.call_tool(name, {"steps": STEPS}, progress_callback=recorder)
        reported_before_the_result = list(recorder.reports)
    assert result.is_error is False
    assert result.structured_content == {"message": f"counted to {STEPS}"}
    assert reported_before_the_result == EXPECTED


async def test_the_notification_carries_the_clients_token_and_nothing_unset(
    counting_server: MCPServer,
) -> None:
    seen = Seen()
    async with Client(counting_server, mode="legacy", message_handler=seen) as session:
        await session.call_tool("plain", {}, meta={"progress_token": "job-7"})
    [params] = seen.progress()
    assert params.model_dump(by_alias=True, exclude_none=True) == {
        "progressToken": "job-7",
        "progress": 0.5,
    }


async def test_no_progress_is_sent_when_the_client_did_not_ask(counting_server: MCPServer) -> None:
    seen = Seen()
    async with Client(counting_server, mode="legacy", message_handler=seen) as session:
        without = await session.call_tool("count_up", {"steps": STEPS})
        unasked = seen.progress()
        await session.call_tool("count_up", {"steps": STEPS}, progress_callback=Recorder())
        asked = seen.progress()
    assert without.is_error is False
    assert unasked == []
    assert len(asked) == STEPS  # the same handler sees them when the client asks


async def test_progress_that_does_not_increase_fails_the_call(
    counting_server: MCPServer, caplog: pytest.LogCaptureFixture
) -> None:
    recorder = Recorder()
    async with connect(counting_server) as session:
        result = await session.call_tool("count_down", {}, progress_callback=recorder)
    assert result.is_error is True
    assert recorder.reports == [(2.0, None, None)]
    [error] = [record.exc_info[1] for record in caplog.records if record.exc_info]
    assert str(error) == (
        "report_progress: progress must increase with each report of a call, but 1 came after 2"
    )


@pytest.mark.parametrize(
    ("arguments", "error", "text"),
    [
        ((1, 1), ValueError, "report_progress: progress must increase with each report of a "),
        ((0.5,), ValueError, "report_progress: progress must increase with each report of a "),
        ((math.nan,), ValueError, "report_progress: progress must be a finite number, not nan"),
        ((math.inf,), ValueError, "report_progress: progress must be a finite number, not inf"),
        ((2, math.inf), ValueError, "report_progress: total must be a finite number, not inf"),
        (("2",), TypeError, "report_progress: progress must be a number, not str"),
        ((True,), TypeError, "report_progress: progress must be a number, not bool"),
        ((2, None, 3), TypeError, "report_progress: message must be a string or None, not int"),
    ],
)
async def test_a_bad_report_is_refused_with_what_was_wrong(
    arguments: tuple[Any, ...], error: type[Exception], text: str
) -> None:
    async with reporting_progress(None):
        report_progress(1)
        with pytest.raises(error) as caught:
            report_progress(*arguments)
    assert str(caught.value).startswith(text)


async def test_outside_a_served_call_a_report_does_nothing() -> None:
    report_progress(2)
    report_progress(1)  # no call: nothing to compare with, nothing sent
    result = await count_up.ainvoke({"steps": STEPS})
    assert result == {"message": f"counted to {STEPS}"}


class LeftContext:
    """MCPServer's context of a request whose client has left: every send fails."""

    class request_context:  # noqa: N801 - MCPServer's attribute name
        meta: ClassVar[types.RequestParamsMeta] = {"progress_token": "gone"}

    async def report_progress(self, *report: object) -> None:
        raise anyio.BrokenResourceError


async def test_a_client_that_left_gets_nothing_and_the_call_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level("DEBUG", logger="mcp_runtime.execution.progress")
    progress = reporting_progress(LeftContext())
    assert isinstance(progress, CallProgress)
    async with progress:
        report_progress(1)
        report_progress(2)
        await anyio.sleep(0.01)
        report_progress(3)
    lines = [record.getMessage() for record in caplog.records]
    assert lines == ["a progress notification was not sent (BrokenResourceError)"]
