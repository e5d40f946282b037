"""SIGTERM under load: every call is answered or refused, never dropped, and the process
exits 0.

Twenty callers keep calling a tool that takes a second; SIGTERM reaches the ``serve``
process mid-load. Calls in flight finish and answer; calls that arrive while the
server drains get 503 (or a refused connection once the listener has closed);
``/readyz`` answers 503 while draining. A call still running when
MCP_SHUTDOWN_GRACE ends answers isError, and leaves one ``outcome=shutdown`` line.
"""

import signal
import socket
import subprocess
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import httpx2
import pytest
from harness import Answer, Launcher, Server, validate

CALLERS = 20
WORK_SECONDS = 1.0
HELD_SECONDS = 4.0
"""A call in flight across SIGTERM that holds the drain open that long, so that a
readiness probe slowed by a busy machine still meets the drain."""
LOAD_SECONDS = 30.0
GRACE = 0.5


def shutdown_text(tool: str) -> str:
    return f"Tool '{tool}' was stopped because the service is shutting down: call it again."


def listening(server: Server) -> bool:
    """Whether the server's port still takes connections."""
    try:
        socket.create_connection(("127.0.0.1", server.port), timeout=1).close()
    except OSError:
        return False
    return True


def one_call(server: Server, seconds: float = WORK_SECONDS) -> str:
    """How one call of ``sleep_async`` ended, in a word (or what was wrong with it)."""
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "sleep_async", "arguments": {"seconds": seconds}},
    }
    with httpx2.Client(timeout=15) as client:
        try:
            with client.stream(
                "POST", server.url, json=request, headers=server.headers
            ) as response:
                try:
                    body = response.read()
                except httpx2.HTTPError as exc:
                    return f"broken: HTTP {response.status_code}, then {exc!r}"
        except httpx2.ConnectError:
            return "connection refused"
        except (httpx2.ReadError, httpx2.RemoteProtocolError) as exc:
            # A connection the listener had queued is reset when it closes: a refusal.
            if not listening(server):
                return "connection refused"
            return f"broken: dropped without an answer while the port still listened: {exc!r}"
        except httpx2.HTTPError as exc:
            return f"broken: {exc!r}"
    answer = Answer(response.status_code, body, response.headers.get("content-type", ""))
    if answer.status == 503:
        return "503"
    if answer.status != 200:
        return f"broken: HTTP {answer.status} {body[:200]!r}"
    if not body.strip():
        return "broken: 200 with an empty body"
    try:
        result = answer.message["result"]
    except (AssertionError, KeyError):
        return f"broken: 200 without a complete JSON-RPC answer: {body[:200]!r}"
    if result.get("isError"):
        text = result["content"][0]["text"]
        return "answered" if text == shutdown_text("sleep_async") else f"broken: {text}"
    validate(server.schemas["sleep_async"], result["structuredContent"])
    if result["structuredContent"] != {"message": f"slept {seconds:g} s"}:
        return f"broken: {result}"
    return "answered"


def caller(server: Server, deadline: float) -> list[str]:
    """Call until the server stops answering (or ``deadline`` passes)."""
    outcomes: list[str] = []
    while time.monotonic() < deadline:
        outcomes.append(one_call(server))
        if outcomes[-1] != "answered":
            break
    return outcomes


def readiness_after_sigterm(server: Server, deadline: float) -> str:
    """What ``/readyz`` answers once it stops answering 200: "503", or why it did not."""
    while time.monotonic() < deadline:
        try:
            status = httpx2.get(f"{server.base}/readyz", timeout=5).status_code
        except httpx2.HTTPError as exc:
            return f"{type(exc).__name__} before any 503"
        if status != 200:
            return str(status)
        time.sleep(0.05)
    return f"200 still, {LOAD_SECONDS:g} s after SIGTERM"


@pytest.mark.parametrize("workers", [1, 2])
def test_sigterm_under_load_answers_every_call(launch: Launcher, workers: int) -> None:
    # The hostile tools and hello (its liveness check): two workers would keep the example
    # task tool's tasks on Redis (on memory:// they are refused), and this is about calls.
    server = launch(MCP_WORKERS=str(workers), MCP_SHUTDOWN_GRACE="10", MCP_TOOLSETS="hostile,hello")
    server.assert_alive()
    deadline = time.monotonic() + LOAD_SECONDS
    with ThreadPoolExecutor(CALLERS + 1) as pool:
        held = pool.submit(one_call, server, HELD_SECONDS)
        running = [pool.submit(caller, server, deadline) for _ in range(CALLERS)]
        time.sleep(1.5 * WORK_SECONDS)
        server.send_signal(signal.SIGTERM)
        ready_while_draining = readiness_after_sigterm(server, deadline)
        outcomes = [future.result() for future in running]
        held_outcome = held.result()
    try:
        status: int | str = server.wait(seconds=30)
    except subprocess.TimeoutExpired:
        status = "still running 30 s after SIGTERM"
    flat = [outcome for calls in outcomes for outcome in calls] + [held_outcome]
    counts = Counter(outcome if not outcome.startswith("broken") else "broken" for outcome in flat)
    problems = [outcome for outcome in flat if outcome.startswith("broken")]
    if any(calls[-1] == "answered" for calls in outcomes):
        problems.append(f"calls still answered {LOAD_SECONDS:g} s after SIGTERM")
    if ready_while_draining != "503":
        problems.append(f"/readyz while draining: {ready_while_draining}")
    if status != 0:
        problems.append(f"exit status {status}")
    if not counts["answered"]:
        problems.append("no call was answered, not even those in flight at SIGTERM")
    assert not problems, (
        f"{dict(counts)}\n" + "\n".join(problems) + f"\nlog:\n{server.log()[-4000:]}"
    )


@pytest.mark.parametrize("tool", ["sleep_async", "sleep_sync"])
def test_a_call_past_the_grace_period_answers_is_error(launch: Launcher, tool: str) -> None:
    server = launch(MCP_SHUTDOWN_GRACE=str(GRACE))
    mark = server.mark()
    answers: list[object] = []

    def call() -> None:
        try:
            answers.append(server.call(tool, {"seconds": 30}, seconds=GRACE + 5).result)
        except (AssertionError, httpx2.HTTPError) as exc:
            answers.append(f"{type(exc).__name__}: {exc}")

    calling = threading.Thread(target=call)
    calling.start()
    time.sleep(0.5)
    server.send_signal(signal.SIGTERM)
    calling.join()
    try:
        status: int | str = server.wait(seconds=GRACE + 5)
    except subprocess.TimeoutExpired:
        status = f"still running {GRACE + 5:g} s after SIGTERM"
    expected = {"content": [{"type": "text", "text": shutdown_text(tool)}], "isError": True}
    problems = []
    if answers != [expected]:
        problems.append(f"the call answered {answers}")
    lines = server.call_lines(mark, tool)
    if lines != ["shutdown"]:
        problems.append(f"call lines: {lines}, not one outcome=shutdown")
    if status != 0:
        problems.append(f"exit status {status}")
    assert not problems, "\n".join(problems) + f"\nlog:\n{server.log()[-4000:]}"
