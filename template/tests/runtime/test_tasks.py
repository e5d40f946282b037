"""Long calls as MCP tasks, in both eras, embedded (``memory://``) and on Redis.

A client that opts in gets a task for every call of a task tool and polls it; one that
does not gets what its revision says. The task's result keeps the contract of a plain
call; a task is its caller's alone. Served by the slow test service as a real process,
spoken to over raw HTTP as each revision's clients speak (the clients themselves are
in ``nox -s clients``).

On Redis, two processes of the service on two ports share one real ``redis-server``
(which these tests start): a task created through one is read, cancelled and answered
through the other, and nothing of the request that created a task (its token, its
headers, its arguments) is in the store in clear, searched whole. What happens to a
task whose process stops is test_durable_tasks.py's.
"""

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx2
import pytest

from mcp_runtime.tasks.engine import KEY_VALUE_CHECKS
from mcp_runtime.testing import LocalIssuer, RunningServer, free_port, run_server

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
        "MCP_TOOLSETS": "tasks,answers,durable",
        "MCP_AUTH": "none",
        "MCP_TASK_POLL_INTERVAL": "0.05",
        "MCP_TASK_TTL": "20",
        "MCP_TASK_MAX_TTL": "30",
    }
    with run_server(SLOW_SERVICE, env=env) as server:
        yield server


RESOURCE = "https://tasks.example.com/mcp"


@pytest.fixture(scope="module")
def guarded(folder: Path) -> Iterator[tuple[LocalIssuer, RunningServer]]:
    """The same service under ``MCP_AUTH=oauth``, two open tasks a caller."""
    with LocalIssuer() as issuer:
        env = {
            "SLOW_SERVICE_DIR": str(folder),
            "MCP_TOOLSETS": "tasks",
            "MCP_MAX_TASKS_PER_CALLER": "2",
            **issuer.environment(RESOURCE),
        }
        with run_server(SLOW_SERVICE, env=env) as server:
            yield issuer, server


def bearer(issuer: LocalIssuer, subject: str) -> dict[str, str]:
    token = issuer.token(subject=subject, audience=RESOURCE, expires_in=600)
    return {"authorization": f"Bearer {token}"}


def modern(
    server: RunningServer,
    method: str,
    params: dict[str, Any],
    *,
    capabilities: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
    meta: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``method`` as a 2026-07-28 client sends it, opted in to tasks unless
    ``capabilities`` say otherwise, with ``meta`` in its ``_meta`` too; the JSON-RPC
    answer."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": OPTED_IN
        if capabilities is None
        else capabilities,
        **(meta or {}),
    }
    sent = dict(HEADERS) | {"mcp-protocol-version": MODERN, "mcp-method": method}
    if "name" in params:
        sent["mcp-name"] = params["name"]
    sent |= headers or {}
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params | {"_meta": meta}}
    answer = httpx2.post(server.url, json=body, headers=sent, timeout=30)
    return dict(answer.json())


def legacy(
    server: RunningServer,
    method: str,
    params: dict[str, Any],
    headers: dict[str, str] | None = None,
) -> dict[str, Any]:
    """``method`` as a 2025-11-25 client sends it (stateless: no session); the answer."""
    sent = dict(HEADERS) | {"mcp-protocol-version": LEGACY} | (headers or {})
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


def wait_for(path: Path, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.02)


def settle_on(server: RunningServer, task_id: str, message: str) -> dict[str, Any]:
    """The task once its status message is ``message``."""
    deadline = time.monotonic() + 10
    while True:
        got: dict[str, Any] = modern(server, "tasks/get", {"taskId": task_id})["result"]
        if got.get("statusMessage") == message or time.monotonic() > deadline:
            return got
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


@pytest.mark.parametrize(
    ("given", "checking"), [(None, "False"), ("false", "True")], ids=["by default", "asked for"]
)
def test_the_task_stores_library_checks_its_own_calls_only_when_asked(
    given: str | None, checking: str
) -> None:
    """Docket's key-value store checks the types of Docket's calls into it at run time
    (py-key-value's beartype checks) only when ``PY_KEY_VALUE_DISABLE_BEARTYPE=false``
    asks for it: the engine imports Docket with them off."""
    code = (
        "from mcp_runtime.tasks.engine import import_docket; import_docket(); "
        "import key_value.aio; print(not key_value.aio.disable_beartype)"
    )
    env = {key: value for key, value in os.environ.items() if key != KEY_VALUE_CHECKS}
    if given is not None:
        env[KEY_VALUE_CHECKS] = given
    imported = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert imported.stdout == f"{checking}\n"


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
        "steps": {"taskSupport": "optional"},
        "steps_thread": {"taskSupport": "optional"},
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


def test_tasks_running_together_each_keep_their_own_status_message(
    service: RunningServer, folder: Path
) -> None:
    first = modern(service, "tools/call", job("s1", hold=True))["result"]
    wait_for(folder / "started-s1")
    second = modern(service, "tools/call", job("s2", steps=1, hold=True))["result"]
    assert settle_on(service, second["taskId"], "step 1 of 1")["statusMessage"] == "step 1 of 1"
    (folder / "release-s1").touch()  # the first reports "s1 released", then ends
    done = settle(lambda i: modern(service, "tasks/get", {"taskId": i}), first["taskId"])
    assert done["result"]["status"] == "completed"
    got = modern(service, "tasks/get", {"taskId": second["taskId"]})["result"]
    assert (got["status"], got["statusMessage"]) == ("working", "step 1 of 1")
    (folder / "release-s2").touch()
    done = settle(lambda i: modern(service, "tasks/get", {"taskId": i}), second["taskId"])
    assert done["result"]["status"] == "completed"


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


def test_malformed_task_params_are_named_and_create_no_task(
    service: RunningServer, folder: Path
) -> None:
    def problem(answer: dict[str, Any]) -> tuple[int, str]:
        return answer["error"]["code"], answer["error"]["message"]

    refused = legacy(service, "tools/call", job("b1") | {"task": "hunter2"})
    assert problem(refused) == (
        -32602,
        "Invalid params of tools/call: `task` must be an object, not a string",
    )
    refused = legacy(service, "tools/call", job("b2") | {"task": {"ttl": "hunter2"}})
    assert problem(refused) == (
        -32602,
        "Invalid params of tools/call: `task.ttl` must be an integer, not a string",
    )
    refused = modern(service, "tools/call", job("b3"), meta={"progressToken": ["hunter2"]})
    assert problem(refused) == (
        -32602,
        "Invalid params of tools/call: `_meta.progressToken` must be a string or an integer, "
        "not an array",
    )
    for ask in (legacy, modern):
        assert problem(ask(service, "tasks/get", {"taskId": 7})) == (
            -32602,
            "Invalid params of tasks/get: `taskId` must be a string, not a number",
        )
        assert problem(ask(service, "tasks/cancel", {})) == (
            -32602,
            "Invalid params of tasks/cancel: `taskId` is required",
        )
    time.sleep(0.2)
    started = [name for name in ("b1", "b2", "b3") if (folder / f"started-{name}").exists()]
    assert started == []  # no task was created, nor the tool run


def test_a_task_reads_the_headers_its_tool_declares_and_no_other(
    service: RunningServer,
) -> None:
    sent = {"x-demo-token": SECRET, "x-other": "other"}
    created = modern(service, "tools/call", job("hd1", kind="header"), headers=sent)["result"]
    done = settle(lambda i: modern(service, "tasks/get", {"taskId": i}), created["taskId"])
    assert done["result"]["result"]["structuredContent"] == {
        "message": f"token of {len(SECRET)} characters"
    }
    created = modern(service, "tools/call", job("hd2", kind="undeclared"), headers=sent)["result"]
    done = settle(lambda i: modern(service, "tasks/get", {"taskId": i}), created["taskId"])
    result = done["result"]["result"]
    assert (done["result"]["status"], result["isError"]) == ("completed", True)
    assert result["content"][0]["text"] == (
        "Tool 'job' read the request header 'x-other' while running as a task, but does not "
        "declare it: a task reads only the headers its tool declares, which are kept with "
        "the task for a run that takes it over. Declare it with "
        "@tool_metadata(task_headers=['x-demo-token', 'x-other'])."
    )
    plain = modern(
        service, "tools/call", job("hd3", kind="undeclared"), capabilities={}, headers=sent
    )
    assert plain["result"]["isError"] is False  # a plain call reads any header


def test_a_sync_task_tool_saves_and_reads_its_checkpoints(service: RunningServer) -> None:
    arguments = {"name": "cp1", "count": 3}
    created = modern(service, "tools/call", {"name": "steps_thread", "arguments": arguments})
    task_id = created["result"]["taskId"]
    done = settle(lambda i: modern(service, "tasks/get", {"taskId": i}), task_id)["result"]
    assert done["result"]["structuredContent"] == {"message": "3 steps of cp1, last {'done': 3}"}
    plain = modern(
        service, "tools/call", {"name": "steps_thread", "arguments": arguments}, capabilities={}
    )
    assert plain["result"]["structuredContent"] == {"message": "3 steps of cp1, last None"}


def test_a_2025_task_is_kept_the_ttl_its_client_asks_up_to_the_maximum(
    service: RunningServer,
) -> None:
    asked = {}
    for ttl in (1500, 60_000, None):
        task = {} if ttl is None else {"ttl": ttl}
        created = legacy(service, "tools/call", job(f"ttl-{ttl}") | {"task": task})
        asked[ttl] = created["result"]["task"]
    assert [asked[ttl]["ttl"] for ttl in (1500, 60_000, None)] == [1500, 30_000, 20_000]
    short = asked[1500]["taskId"]
    done = settle(lambda i: legacy(service, "tasks/get", {"taskId": i}), short)
    assert done["result"]["ttl"] == 1500
    deadline = time.monotonic() + 10
    while "result" in legacy(service, "tasks/get", {"taskId": short}):
        assert time.monotonic() < deadline, "the task outlived the ttl it announced"
        time.sleep(0.1)
    kept = legacy(service, "tasks/get", {"taskId": asked[60_000]["taskId"]})
    assert kept["result"]["status"] == "completed"


def without_ids(answer: dict[str, Any]) -> dict[str, Any]:
    """An error answer without its task id, for comparing two."""
    return {"code": answer["error"]["code"], "message": answer["error"]["message"]}


def test_a_task_is_its_callers_alone_and_knows_its_caller(
    guarded: tuple[LocalIssuer, RunningServer],
) -> None:
    issuer, server = guarded
    ada, bob = bearer(issuer, "ada"), bearer(issuer, "bob")
    created = modern(server, "tools/call", job("o1", kind="caller"), headers=ada)["result"]
    task_id = created["taskId"]
    done = settle(lambda i: modern(server, "tasks/get", {"taskId": i}, headers=ada), task_id)
    assert done["result"]["result"]["structuredContent"]["message"] == "caller ada"
    unknown = modern(server, "tasks/get", {"taskId": f"{task_id[:9]}x"}, headers=bob)
    for method in ("tasks/get", "tasks/cancel"):
        answered = modern(server, method, {"taskId": task_id}, headers=bob)
        assert without_ids(answered) == without_ids(unknown), method
    assert legacy(server, "tasks/list", {}, bob)["result"]["tasks"] == []
    listed = legacy(server, "tasks/list", {}, ada)["result"]["tasks"]
    assert [entry["taskId"] for entry in listed] == [task_id]
    assert len(task_id) == 32  # an id nobody guesses: 24 random bytes


def test_a_caller_past_the_cap_of_open_tasks_is_told_so(
    guarded: tuple[LocalIssuer, RunningServer], folder: Path
) -> None:
    issuer, server = guarded
    cleo = bearer(issuer, "cleo")
    held = [
        modern(server, "tools/call", job(f"cap{n}", hold=True), headers=cleo)["result"]["taskId"]
        for n in range(2)
    ]
    refused = modern(server, "tools/call", job("cap2"), headers=cleo)["result"]
    assert refused["isError"] is True
    assert refused["structuredContent"]["error"] == "too_many_tasks"
    assert "already has 2 tasks running" in refused["content"][0]["text"]
    assert "MCP_MAX_TASKS_PER_CALLER" in refused["content"][0]["text"]
    refused_2025 = legacy(server, "tools/call", job("cap3") | {"task": {}}, cleo)
    assert refused_2025["error"]["code"] == -32600
    assert "already has 2 tasks running" in refused_2025["error"]["message"]
    other = modern(server, "tools/call", job("cap4"), headers=bearer(issuer, "dan"))
    assert other["result"]["resultType"] == "task"
    for task_id in held:
        modern(server, "tasks/cancel", {"taskId": task_id}, headers=cleo)
    again = modern(server, "tools/call", job("cap5"), headers=cleo)["result"]
    assert again["resultType"] == "task"


def test_creations_at_once_past_the_cap_keep_exactly_the_cap(
    guarded: tuple[LocalIssuer, RunningServer],
) -> None:
    """Creations sent together are stored together: of eight at once, exactly the cap's
    two are tasks, and each other is told it is past the cap."""
    issuer, server = guarded
    eve = bearer(issuer, "eve")

    def create(n: int) -> dict[str, Any]:
        answer = modern(server, "tools/call", job(f"burst{n}", hold=True), headers=eve)
        return dict(answer["result"])

    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(create, range(8)))
    accepted = [answer["taskId"] for answer in answers if answer.get("resultType") == "task"]
    refused = [answer for answer in answers if answer.get("isError")]
    assert len(accepted) == 2, answers
    assert len(refused) == 6, answers
    assert {answer["structuredContent"]["error"] for answer in refused} == {"too_many_tasks"}
    for task_id in accepted:
        modern(server, "tasks/cancel", {"taskId": task_id}, headers=eve)


# On Redis -------------------------------------------------------------------------------

TASK_KEY = "QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUE="  # seals what tasks keep
SECRET = "demo-token-3c5a1f0e9b"  # the credential the task's request carries
ARGUMENT = "argument-77e2b41c"  # an argument the task is called with


STORE_DOWN = re.compile(
    r"The service cannot reach its task store right now, so (?P<what>[^:]+): try again in a "
    r"minute\. \(The service's log has the details under error id (?P<id>[0-9a-f]{12})\.\)"
)


@pytest.mark.any_python
def test_a_store_that_stops_answering_is_said_so_and_plain_calls_go_on(
    redis_starter: Callable[[Path, int], "subprocess.Popen[bytes]"], tmp_path: Path
) -> None:
    port = free_port()
    store = redis_starter(tmp_path, port)
    env = {
        "SLOW_SERVICE_DIR": str(tmp_path),
        "MCP_TOOLSETS": "tasks,answers",
        "MCP_AUTH": "none",
        "MCP_TASKS_URL": f"redis://127.0.0.1:{port}/0",
        "MCP_TASK_KEYS": TASK_KEY,
    }
    try:
        with run_server(SLOW_SERVICE, env=env) as server:
            ended = modern(server, "tools/call", job("d1"))["result"]["taskId"]
            assert settle(lambda i: modern(server, "tasks/get", {"taskId": i}), ended)
            store.terminate()
            store.wait(timeout=10)
            refused = modern(server, "tools/call", job("d2"))["result"]
            assert refused["isError"] is True
            assert refused["structuredContent"]["error"] == "tasks_unavailable"
            assert json.loads(refused["content"][0]["text"]) == refused["structuredContent"]
            said = [refused["structuredContent"]["detail"]]
            said.append(legacy(server, "tools/call", job("d3") | {"task": {}})["error"]["message"])
            said.append(modern(server, "tasks/get", {"taskId": ended})["error"]["message"])
            found = [STORE_DOWN.fullmatch(text) for text in said]
            assert all(found), said
            assert [match["what"] for match in found if match] == [
                "the task was not created",
                "the task was not created",
                "tasks/get could not be answered",
            ]
            assert not any(str(port) in text for text in said)  # where the store is: logged
            plain = legacy(server, "tools/call", {"name": "answer", "arguments": {"kind": "ok"}})
            assert plain["result"]["structuredContent"] == {"message": "ok ", "data": ""}
            log = server.log()
            for match in found:
                assert match is not None
                assert f"the task store did not answer (error id {match['id']}): " in log
            store = redis_starter(tmp_path, port)  # back: tasks are created again
            deadline = time.monotonic() + 15
            while "taskId" not in (again := modern(server, "tools/call", job("d4"))["result"]):
                assert time.monotonic() < deadline, again
                time.sleep(0.2)
    finally:
        store.terminate()
        store.wait(timeout=10)


@pytest.fixture(scope="module")
def pair(
    redis_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Path, RunningServer, RunningServer]]:
    """Two processes of the slow test service, on two ports, sharing the one Redis."""
    folder = tmp_path_factory.mktemp("tasks-redis")
    env = {
        "SLOW_SERVICE_DIR": str(folder),
        "MCP_TOOLSETS": "tasks",
        "MCP_AUTH": "none",
        "MCP_TASKS_URL": redis_url,
        "MCP_TASK_KEYS": TASK_KEY,
        "MCP_TASK_POLL_INTERVAL": "0.05",
    }
    with run_server(SLOW_SERVICE, env=env) as first, run_server(SLOW_SERVICE, env=env) as second:
        yield folder, first, second


@pytest.mark.any_python
def test_a_task_created_through_one_process_is_answered_by_the_other(
    pair: tuple[Path, RunningServer, RunningServer],
) -> None:
    _, first, second = pair
    created = modern(first, "tools/call", job("r1", steps=2, text="shared"))["result"]
    done = settle(lambda i: modern(second, "tasks/get", {"taskId": i}), created["taskId"])
    assert done["result"]["status"] == "completed"
    assert done["result"]["result"]["structuredContent"] == {
        "message": "ok shared",
        "data": "shared",
    }
    tasked = legacy(first, "tools/call", job("r2", text="legacy") | {"task": {}})["result"]
    task_id = tasked["task"]["taskId"]
    answered = legacy(second, "tasks/result", {"taskId": task_id})["result"]
    assert answered["structuredContent"] == {"message": "ok legacy", "data": "legacy"}


@pytest.mark.any_python
def test_a_status_read_leaves_the_result_sealed(
    redis_command: Callable[..., str], pair: tuple[Path, RunningServer, RunningServer]
) -> None:
    """Reading how a task stands (2025-11-25's ``tasks/get`` and ``tasks/list``) neither
    reads nor opens its result, which may be large: with the stored result replaced by one
    no key opens, both still answer, and only ``tasks/result`` meets it, which answers
    that the task failed and why."""
    _, first, second = pair
    tasked = legacy(first, "tools/call", job("r5", text="sealed") | {"task": {}})["result"]
    task_id = tasked["task"]["taskId"]
    done = settle(lambda i: legacy(second, "tasks/get", {"taskId": i}), task_id)
    assert done["result"]["status"] == "completed"
    key = f"mcp-tasks:slow-service:record:{task_id}"
    assert redis_command("HSET", key, "result", "not-a-sealed-result") == "0"
    got = legacy(second, "tasks/get", {"taskId": task_id})["result"]
    assert (got["taskId"], got["status"]) == (task_id, "completed")
    listed = legacy(first, "tasks/list", {})["result"]["tasks"]
    assert {"taskId": task_id, "status": "completed"}.items() <= next(
        entry for entry in listed if entry["taskId"] == task_id
    ).items()
    unopened = legacy(first, "tasks/result", {"taskId": task_id})
    assert unopened["error"] == {
        "code": -32603,
        "message": "The task's result opens with none of the service's keys (MCP_TASK_KEYS: "
        "the key that sealed it was dropped before the task expired), so it cannot be read: "
        "call the tool again.",
    }


@pytest.mark.any_python
def test_a_task_cancelled_through_the_other_process_stops_where_it_runs(
    pair: tuple[Path, RunningServer, RunningServer],
) -> None:
    folder, first, second = pair
    created = modern(first, "tools/call", job("r3", steps=1, hold=True))["result"]
    wait_for(folder / "started-r3")
    working = settle_on(second, created["taskId"], "step 1 of 1")
    assert working["status"] == "working"
    modern(second, "tasks/cancel", {"taskId": created["taskId"]})
    wait_for(folder / "cancelled-r3")
    got = modern(first, "tasks/get", {"taskId": created["taskId"]})["result"]
    assert got["status"] == "cancelled"


@pytest.mark.any_python
def test_no_credential_header_or_argument_is_written_to_the_store(
    redis_command: Callable[..., str], pair: tuple[Path, RunningServer, RunningServer]
) -> None:
    _, first, second = pair
    created = modern(
        first,
        "tools/call",
        job("s1", kind="header", text=ARGUMENT),
        headers={"x-demo-token": SECRET, "authorization": f"Bearer {SECRET}"},
    )["result"]
    done = settle(lambda i: modern(second, "tasks/get", {"taskId": i}), created["taskId"])
    # The tool read the header, in the process that ran it.
    expected = f"token of {len(SECRET)} characters"
    assert done["result"]["result"]["structuredContent"]["message"] == expected
    assert redis_command("SAVE") == "OK"
    folder = Path(redis_command("CONFIG", "GET", "dir").split("\n")[1])
    dump = (folder / "dump.rdb").read_bytes()
    assert created["taskId"].encode() in dump  # the store was searched whole: the task is there
    assert SECRET.encode() not in dump
    assert ARGUMENT.encode() not in dump


@pytest.mark.any_python
def test_a_finished_task_is_kept_for_its_ttl_then_removed(folder: Path) -> None:
    env = {
        "SLOW_SERVICE_DIR": str(folder),
        "MCP_TOOLSETS": "tasks",
        "MCP_AUTH": "none",
        "MCP_TASK_TTL": "1",
    }
    with run_server(SLOW_SERVICE, env=env) as server:
        created = modern(server, "tools/call", job("ttl1"))["result"]
        done = settle(lambda i: modern(server, "tasks/get", {"taskId": i}), created["taskId"])
        assert done["result"]["status"] == "completed"
        ended = time.monotonic()
        kept = modern(server, "tasks/get", {"taskId": created["taskId"]})
        deadline = ended + 10
        while "result" in (gone := modern(server, "tasks/get", {"taskId": created["taskId"]})):
            assert time.monotonic() < deadline, "the finished task was never removed"
            time.sleep(0.1)
        removed_after = time.monotonic() - ended
    assert kept["result"]["status"] == "completed"
    assert gone["error"]["code"] == -32602
    assert gone["error"]["message"].startswith("No such task: its id is unknown")
    assert 0.5 < removed_after < 3
