"""Tasks that outlive the process that took them, with real processes, a real
``redis-server`` and real signals.

Processes of the slow test service share one Redis. Its ``steps`` tool checkpoints each
of its steps, and writes a line (the step and its process) to ``ran-NAME`` as each step
begins, so a test reads which process ran which step, and how often. A task whose
process is killed outright is taken over by another process once its lease runs out; a
process told to stop hands its running tasks on at the end of its grace, at once; a
store that goes away for a while changes no task's end; and a store that saw processes
come and go keeps no key without a TTL but the docket's own.
"""

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx2
import pytest

from mcp_runtime.testing import RunningServer, free_port, run_server

pytestmark = pytest.mark.any_python

SLOW_SERVICE = [sys.executable, str(Path(__file__).with_name("slow_service.py"))]
MODERN = "2026-07-28"
TASK_KEY = "QkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkI="
OPTED_IN: dict[str, Any] = {"extensions": {"io.modelcontextprotocol/tasks": {}}}


def call(server: RunningServer, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """``method`` as a 2026-07-28 client opted in to tasks sends it; the JSON-RPC answer."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": OPTED_IN,
    }
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": MODERN,
        "mcp-method": method,
    }
    if "name" in params:
        headers["mcp-name"] = params["name"]
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params | {"_meta": meta}}
    return dict(httpx2.post(server.url, json=body, headers=headers, timeout=30).json())


def start(server: RunningServer, name: str, count: int, seconds: float) -> str:
    """Create a task of ``steps``; its id."""
    arguments = {"name": name, "count": count, "seconds": seconds}
    created = call(server, "tools/call", {"name": "steps", "arguments": arguments})
    return str(created["result"]["taskId"])


def status(server: RunningServer, task_id: str) -> dict[str, Any]:
    return dict(call(server, "tasks/get", {"taskId": task_id})["result"])


def ended(
    server: RunningServer, task_id: str, seconds: float = 30, pause: float = 0.05
) -> dict[str, Any]:
    """The task once it has ended (read every ``pause`` seconds, for up to ``seconds``)."""
    deadline = time.monotonic() + seconds
    while (got := status(server, task_id))["status"] == "working":
        assert time.monotonic() < deadline, f"the task is still working: {got}"
        time.sleep(pause)
    return got


def ran(folder: Path, name: str) -> list[tuple[int, int]]:
    """Each step ``steps`` began for task ``name``, with the process it ran in, in order."""
    path = folder / f"ran-{name}"
    lines = path.read_text().splitlines() if path.exists() else []
    return [(int(step), int(pid)) for _, step, _, pid in (line.split() for line in lines)]


def until(check: Callable[[], bool], seconds: float = 15) -> float:
    """Wait until ``check()``; the moment it held (``time.monotonic``)."""
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "it never happened"
        time.sleep(0.02)
    return time.monotonic()


@pytest.fixture
def environment(redis_url: str, tmp_path: Path) -> dict[str, str]:
    return {
        "SLOW_SERVICE_DIR": str(tmp_path),
        "MCP_TOOLSETS": "durable",
        "MCP_AUTH": "none",
        "MCP_TASKS_URL": redis_url,
        "MCP_TASK_KEYS": TASK_KEY,
        "MCP_TASK_POLL_INTERVAL": "0.05",
        "MCP_SHUTDOWN_GRACE": "1",
    }


def test_a_task_whose_process_is_killed_is_taken_over_from_its_checkpoint(
    environment: dict[str, str], tmp_path: Path
) -> None:
    env = environment | {"MCP_TASK_LEASE": "2"}
    with run_server(SLOW_SERVICE, env=env) as survivor, run_server(SLOW_SERVICE, env=env) as doomed:
        task_id = start(doomed, "k1", count=8, seconds=0.25)
        until(lambda: len(ran(tmp_path, "k1")) >= 3)
        killed_pid = ran(tmp_path, "k1")[0][1]
        if killed_pid == survivor.process.pid:  # the survivor took it: swap the roles
            survivor, doomed = doomed, survivor
        os.killpg(doomed.process.pid, signal.SIGKILL)
        doomed.process.wait()
        killed = time.monotonic()
        before = len(ran(tmp_path, "k1"))
        taken = until(lambda: any(pid != killed_pid for _, pid in ran(tmp_path, "k1")))
        done = ended(survivor, task_id)
    assert done["status"] == "completed", done
    assert done["result"]["structuredContent"] == {"message": "8 steps of k1, resumed: True"}
    steps = ran(tmp_path, "k1")
    assert sorted(set(step for step, _ in steps)) == list(range(1, 9))
    again = [step for step, count in Counter(step for step, _ in steps).items() if count > 1]
    assert len(again) <= 1, steps  # only the step cut short by the kill runs twice
    assert all(step >= before - 1 for step in again), steps
    # Taken over once its lease ran out (2 s), and within about 1.3 leases.
    assert 1.0 < taken - killed < 4.5, taken - killed


def test_a_rolling_restart_hands_a_running_task_on_at_once_and_it_completes(
    environment: dict[str, str], tmp_path: Path
) -> None:
    """Both processes of a service replaced in turn, each after its replacement serves: the
    first one stopped (SIGTERM) is the one running the task, which is handed on at the
    end of its grace at once, not failed nor left for its lease of 30 s; the task
    completes, and only a step cut short by a hand-on runs twice."""
    env = environment | {"MCP_TASK_LEASE": "30"}
    with contextlib.ExitStack() as stack:
        originals = [stack.enter_context(run_server(SLOW_SERVICE, env=env)) for _ in range(2)]
        task_id = start(originals[0], "h1", count=24, seconds=0.3)
        until(lambda: len(ran(tmp_path, "h1")) >= 2)
        running_pid = ran(tmp_path, "h1")[-1][1]
        originals.sort(key=lambda server: server.process.pid != running_pid)  # runner first
        logs, readings, serving = [], [], []
        for turn, stopping in enumerate(originals):
            # Its replacement first, serving before it stops.
            serving.append(stack.enter_context(run_server(SLOW_SERVICE, env=env)))
            stopping.process.send_signal(signal.SIGTERM)
            assert stopping.process.wait(timeout=15) == 0
            stopped = time.monotonic()
            readings.append(status(serving[0], task_id)["status"])
            if turn == 0:
                taken = until(lambda: ran(tmp_path, "h1")[-1][1] != running_pid)
                assert taken - stopped < 2, "handed on at once, not when its lease ran out"
            logs.append(stopping.log())
        done = ended(serving[0], task_id)
    assert readings[0] == "working"  # handed on, not failed
    assert done["status"] == "completed", done
    assert done["result"]["structuredContent"] == {"message": "24 steps of h1, resumed: True"}
    steps = ran(tmp_path, "h1")
    assert sorted(set(step for step, _ in steps)) == list(range(1, 25))
    handed_on = ["a task of steps was handed on at shutdown" in log for log in logs]
    assert handed_on[0], logs[0]  # and the second process, if the task ran there then
    assert not any("Traceback" in log for log in logs), logs
    assert sum(count - 1 for count in Counter(step for step, _ in steps).values()) <= sum(handed_on)


def test_a_store_outage_during_a_task_changes_no_end_and_plain_calls_go_on(
    redis_starter: Callable[..., "subprocess.Popen[bytes]"],
    environment: dict[str, str],
    tmp_path: Path,
) -> None:
    port = free_port()
    store = redis_starter(tmp_path, port, durable=True)
    env = environment | {
        "MCP_TOOLSETS": "durable,answers",
        "MCP_TASKS_URL": f"redis://127.0.0.1:{port}/0",
        "MCP_TASK_LEASE": "20",
    }
    try:
        with run_server(SLOW_SERVICE, env=env) as server:
            task_id = start(server, "o1", count=20, seconds=0.5)
            until(lambda: len(ran(tmp_path, "o1")) >= 2)
            store.terminate()
            store.wait(timeout=10)
            down = time.monotonic()
            plain = call(server, "tools/call", {"name": "answer", "arguments": {"kind": "ok"}})
            read_down = call(server, "tasks/get", {"taskId": task_id})
            time.sleep(max(0.0, 5 - (time.monotonic() - down)))
            store = redis_starter(tmp_path, port, durable=True)
            # The process takes new tasks again while the first one runs on.
            after = start(server, "o2", count=1, seconds=0)
            quick = ended(server, after, seconds=15)
            working = status(server, task_id)["status"]
            seen = []
            deadline = time.monotonic() + 40
            while (got := call(server, "tasks/get", {"taskId": task_id})).get("result", {}).get(
                "status"
            ) != "completed":
                seen.append(got.get("result", {}).get("status", "unanswered"))
                assert time.monotonic() < deadline, got
                time.sleep(0.1)
            again = call(server, "tasks/get", {"taskId": task_id})["result"]
    finally:
        store.terminate()
        store.wait(timeout=10)
    assert plain["result"]["structuredContent"] == {"message": "ok ", "data": ""}
    assert read_down["error"]["code"] == -32603
    assert "cannot reach its task store right now" in read_down["error"]["message"]
    assert (quick["status"], working) == ("completed", "working")
    assert set(seen) <= {"working", "unanswered"}, seen  # never failed on the way
    assert again["status"] == "completed"
    assert again["result"]["structuredContent"] == {"message": "20 steps of o1, resumed: False"}
    steps = [step for step, _ in ran(tmp_path, "o1")]
    assert steps == list(range(1, 21))  # each step once, in one process


def test_a_store_that_saw_processes_come_and_go_keeps_no_key_without_a_ttl(
    environment: dict[str, str], redis_command: Callable[..., str], tmp_path: Path
) -> None:
    env = environment | {"MCP_TASK_LEASE": "2"}
    for restart in range(2):
        with run_server(SLOW_SERVICE, env=env) as one, run_server(SLOW_SERVICE, env=env) as two:
            ids = [start(server, f"r{restart}{n}", 1, 0) for n, server in enumerate((one, two))]
            for task_id in ids:
                assert ended(one, task_id)["status"] == "completed"
        if restart == 0:  # a process killed outright leaves its worker's keys to expire
            with run_server(SLOW_SERVICE, env=env) as killed:
                ended(killed, start(killed, "rk", 1, 0))
                os.killpg(killed.process.pid, signal.SIGKILL)
                killed.process.wait()
    keys = redis_command("--scan", "--pattern", "mcp-tasks:slow-service:*").split()
    assert any(":record:" in key for key in keys)  # the ended tasks, kept for their ttl
    lasting = sorted(key for key in keys if redis_command("TTL", key) == "-1")
    docket = "mcp-tasks:slow-service"  # Docket's own keys, one set for the service
    assert lasting == [
        f"{docket}:stream",
        *(f"{docket}:task-workers:{task}" for task in ("fail", "mcp_task", "sleep", "trace")),
        f"{docket}:workers",
    ], lasting


def test_two_hundred_tasks_at_once_through_two_processes_each_run_once(
    environment: dict[str, str], tmp_path: Path
) -> None:
    env = environment | {"MCP_MAX_TASKS_PER_CALLER": "1000"}
    with run_server(SLOW_SERVICE, env=env) as one, run_server(SLOW_SERVICE, env=env) as two:
        servers = [one, two] * 100

        def create(n: int) -> dict[str, Any]:
            arguments = {"name": f"b{n}", "count": 1}
            return call(servers[n], "tools/call", {"name": "steps", "arguments": arguments})

        with ThreadPoolExecutor(max_workers=200) as pool:
            created = list(pool.map(create, range(200)))
        refused = [answer for answer in created if "taskId" not in answer.get("result", {})]
        assert refused == []

        def end(n: int) -> dict[str, Any]:  # read a few times a second: 200 are read
            return ended(servers[n], created[n]["result"]["taskId"], pause=0.25)

        with ThreadPoolExecutor(max_workers=20) as pool:
            ends = list(pool.map(end, range(200)))
    assert Counter(end["status"] for end in ends) == {"completed": 200}
    assert all(len(ran(tmp_path, f"b{n}")) == 1 for n in range(200))  # each ran once


def test_a_store_whose_connections_are_all_in_use_is_said_to_be_busy_not_unreachable(
    environment: dict[str, str], redis_url: str
) -> None:
    """Against a pool of three connections (two of which the process holds: its worker's
    read and its notices), a burst of creations (stored together, a few round trips for
    all), then a burst of reads (a command each): what the pool has no connection for is
    refused as busy, never as a store out of reach."""
    env = environment | {
        "MCP_TASKS_URL": f"{redis_url}?max_connections=3",
        "MCP_MAX_TASKS_PER_CALLER": "1000",
    }
    with run_server(SLOW_SERVICE, env=env) as server:

        def create(n: int) -> dict[str, Any]:
            arguments = {"name": f"p{n}", "count": 1}
            return call(server, "tools/call", {"name": "steps", "arguments": arguments})

        def read(n: int) -> dict[str, Any]:
            return call(server, "tasks/get", {"taskId": task_ids[n % len(task_ids)]})

        with ThreadPoolExecutor(max_workers=60) as pool:
            created = [answer["result"] for answer in pool.map(create, range(60))]
            task_ids = [answer["taskId"] for answer in created if "taskId" in answer]
            assert task_ids, "no creation was accepted"
            reads = list(pool.map(read, range(60)))
    refusals = [answer["content"][0]["text"] for answer in created if "taskId" not in answer]
    refusals += [answer["error"]["message"] for answer in reads if "error" in answer]
    assert refusals, "no creation or read met a full pool"
    assert any("result" in answer for answer in reads), "no read was answered"
    busy = re.compile(
        r"The service's task store has too many requests at once right now, so (the task "
        r"was not created|tasks/get could not be answered): try again in a few seconds\."
    )
    for detail in refusals:
        assert busy.match(detail), detail
