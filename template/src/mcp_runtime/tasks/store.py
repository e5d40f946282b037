"""The task store: the records of a service's tasks, each step on them one round trip.

A task's record is a hash, at :meth:`TaskKeys.record <mcp_runtime.tasks.keys.TaskKeys>`:
``owner``, ``tool``, ``created``, ``ttl_ms`` and the sealed ``request`` from its creation;
``runs``, ``takeovers`` and ``started`` from each run; a sealed ``checkpoint``; while it
works, its status message ``progress`` (set at ``progressed``); and once it has ended,
``status``, ``message``, a sealed ``result`` and ``ended``. Its first end is its last.

Each step is a Lua script, run whole on Redis as on the embedded store (``memory://``,
which lacks some commands, ``SCARD`` and ``HMGET``, and runs the rest). An end is told
on the notices channel (:mod:`mcp_runtime.tasks.notices`).
"""

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcp_runtime.config.stores import STORE_ERRORS, StoreError, pooled
from mcp_runtime.tasks.keys import TaskKeys

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from docket import Docket

__all__ = [
    "STATUS_FIELDS",
    "STORE_ERRORS",
    "Creation",
    "TaskStore",
    "TaskStoreError",
    "pooled",
]

STATUS_FIELDS = (
    "owner",
    "tool",
    "created",
    "ttl_ms",
    "status",
    "message",
    "ended",
    "started",
    "progress",
    "progressed",
)
"""The fields of a record that say whose task it is and how it stands: all a status read
needs (the sealed request, checkpoint and result, which may be large, are not among them)."""

CREATE = """
redis.call('SADD', KEYS[2], ARGV[1])
-- SMEMBERS, not SCARD, which the embedded store lacks: the set holds at most the cap
local open = #redis.call('SMEMBERS', KEYS[2])
redis.call('EXPIRE', KEYS[2], ARGV[3])
redis.call('HSET', KEYS[1], 'owner', ARGV[4], 'tool', ARGV[5], 'created', ARGV[2],
  'ttl_ms', ARGV[6], 'request', ARGV[7])
redis.call('EXPIRE', KEYS[1], ARGV[3])
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[1])
redis.call('EXPIRE', KEYS[3], ARGV[3])
return open
"""
"""Stores a new task's record (KEYS: record, owner's open tasks, owner's tasks; ARGV: id,
created, seconds kept, owner, tool, ttl_ms, sealed request); how many of the owner's
tasks are open then, the new one included."""

BEGIN = """
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('HEXISTS', KEYS[1], 'status') == 1 then
  return {}
end
redis.call('HINCRBY', KEYS[1], 'runs', 1)
if ARGV[1] == '1' then
  redis.call('HINCRBY', KEYS[1], 'takeovers', 1)
end
redis.call('HSET', KEYS[1], 'started', ARGV[2])
return redis.call('HGETALL', KEYS[1])
"""
"""Counts a run of a task that has not ended (ARGV: ``1`` when it is a takeover, the time),
and its takeover; the task's record (flat), or nothing when it is not to run (ended, or
expired)."""

WHILE_WORKING = """
if redis.call('EXISTS', KEYS[1]) == 1 and redis.call('HEXISTS', KEYS[1], 'status') == 0 then
  redis.call('HSET', KEYS[1], unpack(ARGV))
end
return 0
"""
"""Sets the fields ARGV names and values (a checkpoint, a status message) of a task that
has not ended, and never makes a record the store would then keep without a ttl."""

END = """
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('HEXISTS', KEYS[1], 'status') == 1 then
  return 0
end
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'message', ARGV[2], 'result', ARGV[3],
  'ended', ARGV[4])
redis.call('EXPIRE', KEYS[1], ARGV[5])
redis.call('SREM', KEYS[2], ARGV[6])
redis.call('PUBLISH', KEYS[3], 'ended ' .. ARGV[6])
return 1
"""
"""Ends a task's record (KEYS: record, owner's open tasks, notices; ARGV: status, message,
sealed result, ended, seconds kept, id), unless it has ended already: its first end is
its last. 1 when it ended now."""

CANCEL = """
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then
  return {}
end
local now = 0
if redis.call('HEXISTS', KEYS[1], 'status') == 0 then
  local ttl = tonumber(redis.call('HGET', KEYS[1], 'ttl_ms') or '0')
  redis.call('HSET', KEYS[1], 'status', 'cancelled', 'message', ARGV[2], 'result', '',
    'ended', ARGV[3])
  redis.call('EXPIRE', KEYS[1], math.max(1, math.floor(ttl / 1000 + 0.5)))
  redis.call('SREM', KEYS[2], ARGV[4])
  redis.call('PUBLISH', KEYS[3], 'cancelled ' .. ARGV[4])
  now = 1
end
local values = {now, redis.call('HGET', KEYS[1], 'runs') or '0'}
for i = 5, #ARGV do
  values[#values + 1] = redis.call('HGET', KEYS[1], ARGV[i]) or false
end
return values
"""
"""Cancels the task of ARGV[1] (KEYS: record, owner's open tasks, notices; ARGV: owner,
message, ended, id, the status fields to answer), unless it has ended; nothing when it
is not the owner's. Else: 1 when cancelled now, its runs so far, and the fields."""

FIELDS = """
local values = {}
for i, name in ipairs(ARGV) do
  values[i] = redis.call('HGET', KEYS[1], name)
end
return values
"""
"""The fields ARGV names of the hash KEYS[1], each nil when it is not set."""

LIST = """
local values = {}
for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local key = ARGV[1] .. id
  if redis.call('EXISTS', key) == 0 then
    redis.call('ZREM', KEYS[1], id)
  else
    values[#values + 1] = id
    for i = 2, #ARGV do
      values[#values + 1] = redis.call('HGET', key, ARGV[i]) or false
    end
  end
end
return values
"""
"""The tasks of an owner still kept, oldest first (KEYS: owner's tasks; ARGV: the prefix of
a record's key, the fields to read): each id and its fields, flat; forgets those gone."""

OPEN = """
local open = 0
for _, id in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local key = ARGV[1] .. id
  if redis.call('EXISTS', key) == 0 or redis.call('HEXISTS', key, 'status') == 1 then
    redis.call('SREM', KEYS[1], id)
  else
    open = open + 1
  end
end
return open
"""
"""How many of an owner's tasks have not ended (KEYS: owner's open tasks; ARGV: the prefix
of a record's key), forgetting the others."""

FORGET = """
redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
return 0
"""
"""Removes a task that was not created after all (KEYS: record, owner's open tasks,
owner's tasks; ARGV: id)."""


@dataclass(frozen=True)
class Creation:
    """A task to store: its id, owner, and the keys and arguments of :data:`CREATE`."""

    task_id: str
    owner: str
    keys: list[str]
    args: list[str]


@dataclass(frozen=True)
class Cancelled:
    """What :meth:`TaskStore.cancel` found: whether the task was cancelled now (not ended
    before), whether it had begun a run, and its status fields."""

    now: bool
    ran: bool
    fields: dict[str, str]


class TaskStoreError(StoreError):
    """The task store did not answer (its Redis is down or out of reach), or, ``busy``, the
    connections to it were all in use. The log has a line with the error, under the error
    id this exception holds."""


class TaskStore:
    """The records of the tasks under ``keys``, on the docket ``connect`` opens. ``slots``
    bounds the commands in flight at once (a burst of requests waits for a slot instead of
    emptying the client's pool); each step may take other slots (a run's, say)."""

    def __init__(
        self,
        keys: TaskKeys,
        connect: "Callable[[], Awaitable[Docket]]",
        slots: asyncio.Semaphore,
    ) -> None:
        self.keys = keys
        self.connect = connect
        self.slots = slots

    @asynccontextmanager
    async def client(self, slots: asyncio.Semaphore | None = None) -> "AsyncIterator[Any]":
        """The store's client (Docket's: Redis, or the embedded store, both of which run
        Lua, though the client's declared type lacks ``eval``), holding one of ``slots``."""
        docket = await self.connect()
        async with slots or self.slots, docket.redis() as redis:
            yield redis

    async def _run(
        self, script: str, keys: list[str], args: list[str], slots: asyncio.Semaphore | None
    ) -> Any:
        async with self.client(slots) as redis:
            return await redis.eval(script, len(keys), *keys, *args)

    async def create(self, creations: Sequence[Creation]) -> list[Any]:
        """Store ``creations`` in one round trip: for each, how many of its owner's tasks are
        open now, or the error it met."""
        async with self.client() as redis:
            pipeline = pipeline_of(redis)
            for one in creations:
                pipeline.eval(CREATE, len(one.keys), *one.keys, *one.args)
            return list(await pipeline.execute(raise_on_error=False))

    def creation(
        self,
        task_id: str,
        owner: str,
        tool: str,
        *,
        kept_seconds: int,
        ttl_ms: int,
        sealed_request: str,
        now: float,
    ) -> Creation:
        keys = self.keys
        return Creation(
            task_id,
            owner,
            keys=[keys.record(task_id), keys.open(owner), keys.owner(owner)],
            args=[task_id, repr(now), str(kept_seconds), owner, tool, str(ttl_ms), sealed_request],
        )

    async def begin(
        self, task_id: str, taken_over: bool, slots: asyncio.Semaphore
    ) -> dict[str, str]:
        """Count a run of task ``task_id`` (a takeover when ``taken_over``): its record, or
        ``{}`` when it is not to run."""
        args = ["1" if taken_over else "0", repr(time.time())]
        flat = await self._run(BEGIN, [self.keys.record(task_id)], args, slots)
        pairs = zip(flat[::2], flat[1::2], strict=True)
        return {key.decode(): value.decode() for key, value in pairs}

    async def set_while_working(
        self, task_id: str, fields: dict[str, str], slots: asyncio.Semaphore
    ) -> None:
        """Set ``fields`` of task ``task_id`` unless it has ended."""
        args = [part for pair in fields.items() for part in pair]
        await self._run(WHILE_WORKING, [self.keys.record(task_id)], args, slots)

    async def read(
        self, task_id: str, names: Sequence[str], slots: asyncio.Semaphore | None = None
    ) -> dict[str, str]:
        """The fields ``names`` of task ``task_id``'s record that are set, in one round trip
        (``{}`` when there is no such task)."""
        values = await self._run(FIELDS, [self.keys.record(task_id)], list(names), slots)
        return _named(names, values)

    async def end(
        self,
        task_id: str,
        owner: str,
        *,
        status: str,
        message: str,
        result: str,
        kept_seconds: int,
        slots: asyncio.Semaphore | None,
    ) -> bool:
        """End task ``task_id`` of ``owner`` unless it has ended; whether it ended now."""
        keys = self.keys
        args = [status, message, result, repr(time.time()), str(kept_seconds), task_id]
        ended = await self._run(
            END, [keys.record(task_id), keys.open(owner), keys.notices], args, slots
        )
        return bool(ended)

    async def cancel(self, owner: str, task_id: str, message: str) -> Cancelled | None:
        """Cancel ``owner``'s task ``task_id`` unless it has ended, in one round trip; None
        when there is no such task of theirs."""
        keys = self.keys
        args = [owner, message, repr(time.time()), task_id, *STATUS_FIELDS]
        values = await self._run(
            CANCEL, [keys.record(task_id), keys.open(owner), keys.notices], args, None
        )
        if not values:
            return None
        now, runs, *fields = values
        return Cancelled(bool(now), int(runs) > 0, _named(STATUS_FIELDS, fields))

    async def list(self, owner: str) -> list[tuple[str, dict[str, str]]]:
        """``owner``'s tasks still kept, oldest first, each with its status fields, in one
        round trip."""
        prefix = self.keys.record("")
        flat = await self._run(LIST, [self.keys.owner(owner)], [prefix, *STATUS_FIELDS], None)
        width = len(STATUS_FIELDS) + 1
        return [
            (flat[at].decode(), _named(STATUS_FIELDS, flat[at + 1 : at + width]))
            for at in range(0, len(flat), width)
        ]

    async def open_count(self, owner: str) -> int:
        """How many of ``owner``'s tasks have not ended, in one round trip."""
        return int(await self._run(OPEN, [self.keys.open(owner)], [self.keys.record("")], None))

    async def forget(self, task_id: str, owner: str) -> None:
        """Remove task ``task_id`` of ``owner``, which was not created after all."""
        keys = self.keys
        await self._run(
            FORGET, [keys.record(task_id), keys.open(owner), keys.owner(owner)], [task_id], None
        )

    async def tell(self, notice: str) -> None:
        """Tell every process ``notice`` on the notices channel."""
        async with self.client() as redis:
            await redis.publish(self.keys.notices, notice)


def _named(names: Sequence[str], values: Sequence[bytes | None]) -> dict[str, str]:
    return {name: value.decode() for name, value in zip(names, values, strict=True) if value}


def pipeline_of(store: object) -> Any:
    """A pipeline of ``store``'s client, without a transaction (the embedded store's
    pipeline takes no arguments and runs in order)."""
    client: Any = store
    try:
        return client.pipeline(transaction=False)
    except TypeError:
        return client.pipeline()
