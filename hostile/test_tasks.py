"""Tools that misbehave, run as tasks, in both eras of tasks (2025-11-25's experimental
tasks, and 2026-07-28's extension): whatever a task's tool raises, returns or holds, the
task ends (never ``working`` for ever) with the answer a plain call gets, a large result
arrives whole in one JSON body, a cancelled task stays cancelled, and the server goes on
running tasks.
"""

import time
from typing import Any

import pytest
from harness import (
    ANSWER_SECONDS,
    MASKED,
    MODERN,
    Answer,
    Launcher,
    Server,
    Slot,
    error_text,
    toolset,
    validate,
    violation_prefix,
)
from test_exceptions import UNEXPECTED

TASKS_2025 = "2025-11-25"
EXTENSION = "io.modelcontextprotocol/tasks"
TASK_TIMEOUT = 2
SECRET_KEY = "acct-4471-secret"


@pytest.fixture(scope="module")
def slot(launch: Launcher) -> Slot:
    """The module's server: tasks held to ``TASK_TIMEOUT`` seconds."""
    return Slot(launch, MCP_CALL_TIMEOUT="5", MCP_TASK_TIMEOUT=str(TASK_TIMEOUT))


@pytest.fixture(params=[TASKS_2025, MODERN])
def task_era(request: pytest.FixtureRequest) -> str:
    """The revision a test's tasks speak: each in turn."""
    revision: str = request.param
    return revision


def send(
    server: Server, era: str, method: str, params: dict[str, Any], seconds: float = ANSWER_SECONDS
) -> Answer:
    """``method`` as a client of ``era`` that asks for tasks sends it (stateless), waiting
    ``seconds`` for the answer."""
    headers = {"mcp-protocol-version": era}
    if era == MODERN:
        params = params | {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": era,
                "io.modelcontextprotocol/clientInfo": {"name": "hostile", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {"extensions": {EXTENSION: {}}},
            }
        }
        headers |= {"mcp-method": method, "mcp-name": params.get("name", params.get("taskId"))}
    request = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    return server.post(request, headers=headers, seconds=seconds)


def start(server: Server, era: str, name: str, arguments: dict[str, Any]) -> str:
    """Create a task of ``name``; its id."""
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if era != MODERN:
        params["task"] = {}
    created = send(server, era, "tools/call", params).result
    task_id: str = created["taskId"] if era == MODERN else created["task"]["taskId"]
    return task_id


def finish(server: Server, era: str, task_id: str, seconds: float = 10) -> tuple[str, Answer]:
    """Poll the task until it ends, for up to ``seconds`` (each request too); its status
    and the answer that carries its result (the last ``tasks/get`` in 2026-07-28,
    ``tasks/result`` in 2025-11-25)."""
    deadline = time.monotonic() + seconds
    while True:
        answer = send(server, era, "tasks/get", {"taskId": task_id}, seconds)
        status: str = answer.result["status"]
        if status != "working":
            break
        assert time.monotonic() < deadline, f"the task still works after {seconds} s"
        time.sleep(0.05)
    if era != MODERN and status == "completed":
        answer = send(server, era, "tasks/result", {"taskId": task_id}, seconds)
    return status, answer


def result_of(era: str, answer: Answer) -> dict[str, Any]:
    result: dict[str, Any] = answer.result["result"] if era == MODERN else answer.result
    return result


def run(server: Server, era: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A task of ``name`` run to its end, which must be ``completed``: its result, whose
    ``structuredContent`` is valid under the tool's ``outputSchema``."""
    status, answer = finish(server, era, start(server, era, name, arguments))
    assert status == "completed", answer.result
    result = result_of(era, answer)
    if "structuredContent" in result:
        validate(server.schemas[name], result["structuredContent"])
    return result


def still_runs_tasks(server: Server, era: str) -> None:
    server.assert_alive()
    result = run(server, era, "sleep_sync_task", {"seconds": 0})
    assert result["structuredContent"] == {"message": "slept 0 s"}


@pytest.mark.parametrize("kind", UNEXPECTED)
@pytest.mark.parametrize("tool", ["raise_sync_task", "raise_async_task"])
def test_an_unexpected_exception_ends_the_task_with_one_masked_answer(
    server: Server, tool: str, kind: str, task_era: str
) -> None:
    text = error_text(run(server, task_era, tool, {"kind": kind}))
    match = MASKED.fullmatch(text)
    assert match, f"not the masked message: {text!r}"
    assert match["tool"] == tool
    still_runs_tasks(server, task_era)


@pytest.mark.parametrize("tool", ["raise_sync_task", "raise_async_task"])
def test_a_tool_exception_message_passes_through_a_task(
    server: Server, tool: str, task_era: str
) -> None:
    result = run(server, task_era, tool, {"kind": "tool_exception"})
    assert error_text(result) == toolset().REFUSAL


@pytest.mark.parametrize("kind", ["nan", "bytes"])
def test_a_task_result_json_cannot_carry_is_refused_without_its_values(
    server: Server, kind: str, task_era: str
) -> None:
    mark = server.mark()
    text = error_text(run(server, task_era, "unserializable_task", {"kind": kind}))
    assert text.startswith(violation_prefix("unserializable_task")), text
    assert SECRET_KEY not in text
    assert SECRET_KEY not in server.log_since(mark)
    still_runs_tasks(server, task_era)


def test_a_large_task_result_arrives_whole_in_one_json_body(server: Server, task_era: str) -> None:
    task_id = start(server, task_era, "big_task", {"megabytes": 20})
    # What is proved is the answer's form, not its speed: on a busy machine, sealing,
    # storing and sending 40 MB (the text block and the structured content) takes seconds.
    status, answer = finish(server, task_era, task_id, seconds=60)
    assert status == "completed"
    # One JSON body, not a server-sent event: the Python SDK's client refuses an event
    # over 1 MiB.
    assert answer.content_type.startswith("application/json"), answer.content_type
    assert len(result_of(task_era, answer)["structuredContent"]["text"]) == 20_000_000


def test_a_task_hung_in_its_thread_ends_at_the_task_timeout(server: Server, task_era: str) -> None:
    hung = start(server, task_era, "sleep_sync_task", {"seconds": TASK_TIMEOUT + 2})
    still_runs_tasks(server, task_era)  # beside it
    status, answer = finish(server, task_era, hung)
    assert status == "completed"
    assert error_text(result_of(task_era, answer)) == (
        f"Tool 'sleep_sync_task' did not finish within {TASK_TIMEOUT} seconds: try again "
        "later, or ask for less at once."
    )
    still_runs_tasks(server, task_era)


def test_a_task_cancelled_while_its_thread_runs_stays_cancelled(
    server: Server, task_era: str
) -> None:
    task_id = start(server, task_era, "sleep_sync_task", {"seconds": 1})
    time.sleep(0.2)
    cancelled = send(server, task_era, "tasks/cancel", {"taskId": task_id})
    assert cancelled.status == 200, cancelled.body
    status, _ = finish(server, task_era, task_id)
    assert status == "cancelled"
    time.sleep(1.5)  # the thread has returned since: its result is not the task's
    assert finish(server, task_era, task_id)[0] == "cancelled"
    still_runs_tasks(server, task_era)
