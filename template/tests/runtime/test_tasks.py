"""Long calls as MCP tasks, in both eras, on the embedded store (``memory://``).

A client that opts in gets a task for every call of a task tool and polls it; one that
does not gets what its revision says. The task's result keeps the contract of a plain
call. Served by the slow test service as a real process, spoken to over raw HTTP as
each revision's clients speak (the clients themselves are in ``nox -s clients``).
"""

import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from mcp_runtime.testing import RunningServer, run_server

SLOW_SERVICE = [sys.executable, str(Path(__file__).with_name("slow_service.py"))]
MODERN = "2026-07-28"
LEGACY = "2025-11-25"
EXTENSION = "io.modelcontextprotocol/tasks"
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
OPTED_IN: dict[str, Any] = {"extensions": {EXTENSION: {}}}
ISO = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("tasks")


@pytest.fixture(scope="module")
def service(folder: Path) -> Iterator[RunningServer]:
    """The slow test service's ``tasks`` and ``answers`` toolsets, tasks in memory."""
    env = {
        "SLOW_SERVICE_DIR": str(folder),
        "MCP_TOOLSETS": "tasks,answers",
        "MCP_AUTH": "none",
        "MCP_TASK_POLL_INTERVAL": "0.05",
    }
    with run_server(SLOW_SERVICE, env=env) as server:
        yield server


def modern(
    server: RunningServer,
    method: str,
    params: dict[str, Any],
    *,
    capabilities: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> dict[str, Any]:
    """``method`` as a 2026-07-28 client sends it, opted in to tasks unless
    ``capabilities`` say otherwise; the JSON-RPC answer."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": OPTED_IN
        if capabilities is None
        else capabilities,
    }
    sent = dict(HEADERS) | {"mcp-protocol-version": MODERN, "mcp-method": method}
    if "name" in params:
        sent["mcp-name"] = params["name"]
    sent |= headers or {}
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params | {"_meta": meta}}
    answer = httpx2.post(server.url, json=body, headers=sent, timeout=30)
    return dict(answer.json())


def legacy(server: RunningServer, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """``method`` as a 2025-11-25 client sends it (stateless: no session); the answer."""
    sent = dict(HEADERS) | {"mcp-protocol-version": LEGACY}
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    return dict(httpx2.post(server.url, json=body, headers=sent, timeout=30).json())


def job(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": "job", "arguments": {"name": name, **arguments}}


def settle(
    get: Callable[[str], dict[str, Any]], task_id: str, seconds: float = 10
) -> dict[str, Any]:
    """Poll ``get`` (a task's answer by id) until the task ends."""
    deadline = time.monotonic() + seconds
    while True:
        found = get(task_id)
        status = found["result"]["status"]
        if status in ("completed", "failed", "cancelled") or time.monotonic() > deadline:
            return found
        time.sleep(0.02)


def test_an_opted_in_2026_call_becomes_a_task_whose_result_is_inline(
    service: RunningServer,
) -> None:
    created = modern(service, "tools/call", job("m1", text="north"))["result"]
    assert created["resultType"] == "task"
    assert created["status"] == "working"
    assert set(created) == {
        "resultType",
        "taskId",
        "status",
        "createdAt",
        "lastUpdatedAt",
        "ttlMs",
        "pollIntervalMs",
        "_meta",
    }
    assert created["pollIntervalMs"] == 50
    task_id = created["taskId"]
    done = settle(lambda i: modern(service, "tasks/get", {"taskId": i}), task_id)["result"]
    assert done["status"] == "completed"
    assert done["resultType"] == "complete"
    assert done["taskId"] == task_id
    assert done["result"]["structuredContent"] == {"message": "ok north", "data": "north"}
    assert done["result"]["isError"] is False
    assert done["result"]["resultType"] == "complete"


def test_a_2025_task_is_created_polled_and_its_result_read(service: RunningServer) -> None:
    created = legacy(service, "tools/call", job("l1", text="south") | {"task": {"ttl": 1000}})
    task = created["result"]["task"]
    assert task["status"] == "working"
    assert {"taskId", "createdAt", "lastUpdatedAt", "ttl", "pollInterval"} <= set(task)
    done = settle(lambda i: legacy(service, "tasks/get", {"taskId": i}), task["taskId"])
    assert done["result"]["status"] == "completed"
    result = legacy(service, "tasks/result", {"taskId": task["taskId"]})["result"]
    assert result["structuredContent"] == {"message": "ok south", "data": "south"}
    assert result["_meta"] == {"io.modelcontextprotocol/related-task": {"taskId": task["taskId"]}}
    assert "resultType" not in result
    listed = legacy(service, "tasks/list", {})["result"]["tasks"]
    assert task["taskId"] in [entry["taskId"] for entry in listed]


def test_a_call_that_does_not_opt_in_runs_inline_or_is_refused(service: RunningServer) -> None:
    plain = modern(service, "tools/call", job("p1", text="east"), capabilities={})["result"]
    assert plain["structuredContent"] == {"message": "ok east", "data": "east"}
    refused = modern(
        service,
        "tools/call",
        {"name": "only_as_task", "arguments": {"name": "r"}},
        capabilities={},
    )
    assert refused["error"]["code"] == -32021
    assert refused["error"]["data"] == {"requiredCapabilities": {"extensions": {EXTENSION: {}}}}
    refused_2025 = legacy(
        service, "tools/call", {"name": "only_as_task", "arguments": {"name": "r"}}
    )
    assert refused_2025["error"]["code"] == -32601
    plain_2025 = legacy(service, "tools/call", job("p2", text="west"))["result"]
    assert plain_2025["structuredContent"] == {"message": "ok west", "data": "west"}


def test_the_extension_is_advertised_in_each_era(service: RunningServer) -> None:
    discovered = modern(service, "server/discover", {})["result"]["capabilities"]
    assert discovered["extensions"] == {EXTENSION: {}}
    assert "tasks" not in discovered
    initialized = legacy(
        service,
        "initialize",
        {
            "protocolVersion": LEGACY,
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    )["result"]["capabilities"]
    assert initialized["tasks"] == {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
    listed = legacy(service, "tools/list", {})["result"]["tools"]
    support = {tool["name"]: tool.get("execution") for tool in listed}
    assert support == {
        "job": {"taskSupport": "optional"},
        "job_thread": {"taskSupport": "optional"},
        "only_as_task": {"taskSupport": "required"},
        "answer": None,
    }


def test_a_cancelled_task_stops_its_tool_and_runs_its_cleanup(
    service: RunningServer, folder: Path
) -> None:
    created = modern(service, "tools/call", job("c1", hold=True))["result"]
    deadline = time.monotonic() + 10
    while not (folder / "started-c1").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    acknowledged = modern(service, "tasks/cancel", {"taskId": created["taskId"]})["result"]
    assert {key: acknowledged[key] for key in acknowledged if key != "_meta"} == {
        "resultType": "complete"
    }
    got = modern(service, "tasks/get", {"taskId": created["taskId"]})["result"]
    assert got["status"] == "cancelled"
    assert (folder / "cancelled-c1").exists()


def test_progress_is_the_status_message_and_errors_keep_the_contract(
    service: RunningServer,
) -> None:
    failed = modern(service, "tools/call", job("e1", kind="exception", text="x"))["result"]
    done = settle(lambda i: modern(service, "tasks/get", {"taskId": i}), failed["taskId"])
    result = done["result"]["result"]
    assert done["result"]["status"] == "completed"
    assert result["isError"] is True
    assert "failed with an unexpected error (error id " in result["content"][0]["text"]
    assert "secret" not in result["content"][0]["text"]
    typed = modern(service, "tools/call", job("e2", kind="tool_error", text="y"))["result"]
    done = settle(lambda i: modern(service, "tasks/get", {"taskId": i}), typed["taskId"])
    assert done["result"]["result"]["structuredContent"] == {"error": "not_found", "detail": "no y"}


def test_an_unknown_task_and_a_request_without_the_extension_are_refused(
    service: RunningServer,
) -> None:
    unknown = modern(service, "tasks/get", {"taskId": "abc-nothing"})
    assert unknown["error"]["code"] == -32602
    without = modern(service, "tasks/get", {"taskId": "abc-nothing"}, capabilities={})
    assert without["error"]["code"] == -32021
    assert modern(service, "tasks/result", {"taskId": "x"})["error"]["code"] == -32601
    assert modern(service, "tasks/list", {})["error"]["code"] == -32601
    created = modern(service, "tools/call", job("h1"))["result"]
    mismatched = modern(
        service, "tasks/get", {"taskId": created["taskId"]}, headers={"mcp-name": "other"}
    )
    assert mismatched["error"]["code"] == -32020
