"""Kept data on the task store: what tools keep for their callers (``keep_data``).

Data is kept on the store tasks use (``MCP_TASKS_URL``): in this process on
``memory://``, on Redis for every process and replica. A datum is one hash: in clear
only its ``owner`` digest, ``size``, chunk count and expiry; its name and media type
(``meta``) and its content, in chunks of :data:`CHUNK_BYTES`, sealed with the service's
key (:class:`~mcp_runtime.tasks.sealing.DataSeal`). Each owner's data is counted in a
sorted set (``<size>:<id>`` by expiry), so that the bytes kept for one caller stay under
``MCP_MAX_DATA_BYTES_PER_CALLER`` exactly, however many calls keep data at once. A
datum becomes readable once all of it is stored, and the store removes it at its
expiry (``MCP_DATA_TTL``).
"""

import asyncio
import contextlib
import logging
import math
import secrets
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from redis.asyncio import Redis

from mcp_runtime.execution.kept_data import (
    DataLimitError,
    DataStoreError,
    StagedData,
    size_text,
)
from mcp_runtime.tasks.sealing import DataSeal, SealError
from mcp_runtime.tasks.store import STORE_ERRORS, pipeline_of, pooled, run_script

__all__ = ["CHUNK_BYTES", "DataStore", "KeptData"]

logger = logging.getLogger(__name__)

CHUNK_BYTES = 1024 * 1024
"""The bytes of one stored chunk of a datum (the last one may be shorter)."""
CHUNKS_AT_ONCE = 8
"""The chunks written, or read, in one round trip."""

RESERVE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[3])
local used = 0
for _, member in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  used = used + tonumber(string.match(member, '^(%d+):'))
end
if used + tonumber(ARGV[2]) > tonumber(ARGV[5]) then
  return used
end
redis.call('ZADD', KEYS[1], ARGV[4], ARGV[2] .. ':' .. ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[6])
redis.call('HSET', KEYS[2], 'owner', ARGV[7], 'size', ARGV[2], 'expires', ARGV[4])
redis.call('EXPIRE', KEYS[2], ARGV[6])
return -1
"""
"""Counts a datum against its owner's bytes and starts its record (KEYS: owner's data,
record; ARGV: id, size, now, expires at, the owner's most bytes, seconds kept, owner):
-1 when it fits, else the bytes the owner has kept."""


@dataclass(frozen=True)
class KeptData:
    """A datum as its owner reads it: what it is, how large, until when, in how many chunks."""

    data_id: str
    name: str
    media_type: str
    size: int
    expires_at: float
    chunks: int


class DataStore:
    """The data of one service's callers, as this process keeps and reads it; opened on
    first use. ``seal`` seals it (on Redis, with ``MCP_TASK_KEYS``; None: no key is set,
    and keeping data on Redis is refused with a message saying so)."""

    def __init__(
        self,
        url: str,
        service: str,
        seal: DataSeal | None,
        *,
        max_per_caller: int,
        workers: int = 1,
    ) -> None:
        self.url = url
        self.prefix = f"mcp-data:{service}"
        self.seal = seal
        self.max_per_caller = max_per_caller
        self.workers = workers
        self._client: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # Keeping ----------------------------------------------------------------------------

    async def keep(self, owner: str, staged: Sequence[StagedData]) -> None:
        """Store ``staged`` for ``owner``, all or none. Raises :class:`DataLimitError` past
        the owner's bytes, :class:`DataStoreError` when the store does not answer."""
        self._require_keepable()
        kept: list[StagedData] = []
        try:
            for item in staged:
                await self._keep_one(owner, item)
                kept.append(item)
        except BaseException:
            with contextlib.suppress(*STORE_ERRORS):
                for item in kept:
                    await self._forget(owner, item)
            raise

    async def _keep_one(self, owner: str, item: StagedData) -> None:
        seal = self.seal
        assert seal is not None
        size, now = len(item.content), time.time()
        seconds = max(1, math.ceil(item.expires_at - now))
        record = self._record_key(item.data_id)
        args = [item.data_id, str(size), repr(now), repr(item.expires_at)]
        args += [str(self.max_per_caller), str(seconds), owner]
        client = await self._reaching(self._open())
        used = await self._reaching(
            run_script(client, RESERVE, [self._owner_key(owner), record], args)
        )
        if used != -1:
            raise DataLimitError(
                f"The data '{item.name}' ({size_text(size)}) would bring the data kept for "
                f"this caller to {size_text(int(used) + size)}, more than this service keeps "
                f"for one caller ({size_text(self.max_per_caller)}, "
                "MCP_MAX_DATA_BYTES_PER_CALLER): read what was kept for you earlier and let "
                "it expire (MCP_DATA_TTL), or ask for less at once."
            )
        try:
            view = memoryview(item.content)
            chunks = max(1, math.ceil(size / CHUNK_BYTES))
            for first in range(0, chunks, CHUNKS_AT_ONCE):
                pipeline = pipeline_of(client)
                for number in range(first, min(first + CHUNKS_AT_ONCE, chunks)):
                    piece = view[number * CHUNK_BYTES : (number + 1) * CHUNK_BYTES]
                    label = f"{item.data_id}:{number}".encode()
                    pipeline.hset(record, str(number), seal.close(piece, label))
                await self._reaching(pipeline.execute())
            meta = f"{item.name}\n{item.media_type}".encode()
            sealed_meta = seal.close(meta, f"{item.data_id}:meta".encode())
            pipeline = pipeline_of(client)
            pipeline.hset(record, "chunks", str(chunks))
            pipeline.hset(record, "meta", sealed_meta)  # last: the datum is whole
            await self._reaching(pipeline.execute())
        except BaseException:
            with contextlib.suppress(*STORE_ERRORS, DataStoreError):
                await self._forget(owner, item)
            raise

    async def _forget(self, owner: str, item: StagedData) -> None:
        client = await self._open()
        await client.delete(self._record_key(item.data_id))
        await client.zrem(self._owner_key(owner), f"{len(item.content)}:{item.data_id}")

    def _require_keepable(self) -> None:
        if self.seal is None:
            raise DataStoreError(
                self._logged(
                    "bad setting MCP_TASK_KEYS: data kept on Redis (MCP_TASKS_URL) is sealed "
                    "with the service's key, and MCP_TASK_KEYS is not set: set it to the key "
                    "`<service> task-key` prints"
                )
            )
        if self.url == "memory://" and self.workers > 1:
            raise DataStoreError(
                self._logged(
                    f"bad setting MCP_WORKERS: data kept in memory (MCP_TASKS_URL=memory://) "
                    f"is read only by the process that kept it, and {self.workers} worker "
                    "processes serve: keep data on Redis (MCP_TASKS_URL=redis://host:6379/0), "
                    "or serve MCP_WORKERS=1"
                )
            )

    # Reading ----------------------------------------------------------------------------

    async def find(self, owner: str, data_id: str) -> KeptData | None:
        """``owner``'s datum ``data_id``; None when there is none of theirs (unknown,
        expired, not yet whole, or another caller's: all answer alike)."""
        if self.seal is None:
            return None
        client = await self._reaching(self._open())
        pipeline = pipeline_of(client)
        for field in ("owner", "size", "expires", "chunks", "meta"):
            pipeline.hget(self._record_key(data_id), field)
        stored, size, expires, chunks, meta = await self._reaching(pipeline.execute())
        if stored is None or meta is None or not secrets.compare_digest(stored, owner.encode()):
            return None
        opened = self._open_sealed(meta, f"{data_id}:meta")
        name, media_type = opened.decode().split("\n", 1)
        return KeptData(data_id, name, media_type, int(size), float(expires), int(chunks))

    async def read(
        self, kept: KeptData, start: int = 0, end: int | None = None
    ) -> AsyncIterator[bytes]:
        """The bytes ``start`` to ``end`` (excluded; the end when None) of ``kept``, a chunk's
        worth at a time. Raises :class:`DataStoreError` when the store does not answer, and
        ``LookupError`` when the datum expired while it was read."""
        end = kept.size if end is None else min(end, kept.size)
        if start >= end:
            return
        client = await self._reaching(self._open())
        record = self._record_key(kept.data_id)
        first, last = start // CHUNK_BYTES, (end - 1) // CHUNK_BYTES
        for batch in range(first, last + 1, CHUNKS_AT_ONCE):
            numbers = range(batch, min(batch + CHUNKS_AT_ONCE, last + 1))
            pipeline = pipeline_of(client)
            for number in numbers:
                pipeline.hget(record, str(number))
            sealed = await self._reaching(pipeline.execute())
            for number, piece in zip(numbers, sealed, strict=True):
                if piece is None:
                    raise LookupError(f"the data '{kept.name}' expired while it was read")
                chunk = self._open_sealed(piece, f"{kept.data_id}:{number}")
                offset = number * CHUNK_BYTES
                yield chunk[max(0, start - offset) : end - offset]

    async def read_all(self, kept: KeptData) -> bytes:
        """The whole of ``kept``."""
        return b"".join([piece async for piece in self.read(kept)])

    # The store --------------------------------------------------------------------------

    async def close(self) -> None:
        """Close this process's connections to the store."""
        client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(Exception):
                await client.aclose()

    async def _open(self) -> Any:
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            if self.url == "memory://":
                # The embedded store Docket runs on (its package declares no types).
                from burner_redis import BurnerRedis  # type: ignore[import-untyped]

                self._client = BurnerRedis()
            else:
                self._client = Redis.from_url(pooled(self.url))
            self._loop = loop
        return self._client

    def _open_sealed(self, sealed: bytes, label: str) -> bytes:
        assert self.seal is not None
        try:
            return self.seal.open(sealed, label.encode())
        except SealError as exc:
            raise DataStoreError(self._logged(str(exc))) from None

    async def _reaching(self, step: Any) -> Any:
        """``step``'s answer, or :class:`DataStoreError` (logged, without values) when the
        store does not answer."""
        try:
            return await step
        except STORE_ERRORS as exc:
            error = f"the store of kept data did not answer: {type(exc).__name__}: {exc}"
            raise DataStoreError(self._logged(error)) from None

    @staticmethod
    def _logged(error: str) -> str:
        error_id = secrets.token_hex(6)
        logger.error("%s (error id %s)", error, error_id)
        return error_id

    def _record_key(self, data_id: str) -> str:
        return f"{self.prefix}:{data_id}"

    def _owner_key(self, owner: str) -> str:
        return f"{self.prefix}:owner:{owner}"
