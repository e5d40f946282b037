"""The task store as the engine uses it: the errors that say it did not answer and its
client's pool (:mod:`mcp_runtime.config.stores`'s), and the engine's scripts, each a step
that must happen whole, in one round trip, on Redis as on the embedded store
(``memory://``), which lacks some commands (``SCARD``) and runs the rest.

A task's record is a hash (``owner``, ``tool``, ``created``, ``ttl_ms``, the sealed
``request``, then ``runs``, ``takeovers``, a sealed ``checkpoint``, and once it has ended
``status``, ``message``, a sealed ``result`` and ``ended``).
"""

from collections.abc import Sequence
from typing import Any

from mcp_runtime.config.stores import STORE_ERRORS, pooled

__all__ = [
    "BEGIN",
    "CHECKPOINT",
    "CREATE",
    "END",
    "FIELDS",
    "STATUS_FIELDS",
    "STORE_ERRORS",
    "TaskStoreError",
    "pipeline_of",
    "pooled",
    "read_fields",
    "run_script",
    "run_scripts",
]

STATUS_FIELDS = ("owner", "tool", "created", "ttl_ms", "status", "message", "ended")
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
return redis.call('HGETALL', KEYS[1])
"""
"""Counts a run of a task that has not ended, and its takeover when ARGV[1] is ``1``; the
task's record (flat), or nothing when it is not to run (ended, or expired)."""

CHECKPOINT = """
if redis.call('EXISTS', KEYS[1]) == 1 and redis.call('HEXISTS', KEYS[1], 'status') == 0 then
  redis.call('HSET', KEYS[1], 'checkpoint', ARGV[1])
end
return 0
"""
"""Keeps a task's sealed checkpoint (ARGV[1]) while the task has not ended, and never
makes a record the store would then keep without a ttl."""

END = """
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('HEXISTS', KEYS[1], 'status') == 1 then
  return 0
end
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'message', ARGV[2], 'result', ARGV[3],
  'ended', ARGV[4])
redis.call('EXPIRE', KEYS[1], ARGV[5])
redis.call('SREM', KEYS[2], ARGV[6])
return 1
"""
"""Ends a task's record (KEYS: record, owner's open tasks; ARGV: status, message, sealed
result, ended, seconds kept, id), unless it has ended already: its first end is its
last. 1 when it ended now."""

FIELDS = """
local values = {}
for i, name in ipairs(ARGV) do
  values[i] = redis.call('HGET', KEYS[1], name)
end
return values
"""
"""The fields ARGV names of the hash KEYS[1], each nil when it is not set."""


async def read_fields(store: object, key: str, names: Sequence[str]) -> dict[str, str]:
    """The fields ``names`` of the hash ``key`` that are set, in one round trip (the
    embedded store has no ``HMGET``)."""
    values: list[bytes | None] = await run_script(store, FIELDS, [key], list(names))
    return {name: value.decode() for name, value in zip(names, values, strict=True) if value}


async def run_script(store: object, script: str, keys: list[str], args: list[str]) -> Any:
    """``script``'s answer, run on ``store`` (Docket's client: Redis, or the embedded
    store, both of which run Lua, though the client's declared type lacks ``eval``)."""
    client: Any = store
    return await client.eval(script, len(keys), *keys, *args)


async def run_scripts(
    store: object, script: str, calls: Sequence[tuple[list[str], list[str]]]
) -> list[Any]:
    """``script`` run on ``store`` once for each of ``calls`` (its keys and arguments), in
    one round trip: each run's answer, or the error it met."""
    pipeline = pipeline_of(store)
    for keys, args in calls:
        pipeline.eval(script, len(keys), *keys, *args)
    return list(await pipeline.execute(raise_on_error=False))


def pipeline_of(store: object) -> Any:
    """A pipeline of ``store``'s client, without a transaction (the embedded store's
    pipeline takes no arguments and runs in order)."""
    client: Any = store
    try:
        return client.pipeline(transaction=False)
    except TypeError:
        return client.pipeline()


class TaskStoreError(Exception):
    """The task store did not answer (its Redis is down or out of reach), or, ``busy``, the
    connections to it were all in use. The log has a line with the error, under the error
    id this exception holds."""

    def __init__(self, error_id: str, *, busy: bool = False) -> None:
        super().__init__(error_id)
        self.error_id = error_id
        self.busy = busy
