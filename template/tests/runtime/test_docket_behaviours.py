"""Behaviours of Docket (``pydocket`` 0.27) itself that the task engine works around, each
pinned by a test of Docket alone (its public API, on a real ``redis-server`` or on
``memory://``), so that a Docket release that no longer behaves so fails its test: the
engine's workaround can then go.

The store error that stops a worker is provoked for real: the connection on which the
worker's polling loop waits for tasks (a blocked ``XREADGROUP``) is closed by the server
(``CLIENT KILL ID``, sent by a client of the test's own), so the read fails with
``ConnectionError``, as it does when a store restarts or a network drops the connection.
The worker's connections are named (``client_name``) so that only the worker's are
looked for.
"""

import asyncio
import base64
import contextlib
import inspect
import pickle
import secrets
import time
from collections.abc import AsyncIterator, Callable, Collection
from datetime import timedelta

import pytest
from docket import Docket, Worker
from redis.asyncio import Redis

pytestmark = [pytest.mark.anyio, pytest.mark.any_python]

HEARTBEAT = timedelta(seconds=0.1)
"""The dockets' heartbeat interval: a worker that beats is seen at once."""
RECONNECTION = timedelta(seconds=0.05)
"""How long a worker waits after a store error before it reads again."""
POLL_BLOCK = timedelta(seconds=30)
"""How long the worker's polling read blocks for: longer than any test, so the read is
always blocked (never between two reads) when its connection is closed."""
WATCH = 2.0
"""How long a test watches for what Docket does not do: twenty heartbeats and forty
reconnection delays, plenty for a Docket that would do it."""
DEADLINE = 15.0
"""How long a test waits for what Docket does (on a loaded machine too)."""


async def until(check: Callable[[], bool], what: str, seconds: float = DEADLINE) -> None:
    """Wait until ``check()``, failing with ``what`` after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.01)


async def beating(docket: Docket) -> Collection[str]:
    """The names of the workers whose heartbeats the docket sees as fresh."""
    return {worker.name for worker in await docket.workers()}


async def until_beating(docket: Docket, worker: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while worker not in await beating(docket):
        assert time.monotonic() < deadline, f"{worker} never beat its heartbeat"
        await asyncio.sleep(0.02)


async def until_not_beating(docket: Docket, worker: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while worker in await beating(docket):
        assert time.monotonic() < deadline, (
            f"{worker} beats its heartbeat on after the store error: Docket's worker no "
            "longer stops its polling loop on a store error"
        )
        await asyncio.sleep(0.02)


async def idle_seconds(docket: Docket, worker: str) -> float:
    """How long the one message of ``docket``'s stream, which ``worker`` holds, has been
    idle (since its delivery, or the last renewal of its lease)."""
    async with docket.redis() as redis:
        pending = await redis.xpending_range(
            docket.stream_key, docket.worker_group_name, min="-", max="+", count=10
        )
    assert [entry["consumer"] for entry in pending] == [worker.encode()], pending
    return float(pending[0]["time_since_delivered"]) / 1000


async def kill_polling_read(admin: Redis, client_name: str) -> None:
    """Close, from the server, the connection on which the worker with connections named
    ``client_name`` waits for tasks (its blocked ``XREADGROUP``)."""
    deadline = time.monotonic() + DEADLINE
    while True:
        blocked = [
            client["id"]
            for client in await admin.client_list()
            if client.get("name") == client_name
            and client.get("cmd") == "xreadgroup"
            and "b" in client.get("flags", "")
        ]
        if blocked:
            break
        assert time.monotonic() < deadline, "the worker never waited for tasks"
        await asyncio.sleep(0.01)
    assert len(blocked) == 1, blocked
    assert await admin.client_kill_filter(_id=blocked[0]) == 1


@contextlib.asynccontextmanager
async def running(worker: Worker) -> AsyncIterator[None]:
    """``worker`` entered and running (``run_forever``) for the block; stopped after."""
    async with worker:
        run = asyncio.get_running_loop().create_task(worker.run_forever())
        try:
            yield
        finally:
            run.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await run


@pytest.fixture
def client_name() -> str:
    return f"docket-behaviours-{secrets.token_hex(4)}"


@pytest.fixture
def store(redis_url: str, client_name: str) -> str:
    """The tests' Redis, as a docket's URL whose connections are named ``client_name``."""
    return f"{redis_url}?client_name={client_name}"


@pytest.fixture
async def admin(redis_url: str) -> AsyncIterator[Redis]:
    """A client of the tests' Redis of the test's own (not a docket's)."""
    client = Redis.from_url(redis_url, decode_responses=True)
    try:
        yield client
    finally:
        await client.aclose()


async def test_after_a_store_error_a_worker_takes_no_task_until_its_running_tasks_end(
    store: str, admin: Redis, client_name: str
) -> None:
    """After a store error in its polling loop, Docket's worker stops taking tasks (and
    stops beating its heartbeat, which it removes) until every task it runs has ended:
    its loop waits for them before it reconnects, so for a task of hours it takes no task
    for hours, whatever ``reconnection_delay`` says.

    The engine's workaround: :mod:`mcp_runtime.tasks.workers`' ``ProcessWorkers.keep_taking``
    starts another worker in the process when the one that takes tasks has a stale
    heartbeat (the heartbeat this test sees go, which is how the engine sees the stall),
    and stops the former once it beats again.

    When this test fails, Docket no longer does this: remove the workaround (if it fails
    because the worker still beats its heartbeat while taking no task, the workaround no
    longer sees the stall: fix it instead).
    """
    started: list[str] = []
    release = asyncio.Event()

    async def hold(name: str) -> None:
        started.append(name)
        if name == "long":
            await release.wait()

    name = f"behaviours-{secrets.token_hex(4)}"
    async with Docket(name=name, url=store, heartbeat_interval=HEARTBEAT) as docket:
        docket.register(hold)
        worker = Worker(
            docket,
            name="taker",
            reconnection_delay=RECONNECTION,
            minimum_check_interval=POLL_BLOCK,
            schedule_automatic_tasks=False,
        )
        async with running(worker):
            try:
                await docket.add(hold, key="long")("long")
                await until(lambda: started == ["long"], "the worker never ran the long task")
                await until_beating(docket, "taker")

                await kill_polling_read(admin, client_name)
                await until_not_beating(docket, "taker")

                await docket.add(hold, key="short")("short")
                watched_until = time.monotonic() + WATCH
                while time.monotonic() < watched_until:
                    assert started == ["long"], "the worker took a task after the store error"
                    assert "taker" not in await beating(docket), (
                        "the worker beats its heartbeat while its long task runs: the engine "
                        "no longer sees the stall by its heartbeat"
                    )
                    await asyncio.sleep(0.05)
            finally:
                release.set()  # its running task ends (the worker waits for it to stop)
            # Back to taking tasks, once its running task has ended.
            await until(lambda: started == ["long", "short"], "the worker never came back")
            await until_beating(docket, "taker")


async def test_after_a_store_error_a_worker_stops_renewing_the_leases_of_its_running_tasks(
    store: str, redis_url: str, admin: Redis, client_name: str
) -> None:
    """After a store error in its polling loop, Docket's worker stops renewing the leases
    of the tasks it runs (the idle time of their stream messages, which it resets with
    ``XCLAIM`` four times a ``redelivery_timeout``) while the tasks run on: once a
    ``redelivery_timeout`` has passed, another worker (another process) takes such a task
    over and runs it a second time, the first run still running.

    The engine's workaround: :mod:`mcp_runtime.tasks.workers`' ``ProcessWorkers.renew_leases``
    renews the leases of the tasks its process runs itself (``XCLAIM`` ``idle=0`` for the
    worker that holds each), whatever Docket's worker does.

    When this test fails, Docket no longer does this: remove the workaround.
    """
    lease = timedelta(seconds=0.5)
    runs: list[str] = []
    release = asyncio.Event()

    async def hold(name: str) -> None:
        runs.append(name)
        await release.wait()

    name = f"behaviours-{secrets.token_hex(4)}"
    async with contextlib.AsyncExitStack() as stack:
        docket = await stack.enter_async_context(
            Docket(name=name, url=store, heartbeat_interval=HEARTBEAT)
        )
        docket.register(hold)
        first = Worker(
            docket,
            name="first",
            redelivery_timeout=lease,
            reconnection_delay=RECONNECTION,
            minimum_check_interval=POLL_BLOCK,
            schedule_automatic_tasks=False,
        )
        await stack.enter_async_context(running(first))
        try:
            await docket.add(hold, key="long")("long")
            await until(lambda: runs == ["long"], "the first worker never ran the task")
            await until_beating(docket, "first")

            await kill_polling_read(admin, client_name)
            # Its lease runs out: its message stays idle twice the redelivery timeout (while
            # Docket's worker renews it every quarter of one, until the store error).
            deadline = time.monotonic() + DEADLINE
            while (idle := await idle_seconds(docket, "first")) < 2 * lease.total_seconds():
                assert time.monotonic() < deadline, (
                    f"the running task's lease is renewed after the store error ({idle}s idle)"
                )
                await asyncio.sleep(0.05)

            # Another process, whose worker sweeps for tasks whose lease ran out.
            other = await stack.enter_async_context(
                Docket(name=name, url=redis_url, heartbeat_interval=HEARTBEAT)
            )
            other.register(hold)
            second = Worker(
                other,
                name="second",
                redelivery_timeout=lease,
                reconnection_delay=RECONNECTION,
                schedule_automatic_tasks=False,
            )
            await stack.enter_async_context(running(second))
            await until(
                lambda: runs == ["long", "long"], "the other worker never took the task over"
            )
            assert not release.is_set()  # the first run runs on
        finally:
            release.set()  # the runs end (each worker waits for its runs to stop)


async def test_docket_keeps_every_execution_and_its_result_for_one_docket_wide_ttl() -> None:
    """Docket keeps an execution's state (its runs hash) and its result for the docket's
    ``execution_ttl`` once it has ended, the same for every task: ``add`` takes no ttl of a
    task's own.

    The engine's workaround: :mod:`mcp_runtime.tasks.engine` keeps its own record of each
    task (:mod:`mcp_runtime.tasks.store`), kept once ended for the task's own ttl (the one
    its creator asked for, within ``max_ttl``), reads a task's status and result from that
    record, and gives Docket a short ``execution_ttl`` (a minute, or a lease).

    When this test fails, Docket no longer does this: remove the workaround (keep each
    task's state and result in Docket, for its own ttl).
    """
    ttl = timedelta(seconds=4321)

    async def quick(value: str) -> str:
        return value

    async def other(value: str) -> str:
        return value * 2

    name = f"behaviours-{secrets.token_hex(4)}"
    async with Docket(name=name, url="memory://", execution_ttl=ttl) as docket:
        executions = [
            await docket.add(quick, key="quick")("a"),
            await docket.add(other, key="other")("b"),
        ]
        async with Worker(docket, schedule_automatic_tasks=False) as worker:
            await worker.run_until_finished()
        for execution in executions:
            await execution.sync()
            assert execution.result_key is not None
            async with docket.redis() as redis:
                kept = await redis.ttl(docket.runs_key(execution.key))
            _, result_kept = await docket.result_storage.ttl(execution.result_key)
            assert result_kept is not None
            # The ttls count down from execution_ttl: within a minute of it, whatever the task.
            assert ttl.total_seconds() - 60 < kept <= ttl.total_seconds()
            assert ttl.total_seconds() - 60 < result_kept <= ttl.total_seconds()
    for scheduling in (Docket.add, Docket.replace, Docket.call, Docket.add_many):
        parameters = inspect.signature(scheduling).parameters
        assert not [name for name in parameters if "ttl" in name], parameters


async def test_docket_keeps_a_task_s_arguments_and_its_result_pickled_in_clear(
    redis_url: str,
) -> None:
    """Docket keeps a task's arguments (in its runs hash and stream message) and its
    return value (in its result storage) as cloudpickle's bytes, neither sealed nor
    encrypted: whoever reads the store reads them, and a reader of the result unpickles
    what the store holds.

    The engine's workaround: :mod:`mcp_runtime.tasks.engine` gives each Docket task its
    task's id as its only argument, and the function Docket runs returns nothing
    (:mod:`mcp_runtime.tasks.runs`); the request (caller, headers, arguments), the last
    checkpoint and the result are kept in the engine's own record, sealed with the
    service's key (:mod:`mcp_runtime.tasks.sealing`).

    When this test fails, Docket no longer does this: remove the workaround (if Docket
    now seals them with a key of the service's).
    """
    secret_argument = f"argument-{secrets.token_hex(8)}"
    secret_result = f"result-{secrets.token_hex(8)}"

    async def answer(value: str) -> str:
        return secret_result

    name = f"behaviours-{secrets.token_hex(4)}"
    async with Docket(name=name, url=redis_url) as docket:
        execution = await docket.add(answer, key="task")(secret_argument)
        async with docket.redis() as redis:
            queued = await redis.xrange(docket.stream_key)
        assert [pickle.loads(message[b"args"]) for _, message in queued] == [(secret_argument,)]
        async with Worker(docket, schedule_automatic_tasks=False) as worker:
            await worker.run_until_finished()
        await execution.sync()
        assert execution.result_key is not None
        async with docket.redis() as redis:
            args = await redis.hget(docket.runs_key("task"), "args")
        assert args is not None
        assert pickle.loads(args) == (secret_argument,)
        stored = await docket.result_storage.get(execution.result_key)
        assert stored is not None
        assert pickle.loads(base64.b64decode(stored["data"])) == secret_result


async def test_docket_gives_any_execution_to_whoever_knows_its_key(redis_url: str) -> None:
    """Docket's executions have no owner: any client of the store that knows a task's key
    reads its execution, its arguments and its result (``get_execution`` takes the key
    alone, and an execution has no owner to check).

    The engine's workaround: :mod:`mcp_runtime.tasks.engine` keeps each task's owner digest
    in its own record (:mod:`mcp_runtime.tasks.store`) and answers a task's reads and its
    cancel only to its owner (``TaskEngine.get`` compares the digests).

    When this test fails, Docket no longer does this: remove the workaround (if Docket
    now checks an owner of its own).
    """
    secret_result = f"result-{secrets.token_hex(8)}"

    async def answer(value: str) -> str:
        return secret_result

    name = f"behaviours-{secrets.token_hex(4)}"
    async with Docket(name=name, url=redis_url) as docket:
        await docket.add(answer, key="task")("mine")
        async with Worker(docket, schedule_automatic_tasks=False) as worker:
            await worker.run_until_finished()

    # Another client of the store, which registered nothing and knows only the key.
    async with Docket(name=name, url=redis_url) as stranger:
        execution = await stranger.get_execution("task")
        assert execution is not None
        assert execution.args == ("mine",)
        assert await execution.get_result() == secret_result
        assert not [field for field in vars(execution) if "owner" in field]
    # A parameter more (an owner, or whatever else) is for a person to look at.
    assert list(inspect.signature(Docket.get_execution).parameters) == ["self", "key"]
