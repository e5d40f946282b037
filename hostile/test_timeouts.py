"""Sync tools keep their deadline, one hung tool starves no other, and a pool of hung
threads is seen, not suffered.

MCP_CALL_TIMEOUT=0.5 and MCP_TOOL_THREADS=4, so each tool may hold 2 threads (half):
a sync tool that outlives its deadline answers isError at the deadline; a tool hung
at its share answers its next calls ``busy`` at once (calls already waiting for its
threads then too: the runtime's own tests show it) while every other tool, sync or
async, answers as usual and ``/metrics`` shows it at its share; once hung tools hold
every thread, ``/readyz`` answers 503 ``busy``, sync calls answer ``busy`` at once,
async ones as usual, and the log names the hung tools.
"""

import re
import time
from concurrent.futures import ThreadPoolExecutor

import httpx2
import pytest
from harness import CALL_LINE, Launcher, Server, Slot, error_text

TIMEOUT = 0.5
THREADS = 4
SHARE = THREADS // 2
HANG_SECONDS = 4.0
HANGING = ("sleep_sync", "nap_sync")


def timeout_text(tool: str) -> str:
    return (
        f"Tool '{tool}' did not finish within {TIMEOUT:g} seconds: try again later, "
        "or ask for less at once."
    )


def busy_text(tool: str) -> str:
    return (
        f"Tool '{tool}' is busy: all {SHARE} of the threads it may use are held by earlier "
        "calls that have not returned. Try again later."
    )


def pool_busy_text(tool: str) -> str:
    return (
        f"Tool '{tool}' is busy: all {THREADS} tool threads of the service are held by "
        "earlier calls that have not returned. Try again later."
    )


@pytest.fixture(scope="module")
def slot(launch: Launcher) -> Slot:
    return Slot(launch, MCP_CALL_TIMEOUT=str(TIMEOUT), MCP_TOOL_THREADS=str(THREADS))


@pytest.fixture
def idle_server(slot: Slot) -> Server:
    """The module's server, once the calls earlier tests left hung have returned."""
    server = slot.healthy()
    wait_until_idle(server, seconds=HANG_SECONDS + 5)
    return server


def hang(server: Server, tools: list[str]) -> list[str]:
    """Call each of ``tools`` at once, each told to outlive its deadline; their answers."""
    with ThreadPoolExecutor(len(tools)) as pool:
        answers = pool.map(lambda tool: server.call(tool, {"seconds": HANG_SECONDS}), tools)
        return [error_text(answer.result) for answer in answers]


def timed(server: Server, tool: str, seconds: float) -> tuple[dict[str, object], float]:
    """The result of a call of ``tool`` and how long it took to answer, in seconds."""
    started = time.perf_counter()
    result = server.call(tool, {"seconds": seconds}).result
    return result, time.perf_counter() - started


def metric(server: Server, name: str, **labels: str) -> float:
    """The value of the series ``name{labels}`` of ``GET /metrics``; 0 when it is absent."""
    text = httpx2.get(f"{server.base}/metrics", timeout=10).text
    for found in re.finditer(r"^(\w+)\{(.*)\} (\S+)$", text, re.MULTILINE):
        if found[1] == name and dict(re.findall(r'(\w+)="([^"]*)"', found[2])) == labels:
            return float(found[3])
    return 0.0


def wait_until_idle(server: Server, seconds: float) -> None:
    """Wait for the threads earlier tests left hung to come back."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(
        metric(server, "mcp_tool_threads_running", tool=tool) for tool in HANGING
    ):
        time.sleep(0.1)


def test_a_tool_hung_at_its_share_starves_no_other_tool(idle_server: Server) -> None:
    server = idle_server
    usual, usual_seconds = timed(server, "nap_sync", 0.01)
    refused_before = metric(server, "mcp_tool_calls_total", tool="sleep_sync", outcome="busy")

    assert hang(server, ["sleep_sync"] * SHARE) == [timeout_text("sleep_sync")] * SHARE

    # Each check is reported, not just the first.
    problems = []
    refused, refused_seconds = timed(server, "sleep_sync", 0.01)
    if error_text(refused) != busy_text("sleep_sync"):
        problems.append(f"a call of the hung tool answered {refused}")
    other, other_seconds = timed(server, "nap_sync", 0.01)
    if other != usual:
        problems.append(f"another sync tool answered {other}, not {usual}")
    quick = server.call("sleep_async", {"seconds": 0.01}).result
    if quick.get("structuredContent") != {"message": "slept 0.01 s"}:
        problems.append(f"an async call answered {quick}")
    status, body = server.readyz()
    if status != 200:
        problems.append(f"/readyz answered {status} {body} with one tool hung at its share")
    held = metric(server, "mcp_tool_threads_running", tool="sleep_sync")
    if held != SHARE:
        problems.append(f"mcp_tool_threads_running shows {held} threads of sleep_sync, not {SHARE}")
    refusals = metric(server, "mcp_tool_calls_total", tool="sleep_sync", outcome="busy")
    if refusals - refused_before != 1:
        problems.append(f"mcp_tool_calls_total counts {refusals - refused_before} busy calls")
    print(
        f"nap_sync answered in {usual_seconds * 1000:.0f} ms before sleep_sync hung and in "
        f"{other_seconds * 1000:.0f} ms while it was hung at its share; the hung tool's call "
        f"was refused in {refused_seconds * 1000:.0f} ms (deadline {TIMEOUT * 1000:.0f} ms)"
    )
    assert not problems, "\n".join(problems)

    # Once the hung calls return, the tool is served again.
    wait_until_idle(server, seconds=HANG_SECONDS + 5)
    done = server.call("sleep_sync", {"seconds": 0.01}).result
    assert done.get("isError") is False, done
    server.assert_alive()


def test_hung_threads_leave_the_server_answering(idle_server: Server) -> None:
    server = idle_server
    mark = server.mark()
    answers = hang(server, ["sleep_sync"] * SHARE + ["nap_sync"] * SHARE)
    assert answers == [timeout_text("sleep_sync")] * SHARE + [timeout_text("nap_sync")] * SHARE

    # Every thread is held by a hung tool now: each check is reported, not just the first.
    problems = []
    status, body = server.readyz()
    if (status, body.get("status")) != (503, "busy"):
        problems.append(f"/readyz answered {status} {body} while every thread hung")

    refused = server.call("repeat", {}).result  # a sync tool with no thread hung
    if refused.get("content") != [{"type": "text", "text": pool_busy_text("repeat")}]:
        problems.append(f"a sync call with no thread free answered {refused}")

    quick = server.call("sleep_async", {"seconds": 0.01}).result
    if quick.get("structuredContent") != {"message": "slept 0.01 s"}:
        problems.append(f"an async call answered {quick}")

    named = {
        tool
        for line in server.log_since(mark).splitlines()
        for tool in ("sleep_sync", "nap_sync")
        if tool in line and not CALL_LINE.search(line)
    }
    if named != {"sleep_sync", "nap_sync"}:
        problems.append(f"the log names only {named or 'no tool'} of the hung tools")
    assert not problems, "\n".join(problems)

    # Once the hung tools return, the threads serve again.
    wait_until_idle(server, seconds=HANG_SECONDS + 5)
    assert server.readyz()[0] == 200
    done = server.call("sleep_sync", {"seconds": 0.01}).result
    assert done.get("isError") is False, done
    server.assert_alive()


def test_a_sync_tool_past_its_deadline_answers_is_error(server: Server, era: str) -> None:
    answer = server.call("sleep_sync", {"seconds": HANG_SECONDS}, era=era)
    assert error_text(answer.result) == timeout_text("sleep_sync")
    server.assert_alive()


def test_an_async_tool_past_its_deadline_answers_is_error(server: Server, era: str) -> None:
    answer = server.call("sleep_async", {"seconds": HANG_SECONDS}, era=era)
    assert error_text(answer.result) == timeout_text("sleep_async")
    server.assert_alive()
