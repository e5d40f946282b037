"""Sync tools keep their deadline, and a pool of hung threads is seen, not suffered.

MCP_CALL_TIMEOUT=0.5 and MCP_TOOL_THREADS=4: a sync tool that outlives its deadline
answers isError at the deadline; while hung tools hold every thread, other sync
calls still answer at their deadline, async tools answer normally, ``/readyz``
answers 503 ``busy``, and the log names the hung tool.
"""

import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from harness import CALL_LINE, Launcher, Server, Slot, error_text

TIMEOUT = 0.5
THREADS = 4
HANG_SECONDS = 4.0


def timeout_text(tool: str) -> str:
    return (
        f"Tool '{tool}' did not finish within {TIMEOUT:g} seconds: try again later, "
        "or ask for less at once."
    )


@pytest.fixture(scope="module")
def slot(launch: Launcher) -> Slot:
    return Slot(launch, MCP_CALL_TIMEOUT=str(TIMEOUT), MCP_TOOL_THREADS=str(THREADS))


@pytest.fixture
def server(slot: Slot) -> Server:
    server = slot.healthy()
    wait_until_ready(server, seconds=HANG_SECONDS + 5)
    return server


def wait_until_ready(server: Server, seconds: float) -> None:
    """Wait for the threads earlier tests left hung to come back."""
    deadline = time.monotonic() + seconds
    while server.readyz()[0] != 200 and time.monotonic() < deadline:
        time.sleep(0.1)


# First in the module: a thread that a later test hangs would come free during its checks.
def test_hung_threads_leave_the_server_answering(server: Server) -> None:
    mark = server.mark()
    with ThreadPoolExecutor(THREADS) as pool:
        hung = list(
            pool.map(lambda _: server.call("sleep_sync", {"seconds": HANG_SECONDS}), range(THREADS))
        )
    for answer in hung:
        assert error_text(answer.result) == timeout_text("sleep_sync")

    # Every thread is held by a hung tool now: each check is reported, not just the first.
    problems = []
    status, body = server.readyz()
    if (status, body.get("status")) != (503, "busy"):
        problems.append(f"/readyz answered {status} {body} while every thread hung")

    waiting = server.call("sleep_sync", {"seconds": 0.01}).result
    if waiting.get("content") != [{"type": "text", "text": timeout_text("sleep_sync")}]:
        problems.append(f"a sync call with no thread free answered {waiting}")

    quick = server.call("sleep_async", {"seconds": 0.01}).result
    if quick.get("structuredContent") != {"message": "slept 0.01 s"}:
        problems.append(f"an async call answered {quick}")

    named = [
        line
        for line in server.log_since(mark).splitlines()
        if "sleep_sync" in line and not CALL_LINE.search(line)
    ]
    if not named:
        problems.append("the log does not name the hung tool")
    assert not problems, "\n".join(problems)

    # Once the hung tools return, the threads serve again.
    wait_until_ready(server, seconds=HANG_SECONDS + 5)
    assert server.readyz()[0] == 200
    done = server.call("sleep_sync", {"seconds": 0.01}).result
    assert done.get("isError") is False, done
    server.assert_alive()


def test_a_sync_tool_past_its_deadline_answers_is_error(server: Server) -> None:
    answer = server.call("sleep_sync", {"seconds": HANG_SECONDS})
    assert error_text(answer.result) == timeout_text("sleep_sync")
    server.assert_alive()


def test_an_async_tool_past_its_deadline_answers_is_error(server: Server) -> None:
    answer = server.call("sleep_async", {"seconds": HANG_SECONDS})
    assert error_text(answer.result) == timeout_text("sleep_async")
    server.assert_alive()
