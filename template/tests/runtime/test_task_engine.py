"""The task engine in one process, on the embedded store and on Redis: the task methods
are told of what they wait for instead of polling, and each reads its tasks in one round
trip (the store's steps are counted, never timed)."""

import asyncio
import secrets
from collections.abc import AsyncIterator, Callable
from typing import Any, NotRequired

import pytest
from cryptography.fernet import Fernet
from langchain_core.tools import tool

from mcp_runtime import ToolError, ToolResult, tool_metadata
from mcp_runtime.config.settings import ServiceSettings
from mcp_runtime.contract.toolsets import Toolset
from mcp_runtime.execution.state import ServiceState
from mcp_runtime.serving.server import build_server
from mcp_runtime.tasks.engine import TaskEngine
from mcp_runtime.tasks.request import TaskRequest
from mcp_runtime.tasks.store import CANCEL, FIELDS, LIST, OPEN, TaskStore

pytestmark = pytest.mark.anyio

RELEASED: dict[str, asyncio.Event] = {}
STARTED: list[str] = []
CLEANED: list[str] = []


class Held(ToolResult):
    """The name the test released."""

    name: NotRequired[str]


@tool_metadata(task="optional")
@tool
async def held(name: str) -> Held | ToolError:
    """Wait until the test releases ``name``, then answer it."""
    STARTED.append(name)
    try:
        await RELEASED[name].wait()
    finally:
        CLEANED.append(name)
    return Held(message=name, name=name)


@pytest.fixture(params=["memory", "redis"])
async def engine(request: pytest.FixtureRequest) -> AsyncIterator[TaskEngine]:
    url = "memory://"
    if request.param == "redis":
        url = request.getfixturevalue("redis_url")
    settings = ServiceSettings(
        stateless=True,
        auth="none",
        tasks_url=url,
        task_keys=Fernet.generate_key().decode(),
        task_poll_interval=0.05,
    )
    if url == "memory://":
        settings = ServiceSettings(stateless=True, auth="none", task_poll_interval=0.05)
    state = ServiceState(settings)
    name = f"engine-{secrets.token_hex(4)}"  # keys of its own on the shared Redis
    build_server([Toolset("held", (held,))], name=name, settings=settings, state=state)
    engine = state.tasks
    assert isinstance(engine, TaskEngine)
    engine.start()
    try:
        yield engine
    finally:
        await engine.close()


def counted(store: TaskStore) -> list[str]:
    """The scripts ``store`` runs from now on, each a round trip."""
    steps: list[str] = []
    run: Callable[..., Any] = store._run

    async def counting(
        script: str, keys: list[str], args: list[str], slots: asyncio.Semaphore | None
    ) -> Any:
        steps.append(script)
        return await run(script, keys, args, slots)

    store._run = counting  # type: ignore[method-assign]  # counts the store's own steps
    return steps


async def created(engine: TaskEngine, name: str, owner: str = "owner") -> str:
    RELEASED[name] = asyncio.Event()
    tool = engine.runner.tools["held"]
    record = await engine.create(tool, TaskRequest(None, {}, {"name": name}, "2025-11-25"), owner)
    return record.task_id


async def running(engine: TaskEngine, task_id: str) -> None:
    """Wait until task ``task_id`` runs in this process."""
    for _ in range(500):
        if task_id in engine.runner.running:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the task did not start")


async def test_a_waiting_result_is_told_of_the_end_and_reads_the_task_once_more(
    engine: TaskEngine,
) -> None:
    name = secrets.token_hex(4)
    task_id = await created(engine, name)
    await running(engine, task_id)
    steps = counted(engine.store)
    waiting = asyncio.create_task(engine.wait("owner", task_id))
    await asyncio.sleep(1.0)  # twenty poll intervals: a polling wait would read twenty times
    reads_while_working = len(steps)
    RELEASED[name].set()
    record = await asyncio.wait_for(waiting, 10)
    assert record is not None
    assert record.status == "completed"
    assert record.result is not None
    assert record.result["structuredContent"] == {"message": name, "name": name}
    assert reads_while_working == 1
    assert steps.count(FIELDS) == 2  # the first read, and the one its end woke


async def test_a_cancel_is_one_round_trip_and_answers_once_its_run_has_stopped(
    engine: TaskEngine,
) -> None:
    name = secrets.token_hex(4)
    task_id = await created(engine, name)
    await running(engine, task_id)
    steps = counted(engine.store)
    record = await engine.cancel("owner", task_id)
    assert record is not None
    assert record.status == "cancelled"
    assert record.status_message == "The task was cancelled."
    assert name in CLEANED  # its tool's cleanup ran before the cancel answered
    assert steps == [CANCEL]
    assert await engine.cancel("another owner", task_id) is None
    again = await engine.cancel("owner", task_id)
    assert again is not None
    assert again.status == "cancelled"


async def test_a_list_and_the_cap_read_the_tasks_in_one_round_trip(engine: TaskEngine) -> None:
    names = [secrets.token_hex(4) for _ in range(5)]
    ids = [await created(engine, name, owner="lister") for name in names]
    for task_id in ids:
        await running(engine, task_id)
    RELEASED[names[0]].set()
    assert (await engine.wait("lister", ids[0])) is not None
    steps = counted(engine.store)
    listed = await engine.list("lister")
    assert [record.task_id for record in listed] == ids
    assert [record.status for record in listed] == ["completed"] + ["working"] * 4
    assert await engine.store.open_count("lister") == 4
    assert steps == [LIST, OPEN]
    for name in names[1:]:
        RELEASED[name].set()


async def test_a_cancel_told_as_the_run_begins_stops_it_before_its_tool(
    engine: TaskEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cancel between the run's start in the record and its tool's call (the race a
    busy client meets) still stops the run: it is running from before its start."""
    name = secrets.token_hex(4)
    begin = engine.store.begin
    cancels: list[asyncio.Task[Any]] = []

    async def cancelled_as_it_begins(
        task_id: str, taken_over: bool, slots: asyncio.Semaphore
    ) -> dict[str, str]:
        record = await begin(task_id, taken_over, slots)
        cancels.append(asyncio.create_task(engine.cancel("owner", task_id)))
        await asyncio.sleep(0.5)  # the cancel's notice arrives before the tool is called
        return record

    monkeypatch.setattr(engine.store, "begin", cancelled_as_it_begins)
    task_id = await created(engine, name)
    for _ in range(500):
        if cancels:
            break
        await asyncio.sleep(0.01)
    record = await asyncio.wait_for(cancels[0], 10)
    assert record is not None
    assert record.status == "cancelled"
    assert task_id not in engine.runner.running  # stopped before the cancel answered
    await asyncio.sleep(1.0)  # past the start: a run the cancel missed calls its tool now
    assert name not in STARTED
    RELEASED[name].set()
