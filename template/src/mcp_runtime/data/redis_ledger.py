"""The ledger of kept data on Redis (the task store, ``MCP_TASKS_URL``), which every
process and replica shares: the rules of :mod:`mcp_runtime.data.ledger`, each step one
Lua script.

Keys, under ``mcp-data:<service>``: ``entry:<id>``, a hash of a datum's ``owner``,
``counted``, ``state``, ``deadline``, ``version``, sealed ``meta`` and ``kept_at``;
``counted:<owner>``, the bytes an owner's data count; ``due``, a sorted set of every
datum by its deadline, which the sweeps read. Every key expires a day after the last
deadline it holds, so that a store no process sweeps any more empties itself.
"""

import time
from collections.abc import Sequence
from typing import Any

from redis.asyncio import Redis

from mcp_runtime.config.stores import pooled
from mcp_runtime.data.ledger import Entry, LedgerConflictError

__all__ = ["RedisLedger"]

GRACE_SECONDS = 86400
"""How long a key outlives the last deadline it holds, when no sweep removes it first."""

# Each script's helper: a key expires GRACE after its latest deadline (never sooner).
KEEP = f"""
local function keep(key, deadline)
  local ttl = math.ceil(deadline - tonumber(ARGV[#ARGV])) + {GRACE_SECONDS}
  if ttl < 1 then ttl = 1 end
  if redis.call('TTL', key) < ttl then redis.call('EXPIRE', key, ttl) end
end
"""

RESERVE = (
    KEEP
    + """
local entry = redis.call('HMGET', KEYS[1], 'owner', 'counted', 'state')
local prior = 0
if entry[1] then
  if entry[1] ~= ARGV[2] or entry[3] == 'removing' then return -2 end
  prior = tonumber(entry[2])
end
local used = tonumber(redis.call('GET', KEYS[2]) or '0') - prior
local counted = tonumber(ARGV[3])
if counted > prior and used + counted > tonumber(ARGV[5]) then return used end
local deadline = tonumber(ARGV[4])
redis.call('HSET', KEYS[1], 'owner', ARGV[2], 'counted', ARGV[3], 'state', 'writing',
  'deadline', ARGV[4])
redis.call('INCRBY', KEYS[2], counted - prior)
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[1])
keep(KEYS[1], deadline)
keep(KEYS[2], deadline)
keep(KEYS[3], deadline)
return -1
"""
)
"""KEYS: entry, owner's count, due; ARGV: id, owner, counted, deadline, limit, now."""

RENEW = (
    KEEP
    + """
local lost = {}
local deadline = tonumber(ARGV[1])
for i, key in ipairs(KEYS) do
  if i > 1 then
    if redis.call('HGET', key, 'state') == 'writing' then
      redis.call('HSET', key, 'deadline', ARGV[1])
      redis.call('ZADD', KEYS[1], ARGV[1], ARGV[i])
      keep(key, deadline)
      local owner = redis.call('HGET', key, 'owner')
      keep(ARGV[#ARGV - 1] .. owner, deadline)
    else
      table.insert(lost, ARGV[i])
    end
  end
end
keep(KEYS[1], deadline)
return lost
"""
)
"""KEYS: due, then each entry; ARGV: deadline, then each id, the owners' key prefix, now."""

COMMIT = (
    KEEP
    + """
local entry = redis.call('HMGET', KEYS[1], 'owner', 'counted', 'state')
if entry[3] ~= 'writing' or entry[1] ~= ARGV[7] then return 0 end
local deadline = tonumber(ARGV[4])
redis.call('HSET', KEYS[1], 'counted', ARGV[2], 'state', 'kept', 'deadline', ARGV[4],
  'version', ARGV[3], 'meta', ARGV[5], 'kept_at', ARGV[6])
redis.call('INCRBY', KEYS[2], tonumber(ARGV[2]) - tonumber(entry[2]))
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[1])
keep(KEYS[1], deadline)
keep(KEYS[2], deadline)
keep(KEYS[3], deadline)
return 1
"""
)
"""KEYS: entry, owner's count, due; ARGV: id, counted, version, expires at, meta, kept at,
owner, now."""

DISCARD = """
for i, key in ipairs(KEYS) do
  local state = i > 1 and redis.call('HGET', key, 'state')
  if state and state ~= 'removing' then
    redis.call('HSET', key, 'state', 'removing', 'deadline', '0')
    redis.call('ZADD', KEYS[1], 0, ARGV[i - 1])
  end
end
return 0
"""
"""KEYS: due, then each entry; ARGV: each id."""

CLAIM_DUE = """
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
local hold = tonumber(ARGV[1]) + tonumber(ARGV[3])
for _, id in ipairs(due) do
  local key = ARGV[4] .. id
  if redis.call('EXISTS', key) == 1 then
    redis.call('HSET', key, 'state', 'removing', 'deadline', tostring(hold))
  end
  redis.call('ZADD', KEYS[1], hold, id)
end
return due
"""
"""KEYS: due; ARGV: now, most claimed, seconds held, the entries' key prefix."""

DROP = """
for i, id in ipairs(ARGV) do
  if i > 2 then
    local key = ARGV[1] .. id
    local entry = redis.call('HMGET', key, 'owner', 'counted', 'state')
    if not entry[1] or entry[3] == 'removing' then
      if entry[1] then
        local left = redis.call('DECRBY', ARGV[2] .. entry[1], entry[2])
        if left <= 0 then redis.call('DEL', ARGV[2] .. entry[1]) end
        redis.call('DEL', key)
      end
      redis.call('ZREM', KEYS[1], id)
    end
  end
end
return 0
"""
"""KEYS: due; ARGV: the entries' key prefix, the owners' key prefix, then each id."""

FIND_FIELDS = ("owner", "counted", "state", "deadline", "version", "meta", "kept_at")


class RedisLedger:
    """The ledger of service ``service``'s kept data on the Redis at ``url``."""

    def __init__(self, url: str, service: str) -> None:
        self.url = url
        self.prefix = f"mcp-data:{service}"
        self._client: Any = None

    async def reserve(
        self, data_id: str, owner: str, counted: int, deadline: float, limit: int
    ) -> int | None:
        keys = [self._entry(data_id), self._owner(owner), self._due]
        args = [data_id, owner, str(counted), repr(deadline), str(limit), repr(time.time())]
        answer = int(await self._eval(RESERVE, keys, args))
        if answer == -2:
            raise LedgerConflictError(data_id)
        return None if answer == -1 else answer

    async def renew(self, data_ids: Sequence[str], deadline: float) -> list[str]:
        if not data_ids:
            return []
        keys = [self._due, *(self._entry(data_id) for data_id in data_ids)]
        args = [repr(deadline), *data_ids, f"{self.prefix}:counted:", repr(time.time())]
        return [value.decode() for value in await self._eval(RENEW, keys, args)]

    async def commit(
        self,
        data_id: str,
        owner: str,
        counted: int,
        version: str,
        expires_at: float,
        meta: bytes,
    ) -> bool:
        now = repr(time.time())
        keys = [self._entry(data_id), self._owner(owner), self._due]
        args: list[str | bytes] = [data_id, str(counted), version, repr(expires_at), meta]
        args += [now, owner, now]
        return bool(await self._eval(COMMIT, keys, args))

    async def discard(self, data_ids: Sequence[str]) -> None:
        if data_ids:
            keys = [self._due, *(self._entry(data_id) for data_id in data_ids)]
            await self._eval(DISCARD, keys, list(data_ids))

    async def find(self, data_id: str, now: float) -> Entry | None:
        values = await self._client_of().hmget(self._entry(data_id), FIND_FIELDS)
        owner, counted, state, deadline, version, meta, kept_at = values
        if state != b"kept" or float(deadline) <= now:
            return None
        return Entry(
            data_id,
            owner.decode(),
            int(counted),
            version.decode(),
            float(deadline),
            bytes(meta),
            float(kept_at),
        )

    async def claim_due(self, now: float, limit: int, hold: float) -> list[str]:
        args = [repr(now), str(limit), repr(hold), f"{self.prefix}:entry:"]
        return [value.decode() for value in await self._eval(CLAIM_DUE, [self._due], args)]

    async def drop(self, data_ids: Sequence[str]) -> None:
        if data_ids:
            args = [f"{self.prefix}:entry:", f"{self.prefix}:counted:", *data_ids]
            await self._eval(DROP, [self._due], args)

    async def counted(self, owner: str) -> int:
        return int(await self._client_of().get(self._owner(owner)) or 0)

    async def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    async def _eval(self, script: str, keys: list[str], args: Sequence[str | bytes]) -> Any:
        return await self._client_of().eval(script, len(keys), *keys, *args)

    def _client_of(self) -> Any:
        if self._client is None:
            self._client = Redis.from_url(pooled(self.url))
        return self._client

    @property
    def _due(self) -> str:
        return f"{self.prefix}:due"

    def _entry(self, data_id: str) -> str:
        return f"{self.prefix}:entry:{data_id}"

    def _owner(self, owner: str) -> str:
        return f"{self.prefix}:counted:{owner}"
