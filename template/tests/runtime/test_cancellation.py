"""A client's ``notifications/cancelled`` stops the call it names, through real clients.

In memory (and over stdio and stateful HTTP) the MCP session delivers the cancel to the
call's task itself: the SDK's client sends it when the caller gives up on a call. Over
stateless streamable HTTP, the default, each POST has a session of its own, and the
runtime's front delivers it: these tests run the slow test service as a real ``serve``
process, the default way and under OAuth, and send the cancel as a client of the
2025 revisions does, naming the call's id while it still waits for the answer.
"""

import json
import logging
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from langchain_core.tools import tool
from mcp import types
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_runtime import ToolResult
from mcp_runtime.auth.oauth import Caller, owner_digest
from mcp_runtime.contract.toolsets import Toolset
from mcp_runtime.devtools.local_issuer import LocalIssuer
from mcp_runtime.execution.in_flight import InFlight
from mcp_runtime.serving.server import build_server
from mcp_runtime.testing import RunningServer, Session, connect, run_server

pytestmark = pytest.mark.anyio

SLOW_SERVICE = [sys.executable, str(Path(__file__).with_name("slow_service.py"))]
WAIT_SECONDS = 30.0
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
RESOURCE = "https://slow.example.com/mcp"

started = threading.Event()
stopped = threading.Event()
released = threading.Event()


@tool
async def wait_forever() -> ToolResult:
    """Wait until cancelled."""
    started.set()
    try:
        await anyio.sleep_forever()
    finally:
        stopped.set()
    return ToolResult(message="never")


@tool
def wait_in_thread() -> ToolResult:
    """Hold a tool thread until the test releases it."""
    started.set()
    released.wait(WAIT_SECONDS)
    return ToolResult(message="released")


@pytest.fixture(autouse=True)
def fresh_events() -> Iterator[None]:
    for event in (started, stopped, released):
        event.clear()
    yield
    released.set()


def cancelled_answer(tool: str) -> dict[str, Any]:
    message = f"Tool '{tool}' was cancelled by the client."
    return {"content": [{"type": "text", "text": message}], "isError": True}


def outcomes(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str]]:
    return [
        (record.__dict__["tool"], record.__dict__["outcome"])
        for record in caplog.records
        if record.name == "mcp_runtime.calls"
    ]


class CallIds:
    """The JSON-RPC ids of the ``tools/call`` requests a client has sent, in order."""

    def __init__(self) -> None:
        self.sent: list[types.RequestId] = []

    async def __call__(self, request: httpx2.Request) -> None:
        body = json.loads(request.content or b"null")
        if isinstance(body, dict) and body.get("method") == "tools/call":
            self.sent.append(body["id"])


class HttpClient(Session):
    """A client session over streamable HTTP that knows the ids of its calls."""

    def __init__(self, client: Client, ids: CallIds) -> None:
        super().__init__(client)
        self.ids = ids


@asynccontextmanager
async def connect_http(
    url: str, *, headers: Mapping[str, str] | None = None
) -> AsyncIterator[HttpClient]:
    """A client of the 2025 revisions at ``url``, sending ``headers``."""
    ids = CallIds()
    async with (
        httpx2.AsyncClient(
            headers=dict(headers or {}), timeout=WAIT_SECONDS, event_hooks={"request": [ids]}
        ) as http,
        Client(streamable_http_client(url, http_client=http), mode="legacy", cache=None) as client,
    ):
        yield HttpClient(client, ids)


async def cancel(session: HttpClient, request_id: types.RequestId) -> None:
    """Send ``notifications/cancelled`` for ``request_id``, as a client does."""
    params = types.CancelledNotificationParams(request_id=request_id, reason="no longer needed")
    await session.client.session.send_notification(types.CancelledNotification(params=params))


async def eventually(check: Callable[[], bool], what: str) -> None:
    """Wait until ``check()`` holds; fail the test, naming ``what``, after ``WAIT_SECONDS``."""
    with anyio.move_on_after(WAIT_SECONDS):
        while not check():
            await anyio.sleep(0.02)
        return
    pytest.fail(f"{what}: not within {WAIT_SECONDS:g} seconds")


class Running:
    """A call of a tool running in a task of its own, with its request id and its end."""

    def __init__(self) -> None:
        self.request_id: types.RequestId = -1
        self.result: types.CallToolResult | None = None
        self.done = anyio.Event()


@asynccontextmanager
async def calling(
    session: HttpClient,
    tool: str,
    arguments: dict[str, Any],
    has_started: Callable[[], bool],
) -> AsyncIterator[Running]:
    """Call ``tool`` in a task; yield once it has started; wait for its answer at the end."""
    running = Running()

    async def call() -> None:
        running.result = await session.call_tool(tool, arguments)
        running.done.set()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(call)
        await eventually(has_started, f"{tool} started")
        running.request_id = session.ids.sent[-1]
        yield running
        with anyio.fail_after(WAIT_SECONDS):
            await running.done.wait()


# --- in memory: the SDK's session cancels the call's task ---------------------------


async def gives_up_once_started(session: Session, tool: str) -> None:
    """Call ``tool`` and give up once it has started: the client sends the cancel."""
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(session.call_tool, tool, {})
        await eventually(started.is_set, f"{tool} started")
        tasks.cancel_scope.cancel()


async def test_a_cancelled_async_tool_stops_in_memory(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="mcp_runtime.calls")
    server = build_server([Toolset("cancelling", (wait_forever,))], name="cancelling")
    async with connect(server) as session:
        await gives_up_once_started(session, "wait_forever")
        await eventually(stopped.is_set, "the tool stopped")
    assert outcomes(caplog) == [("wait_forever", "cancelled")]


async def test_a_cancelled_sync_tool_is_abandoned_in_memory(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="mcp_runtime")
    server = build_server([Toolset("cancelling", (wait_in_thread,))], name="cancelling")
    async with connect(server) as session:
        await gives_up_once_started(session, "wait_in_thread")
        await eventually(lambda: bool(outcomes(caplog)), "the call's line")
    still_held = not released.is_set()
    assert still_held
    assert outcomes(caplog) == [("wait_in_thread", "cancelled")]
    assert any("still running after its call ended" in line for line in caplog.messages)


# --- stateless HTTP: the front cancels the call -------------------------------------


@pytest.fixture
def slow(tmp_path: Path) -> Iterator[RunningServer]:
    """The slow test service as its own process, serving statelessly (the default)."""
    with run_server(SLOW_SERVICE, env={"SLOW_SERVICE_DIR": str(tmp_path)}) as server:
        yield server


def marker(folder: Path, name: str) -> Callable[[], bool]:
    return (folder / name).exists


@pytest.mark.parametrize("tool", ["hold", "hold_thread"])
async def test_a_cancel_over_stateless_http_stops_the_call(
    slow: RunningServer, tmp_path: Path, tool: str
) -> None:
    async with (
        connect_http(slow.url) as session,
        calling(session, tool, {"name": "a"}, marker(tmp_path, "started-a")) as running,
    ):
        await cancel(session, running.request_id)
    assert running.result is not None
    assert running.result.model_dump(
        by_alias=True, exclude_none=True, exclude={"result_type"}
    ) == cancelled_answer(tool)
    if tool == "hold":
        assert (tmp_path / "cancelled-a").exists()  # the tool's own cleanup ran
    else:
        assert "still running after its call ended" in slow.log()
    assert f"tool={tool} outcome=cancelled" in slow.log()
    assert "no longer needed" not in slow.log()  # a client's text is never logged
    (tmp_path / "release").touch()
    async with connect_http(slow.url) as session:
        after = await session.call_tool("hold", {"name": "b"})
    assert after.is_error is False


async def test_the_cancel_itself_is_answered_202(slow: RunningServer) -> None:
    cancelled = {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": 7},
    }
    async with httpx2.AsyncClient() as client:
        answer = await client.post(slow.url, headers=HEADERS, json=cancelled)
    assert (answer.status_code, answer.content) == (202, b"")


async def test_a_cancel_two_anonymous_calls_share_cancels_neither(
    slow: RunningServer, tmp_path: Path
) -> None:
    async with (
        connect_http(slow.url) as first,
        connect_http(slow.url) as second,
        calling(first, "hold", {"name": "a"}, marker(tmp_path, "started-a")) as one,
        calling(second, "hold", {"name": "b"}, marker(tmp_path, "started-b")) as other,
    ):
        assert one.request_id == other.request_id  # each session counts from the same start
        await cancel(first, one.request_id)
        await eventually(lambda: "none of them is cancelled" in slow.log(), "the log line")
        (tmp_path / "release").touch()
    assert one.result is not None
    assert other.result is not None
    assert (one.result.is_error, other.result.is_error) == (False, False)


async def test_under_oauth_a_cancel_stops_only_its_callers_call(
    tmp_path: Path, oauth_issuer: LocalIssuer
) -> None:
    env = {"SLOW_SERVICE_DIR": str(tmp_path), **oauth_issuer.environment(RESOURCE)}

    def bearer(subject: str) -> dict[str, str]:
        token = oauth_issuer.token(subject=subject, audience=RESOURCE)
        return {"authorization": f"Bearer {token}"}

    with run_server(SLOW_SERVICE, env=env) as server:
        async with (
            connect_http(server.url, headers=bearer("alice")) as alice,
            connect_http(server.url, headers=bearer("bob")) as bob,
            connect_http(server.url, headers=bearer("carol")) as carol,
            calling(alice, "hold", {"name": "a"}, marker(tmp_path, "started-a")) as alices,
            calling(bob, "hold", {"name": "b"}, marker(tmp_path, "started-b")) as bobs,
        ):
            await cancel(carol, alices.request_id)  # carol has no call with that id
            await cancel(alice, alices.request_id)
            await eventually(marker(tmp_path, "cancelled-a"), "alice's call cancelled")
            (tmp_path / "release").touch()
    assert alices.result is not None
    assert alices.result.model_dump(
        by_alias=True, exclude_none=True, exclude={"result_type"}
    ) == cancelled_answer("hold")
    assert bobs.result is not None
    assert bobs.result.structured_content == {"message": "released b"}
    assert not (tmp_path / "cancelled-b").exists()


# --- the registry ---------------------------------------------------------------------


async def test_a_cancel_names_the_call_by_owner_and_id_of_the_same_type() -> None:
    calls = InFlight()
    alice = owner_digest(Caller(subject="alice", client_id="app"))
    entered = {5: anyio.Event(), "5": anyio.Event()}
    stopped: dict[object, bool] = {}

    async def call(request_id: int | str) -> None:
        with calls.call("t", alice, request_id) as running:
            entered[request_id].set()
            await anyio.sleep(WAIT_SECONDS)
        stopped[request_id] = running.stopped("client")

    async with anyio.create_task_group() as group:
        group.start_soon(call, 5)
        group.start_soon(call, "5")
        await entered[5].wait()
        await entered["5"].wait()
        assert calls.cancel(owner_digest(Caller(subject="bob", client_id="app")), 5) is False
        assert calls.cancel(owner_digest(None), 5) is False
        assert calls.cancel(alice, 6) is False
        assert calls.cancel(alice, 5) is True
        await anyio.wait_all_tasks_blocked()
        assert (stopped, calls.count) == ({5: True}, 1)
        assert calls.cancel(alice, "5") is True
    assert stopped == {5: True, "5": True}
    assert calls.count == 0
