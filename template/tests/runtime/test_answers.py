"""Every answer readable by a client with its default settings, in both eras.

A request is answered one ``application/json`` body unless its call streams: it asked
for progress and reported some before its result. Results of many megabytes reach the
SDK's client on its default settings (which reads a server-sent event only up to 1 MiB),
from calls that report progress too; a result too large for the stream its answer
takes is refused with a typed error naming its size and the setting. Served by the
slow test service as a real process. (Long calls, past the 15 s after which a stream
of the 2026-07-28 era would open, are checked once, through this client and others,
by the template's ``nox -s clients``: their wait proves nothing more on another Python.)
"""

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NotRequired

import anyio
import httpx2
import pytest
from langchain_core.tools import tool
from mcp import types

from mcp_runtime import ToolError, ToolResult
from mcp_runtime.config.settings import ServiceSettings
from mcp_runtime.contract.toolsets import Toolset
from mcp_runtime.serving.server import build_server
from mcp_runtime.testing import Mode, RunningServer, connect, connect_http, run_server

pytestmark = pytest.mark.anyio

SLOW_SERVICE = [sys.executable, str(Path(__file__).with_name("slow_service.py"))]
MODES: list[Mode] = ["legacy", "2026-07-28"]
MODERN = "2026-07-28"
MB = 1_000_000
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def sizes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """The slow test service's ``sizes`` and ``counting`` toolsets, without auth."""
    env = {
        "SLOW_SERVICE_DIR": str(tmp_path_factory.mktemp("sizes")),
        "MCP_TOOLSETS": "sizes,counting",
        "MCP_AUTH": "none",
    }
    with run_server(SLOW_SERVICE, env=env) as server:
        yield server


def post(
    server: RunningServer, method: str, params: dict[str, Any], mode: Mode, progress: bool = False
) -> httpx2.Response:
    """``method`` over raw HTTP as a client of ``mode`` sends it; with a progress token."""
    headers = dict(HEADERS)
    meta: dict[str, Any] = {"progressToken": "p"} if progress else {}
    if mode == MODERN:
        meta |= {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        headers |= {"mcp-protocol-version": MODERN, "mcp-method": method}
        if "name" in params:
            headers["mcp-name"] = params["name"]
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params | {"_meta": meta}}
    return httpx2.post(server.url, json=body, headers=headers, timeout=60)


def events(answer: httpx2.Response) -> list[dict[str, Any]]:
    """The JSON-RPC messages of an SSE answer, in order."""
    found = []
    for event in answer.text.replace("\r\n", "\n").split("\n\n"):
        data = [line[5:].strip() for line in event.split("\n") if line.startswith("data:")]
        if data:
            found.append(json.loads("\n".join(data)))
    return found


@pytest.mark.parametrize("mode", MODES)
def test_a_request_is_answered_json_unless_its_call_streams(
    sizes: RunningServer, mode: Mode
) -> None:
    listing = post(sizes, "tools/list", {}, mode)
    plain = post(sizes, "tools/call", {"name": "count_up", "arguments": {"steps": 0}}, mode)
    quiet = post(sizes, "tools/call", {"name": "count_up", "arguments": {"steps": 0}}, mode, True)
    counted = post(sizes, "tools/call", {"name": "count_up", "arguments": {"steps": 2}}, mode)
    streamed = post(
        sizes, "tools/call", {"name": "count_up", "arguments": {"steps": 2}}, mode, progress=True
    )
    for answer in (listing, plain, quiet, counted):
        assert answer.status_code == 200
        assert answer.headers["content-type"] == "application/json"
        assert int(answer.headers["content-length"]) == len(answer.content)
    assert streamed.headers["content-type"].startswith("text/event-stream")
    *reports, last = events(streamed)
    assert [report["params"]["progress"] for report in reports] == [1, 2]
    assert {report["method"] for report in reports} == {"notifications/progress"}
    # The same JSON-RPC message, whichever way it is sent.
    assert last == counted.json()
    assert plain.json() == quiet.json()
    assert plain.json()["result"]["structuredContent"] == {"message": "counted to 0"}


async def test_results_of_many_megabytes_reach_the_sdk_client_on_its_defaults(
    sizes: RunningServer,
) -> None:
    """5 and 20 MB, in both eras: at once, and reporting progress to a client that did
    not ask for it; all at the same time."""
    cases = [
        (mode, size, 0.0, steps) for mode in MODES for size in (5 * MB, 20 * MB) for steps in (0, 3)
    ]
    answers: dict[tuple[Mode, int, float, int], Any] = {}

    async def call(mode: Mode, size: int, seconds: float, steps: int) -> None:
        arguments = {"size": size, "seconds": seconds, "steps": steps}
        async with connect_http(sizes.url, mode=mode) as session:
            answers[mode, size, seconds, steps] = await session.call_tool("sized", arguments)

    with anyio.fail_after(120):
        async with anyio.create_task_group() as group:
            for case in cases:
                group.start_soon(call, *case)
    for (_, size, _, _), answer in answers.items():
        assert answer.isError is False
        assert answer.structuredContent["message"] == f"{size} characters"
        assert len(answer.structuredContent["data"]) == size
    assert len(answers) == len(cases)


@pytest.mark.parametrize("mode", MODES)
async def test_a_streamed_answer_carries_what_clients_read_and_refuses_more_by_name(
    sizes: RunningServer, mode: Mode
) -> None:
    """A call that reports progress to a client that asked for it streams: its result
    reaches the client up to ``MCP_MAX_STREAMED_RESULT_BYTES`` (under the 1 MiB the
    client reads); a larger one answers ``result_too_large``, naming its size and the
    setting, and the client is left able to read it."""
    reports: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reports.append(progress)

    async with connect_http(sizes.url, mode=mode) as session:
        fits = await session.call_tool(
            "sized", {"size": 500_000, "steps": 2}, progress_callback=on_progress
        )
        over = await session.call_tool(
            "sized", {"size": 600_000, "steps": 2}, progress_callback=on_progress
        )
    assert reports == [1, 2, 1, 2]
    assert fits.isError is False
    assert len(fits.structuredContent["data"]) == 500_000
    assert over.isError is True
    assert over.structuredContent["error"] == "result_too_large"
    detail = over.structuredContent["detail"]
    assert detail.startswith("Tool 'sized' produced a result of 1200")
    assert "bytes, more than an answer sent as a stream carries (1040384 bytes, " in detail
    assert "MCP_MAX_STREAMED_RESULT_BYTES" in detail
    assert "call it again without asking for progress" in detail
    [block] = over.content
    assert isinstance(block, types.TextContent)
    assert json.loads(block.text) == over.structuredContent  # what an agent framework shows
    assert "outcome=too_large" in sizes.log()


class SizedResult(ToolResult):
    data: NotRequired[str]


@tool
def sized(size: int) -> SizedResult | ToolError:
    """Answer ``size`` characters of data."""
    return SizedResult(message=f"{size} characters", data="x" * size)


def result_bytes(size: int) -> int:
    """The bytes of the JSON of ``sized``'s result with ``size`` characters of data: its
    text (the JSON of its ``structuredContent``), and that content itself."""
    payload = {"message": f"{size} characters", "data": "x" * size}
    text = json.dumps(payload, ensure_ascii=False)
    result = {
        "content": [{"type": "text", "text": text}],
        "structuredContent": payload,
        "isError": False,
    }
    return len(json.dumps(result, ensure_ascii=False, separators=(",", ":")).encode())


async def test_the_largest_result_is_sent_and_one_byte_more_is_refused() -> None:
    limit = result_bytes(200_000)
    settings = ServiceSettings(auth="none", max_result_bytes=limit)
    server = build_server([Toolset("sizes", (sized,))], name="sizes", settings=settings)
    async with connect(server) as session:
        at_limit = await session.call_tool("sized", {"size": 200_000})
        over = await session.call_tool("sized", {"size": 200_001})
    assert at_limit.isError is False
    assert len(at_limit.structuredContent["data"]) == 200_000
    assert over.isError is True
    assert over.structuredContent == {
        "error": "result_too_large",
        "detail": (
            f"Tool 'sized' produced a result of {limit + 2} bytes, more than this service "
            f"sends ({limit} bytes, MCP_MAX_RESULT_BYTES). Ask for less at once, such as a "
            "smaller range or fewer fields."
        ),
    }
