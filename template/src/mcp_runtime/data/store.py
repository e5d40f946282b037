"""The store of kept data: objects on a place made for files, counted in a ledger.

A datum's bytes are one object on the service's data place (``MCP_DATA_URL``: a
directory, an object store, or memory; :mod:`mcp_runtime.data.blobs`), sealed chunk by
chunk (:mod:`mcp_runtime.data.sealing`) under the key ``<service>/<id[:2]>/<id>``. Its
entry in the ledger (:mod:`mcp_runtime.data.ledger`) says whose it is, what it counts
against its owner's limit, until when it is kept, and holds its sealed name, media type
and size: neither place holds any of them in clear.

A datum is written as it comes (:class:`DatumWriter`): its owner's bytes are reserved in
the ledger ahead of the content, so that the per-caller limit (``MCP_MAX_DATA_BYTES_PER_CALLER``)
holds however many calls keep data at once, and the per-datum one
(``MCP_MAX_DATA_BYTES``) is checked as each piece arrives: past either, the write stops
and nothing of it is left. A written datum becomes readable when its call commits it
(:meth:`DataStore.commit`), once the call's answer links it; a call that answers
otherwise discards it.

Each process holds the entries it writes for a lease (``MCP_TASK_LEASE``), renewed four
times a lease, and sweeps due entries as often: data past its expiry, and the writes of
processes that stopped without ending them, whose objects it removes.
"""

import asyncio
import contextlib
import json
import logging
import random
import re
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Sequence
from dataclasses import dataclass
from typing import TypeVar
from urllib.parse import quote

import anyio

from mcp_runtime.config.stores import STORE_ERRORS, StoreError, reaching
from mcp_runtime.data.blobs import BlobMissingError, Blobs, BlobWriter
from mcp_runtime.data.ledger import Ledger, LedgerConflictError
from mcp_runtime.data.sealing import (
    CHUNK_BYTES,
    OVERHEAD,
    ChunkSealer,
    DataSeal,
    SealError,
    chunk_count,
    chunk_label,
    meta_label,
)
from mcp_runtime.observability.errors import ERROR_ID, logged_error

__all__ = [
    "MIN_COUNTED",
    "DataLimitError",
    "DataStore",
    "DataStoreError",
    "DatumWriter",
    "KeptData",
    "WrittenData",
    "content_disposition",
    "counted_bytes",
    "size_text",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

MIN_COUNTED = 64 * 1024
"""The least a datum counts against its owner's limit, whatever its size: no caller fills
the ledger with empty data."""
SWEEP_SECONDS = 30.0
"""How often each process sweeps (jittered), and renews the data it writes, at most."""
SWEEP_AT_ONCE = 100
"""The due entries one sweep claims at most, before the next."""
CLAIM_SECONDS = 300.0
"""How long a sweep holds the entries it claimed, while it removes their objects."""
BATCH_CHUNKS = 8
"""The sealed chunks written in one step (a read's are its place's, ``read_chunks``)."""
ABORT_SECONDS = 10.0
"""How long an aborted write may take to remove what it wrote (a few store steps)."""
CONFLICT_TRIES = 60
"""How many times (every half second) a write waits for an entry being removed."""
STORE_FAILURES = (*STORE_ERRORS, OSError)
"""What says the ledger or the data's place did not answer (SQLite's errors are added
where it is used)."""


def size_text(size: int) -> str:
    """``size`` bytes in words: ``5.2 MB (5242880 bytes)``."""
    if size < 1000:
        return f"{size} bytes"
    for unit, scale in (("GB", 1e9), ("MB", 1e6)):
        if size >= scale:
            return f"{size / scale:.1f} {unit} ({size} bytes)"
    return f"{size / 1e3:.1f} kB ({size} bytes)"


def counted_bytes(size: int) -> int:
    """What a datum of ``size`` bytes counts against its owner's limit."""
    return max(size, MIN_COUNTED)


class DataLimitError(Exception):
    """Data over the service's limits: one datum over ``MCP_MAX_DATA_BYTES``, or a caller's
    data over ``MCP_MAX_DATA_BYTES_PER_CALLER``. The call answers ``isError``
    (``data_too_large``) with this message."""


class DataStoreError(StoreError):
    """The store of kept data did not keep or read it (its place or its ledger did not
    answer, or a setting is missing). The log has a line saying why, under the error id
    this exception holds."""


@dataclass(frozen=True)
class KeptData:
    """A datum as its owner reads it: what it is, how large, until when, which write of it
    (``version``, its ``ETag``), when it was kept, and whether its object is sealed."""

    data_id: str
    name: str
    media_type: str
    size: int
    expires_at: float
    version: str
    kept_at: float
    sealed: bool = True

    @property
    def stored_chunk(self) -> int:
        """The bytes of one whole chunk in its object."""
        return CHUNK_BYTES + (OVERHEAD if self.sealed else 0)


@dataclass
class WrittenData:
    """A datum written whole, not yet readable: what its commit needs."""

    data_id: str
    owner: str
    name: str
    media_type: str
    size: int
    version: str
    sealed: bool
    expires_at: float = 0.0  # as its link says; set once the link is made


@dataclass
class Limits:
    """The limits a store keeps data within."""

    max_bytes: int
    max_per_caller: int
    ttl: float
    lease: float = 30.0  # how long a process holds what it writes without renewing it


class DataStore:
    """The data of one service's callers, as this process keeps and reads it (see the
    module's docstring): objects on ``blobs``, entries in ``ledger``, sealed by ``seal``
    (None: no key, and data is refused, ``refusal`` saying why); ``sealed`` False stores
    objects as they are, for downloads by signed URL."""

    def __init__(
        self,
        blobs: Blobs,
        ledger: Ledger,
        seal: DataSeal | None,
        *,
        service: str,
        limits: Limits,
        refusal: str | None = None,
        sealed: bool = True,
    ) -> None:
        self.blobs = blobs
        self.ledger = ledger
        self.seal = seal
        self.service = self.folder_of(service)
        self.limits = limits
        self.refusal = refusal
        self.sealed = sealed
        self.held: dict[str, str] = {}  # the entries this process writes or reserved: owners
        self.in_use = False  # whether a tool's result declares a DataLink (upkeep from the start)
        self._upkeep: asyncio.Task[None] | None = None
        self._upkeep_loop: asyncio.AbstractEventLoop | None = None

    # Writing ----------------------------------------------------------------------------

    async def reserve(self, owner: str, data_id: str, size: int, name: str | None) -> None:
        """Count ``size`` bytes for ``owner``'s datum ``data_id`` before it is written (its
        writer takes the reservation over). Raises :class:`DataLimitError` past a limit."""
        self._require_keepable()
        what = f"The data '{name}'" if name else "The data asked for"
        if size > self.limits.max_bytes:
            raise DataLimitError(_too_large(what, size, self.limits.max_bytes))
        await self._count(owner, data_id, counted_bytes(size), what, size)

    async def writer(
        self,
        owner: str,
        data_id: str,
        name: str,
        media_type: str,
        reserved: int = 0,
        expected: int | None = None,
    ) -> "DatumWriter":
        """A writer of ``owner``'s datum ``data_id`` (``reserved`` bytes of which are
        counted already), of ``expected`` bytes when its size is known (counted now,
        against both limits: a datum whose size is known is refused before any of it is
        written, and datums kept at once are counted exactly). Its entry is held before
        its object is begun, so that no sweep of an earlier write of it (a task taken
        over) removes what this one writes. Raises :class:`DataLimitError` and
        :class:`DataStoreError`."""
        self._require_keepable()
        what = f"The data '{name}'"
        if expected is not None and expected > self.limits.max_bytes:
            raise DataLimitError(_too_large(what, expected, self.limits.max_bytes))
        wanted = counted_bytes(expected or 0)
        if reserved < wanted:
            reserved = wanted
            await self._count(owner, data_id, reserved, what, expected or 0)
        headers = None
        if not self.sealed:
            headers = {"Content-Type": media_type, "Content-Disposition": content_disposition(name)}
        try:
            with self.failing("could not start writing"):
                blob = await self.blobs.writer(self.key(data_id), headers=headers)
        except DataStoreError:
            await self.discard([data_id])
            raise
        self._ensure_upkeep()
        return DatumWriter(self, blob, owner, data_id, name, media_type, reserved)

    async def _count(self, owner: str, data_id: str, counted: int, what: str, size: int) -> None:
        """Count ``counted`` bytes for ``data_id``, held by this process."""
        deadline = time.time() + self.limits.lease
        limit = self.limits.max_per_caller
        for _ in range(CONFLICT_TRIES):
            try:
                used = await self._reaching(
                    self.ledger.reserve(data_id, owner, counted, deadline, limit)
                )
                break
            except LedgerConflictError:
                await asyncio.sleep(0.5)  # an earlier write of it is being removed
        else:
            raise self._failed("a datum's earlier write was not removed in time")
        if used is not None:
            raise DataLimitError(
                f"{what} ({size_text(size)}) would bring the data kept for this caller to "
                f"{size_text(used + counted)}, more than this service keeps for one caller "
                f"({size_text(limit)}, MCP_MAX_DATA_BYTES_PER_CALLER): read what was kept "
                "for you earlier and let it expire (MCP_DATA_TTL), or ask for less at once."
            )
        self.held[data_id] = owner
        self._ensure_upkeep()

    async def commit(self, written: WrittenData) -> bool:
        """Make ``written`` readable by its owner for ``MCP_DATA_TTL``; False when its
        entry was lost (swept). Raises :class:`DataStoreError`."""
        assert self.seal is not None
        meta = {
            "name": written.name,
            "type": written.media_type,
            "size": written.size,
            "sealed": written.sealed,
        }
        sealed_meta = self.seal.seal(
            json.dumps(meta).encode(), meta_label(written.data_id, written.version)
        )
        expires_at = written.expires_at or time.time() + self.limits.ttl
        committed = await self._reaching(
            self.ledger.commit(
                written.data_id,
                written.owner,
                counted_bytes(written.size),
                written.version,
                expires_at,
                sealed_meta,
            )
        )
        self.held.pop(written.data_id, None)
        return bool(committed)

    async def discard(self, data_ids: Sequence[str]) -> None:
        """Remove ``data_ids`` (written, or reserved, by this process's calls): unreadable
        at once, their objects removed now or by a later sweep. Never raises."""
        if not data_ids:
            return
        for data_id in data_ids:
            self.held.pop(data_id, None)
        try:
            await self.ledger.discard(data_ids)
            await self._remove(data_ids)
        except Exception as exc:  # the sweep removes what is left
            logger.warning(
                "kept data not removed at once (%s): a later sweep removes it",
                type(exc).__name__,
            )

    # Reading ----------------------------------------------------------------------------

    async def find(self, owner: str, data_id: str) -> KeptData | None:
        """``owner``'s datum ``data_id``; None when there is none of theirs (unknown,
        expired, not yet whole, or another caller's: all answer alike). Raises
        :class:`DataStoreError`."""
        if self.seal is None:
            return None
        entry = await self._reaching(self.ledger.find(data_id, time.time()))
        if entry is None or not secrets.compare_digest(entry.owner, owner):
            return None
        try:
            opened = self.seal.unseal(entry.meta, meta_label(data_id, entry.version))
        except SealError:
            logger.warning("a kept datum's record opens with none of MCP_TASK_KEYS: not read")
            return None
        meta = json.loads(opened)
        return KeptData(
            data_id,
            meta["name"],
            meta["type"],
            int(meta["size"]),
            entry.expires_at,
            entry.version,
            entry.kept_at,
            bool(meta.get("sealed", True)),
        )

    async def read(
        self, kept: KeptData, start: int = 0, end: int | None = None
    ) -> AsyncIterator[bytes]:
        """The bytes ``start`` to ``end`` (excluded; the end when None) of ``kept``, a
        chunk's worth at a time, reading only the chunks that hold them. Raises
        :class:`DataStoreError` when the place does not answer, and ``LookupError`` when the
        datum was removed while it was read."""
        end = kept.size if end is None else min(end, kept.size)
        if start >= end:
            return
        first, last = start // CHUNK_BYTES, (end - 1) // CHUNK_BYTES
        final = chunk_count(kept.size) - 1
        stored = kept.stored_chunk
        key = self.key(kept.data_id)
        at_once = self.blobs.read_chunks
        for batch in range(first, last + 1, at_once):
            numbers = range(batch, min(batch + at_once, last + 1))
            stop = min(numbers[-1] * stored + stored, self._object_size(kept))
            try:
                with self.failing("did not answer a read"):
                    data = await self.blobs.read(key, numbers[0] * stored, stop)
            except BlobMissingError:
                raise LookupError("kept data removed while it was read") from None
            view = memoryview(data)
            for index, number in enumerate(numbers):
                piece = view[index * stored : (index + 1) * stored]
                chunk = self._opened(kept, piece, number, number == final)
                offset = number * CHUNK_BYTES
                yield chunk[max(0, start - offset) : end - offset]

    async def read_all(self, kept: KeptData) -> bytes:
        """The whole of ``kept``."""
        return b"".join([piece async for piece in self.read(kept)])

    async def signed_url(self, kept: KeptData, seconds: int) -> str | None:
        """A URL that downloads ``kept`` straight from its place for ``seconds``; None
        where the place signs none or the datum is sealed."""
        if kept.sealed or not self.blobs.signs:
            return None
        with self.failing("did not sign a URL"):
            return await self.blobs.sign(self.key(kept.data_id), seconds)

    def _opened(self, kept: KeptData, piece: memoryview, number: int, last: bool) -> bytes:
        if not kept.sealed:
            return bytes(piece)
        assert self.seal is not None
        try:
            return self.seal.unseal(piece, chunk_label(kept.data_id, kept.version, number, last))
        except SealError as exc:
            raise self._failed(str(exc)) from None

    @staticmethod
    def _object_size(kept: KeptData) -> int:
        overhead = OVERHEAD if kept.sealed else 0
        return kept.size + chunk_count(kept.size) * overhead

    # Upkeep -----------------------------------------------------------------------------

    def start(self) -> None:
        """Sweep and renew in this process from now on (the app's start)."""
        self._ensure_upkeep()

    def _ensure_upkeep(self) -> None:
        loop = asyncio.get_running_loop()
        if self._upkeep is None or self._upkeep.done() or self._upkeep_loop is not loop:
            self._upkeep_loop = loop
            self._upkeep = loop.create_task(self._keep_up(), name="mcp-data-upkeep")

    async def _keep_up(self) -> None:
        first = True
        while True:
            every = min(SWEEP_SECONDS, self.limits.lease / 4)
            await asyncio.sleep(every * (0.2 if first else random.uniform(0.8, 1.2)))
            first = False
            try:
                await self.renew()
                while len(await self.sweep()) == SWEEP_AT_ONCE:
                    pass
            except Exception as exc:
                logger.warning("the sweep of kept data did not run: %s", type(exc).__name__)

    async def renew(self) -> None:
        """Hold the entries this process writes for another lease."""
        held = list(self.held)
        if held:
            lost = await self.ledger.renew(held, time.time() + self.limits.lease)
            for data_id in lost:
                if self.held.pop(data_id, None) is not None:
                    logger.warning("a datum being written was swept: its write will fail")

    async def sweep(self) -> list[str]:
        """Remove the objects of some due entries and drop them; their ids."""
        due = await self.ledger.claim_due(time.time(), SWEEP_AT_ONCE, CLAIM_SECONDS)
        await self._remove(due)
        if due:
            logger.info("kept data: %d expired or abandoned data removed", len(due))
        return due

    async def _remove(self, data_ids: Sequence[str]) -> None:
        removed = []
        for data_id in data_ids:
            with contextlib.suppress(*STORE_FAILURES):
                await self.blobs.delete(self.key(data_id))
                removed.append(data_id)
        await self.ledger.drop(removed)

    async def close(self) -> None:
        """Stop this process's upkeep and close its connections."""
        upkeep, self._upkeep = self._upkeep, None
        if upkeep is not None:
            upkeep.cancel()
            with contextlib.suppress(BaseException):
                await upkeep
        with contextlib.suppress(Exception):
            await self.ledger.close()
        with contextlib.suppress(Exception):
            await self.blobs.close()

    # The store --------------------------------------------------------------------------

    @staticmethod
    def folder_of(service: str) -> str:
        """The folder of ``service``'s data on its place (its name, in safe characters)."""
        return re.sub(r"[^A-Za-z0-9._-]", "-", service).strip(".") or "service"

    def key(self, data_id: str) -> str:
        """Where the object of datum ``data_id`` lies on the place."""
        return f"{self.service}/{data_id[:2]}/{data_id}"

    def _require_keepable(self) -> None:
        if self.refusal is not None:
            raise self._failed(self.refusal)

    async def _reaching(self, step: Awaitable[T]) -> T:
        """``step``'s answer, or :class:`DataStoreError` (logged, without values) when the
        ledger does not answer."""
        with self.failing("did not answer"):
            return await step

    def failing(self, what: str) -> contextlib.AbstractContextManager[None]:
        """Within it, a store that does not answer raises :class:`DataStoreError`, logged
        saying ``what`` it did not do."""
        return reaching(
            lambda exc, busy: self._failed(f"{what}: {type(exc).__name__}: {exc}"), STORE_FAILURES
        )

    def _failed(self, why: str) -> DataStoreError:
        """A :class:`DataStoreError`, logged with ``why`` and where the data is kept (the
        settings to check), under a new error id; never a datum's name or content."""
        error_id = logged_error(
            logger,
            "the store of kept data (%s) %s (error id %s): check MCP_DATA_URL, that the "
            "service may write there, and MCP_TASKS_URL when its ledger is on Redis",
            self.blobs.location,
            why,
            ERROR_ID,
        )
        return DataStoreError(error_id)


class DatumWriter:
    """One datum written as it comes (see the module's docstring): :meth:`write` each
    piece, then :meth:`finish`; :meth:`abort` leaves nothing of it."""

    def __init__(
        self,
        store: DataStore,
        blob: BlobWriter,
        owner: str,
        data_id: str,
        name: str,
        media_type: str,
        reserved: int,
    ) -> None:
        self.store = store
        self.blob = blob
        self.owner = owner
        self.data_id = data_id
        self.name = name
        self.media_type = media_type
        self.version = secrets.token_hex(8)
        seal = store.seal if store.sealed else None
        self.sealer = ChunkSealer(seal, data_id, self.version)
        self.reserved = reserved
        self._sealed: list[bytes] = []
        self._writing: asyncio.Future[None] | None = None
        self._ended = False  # no more writes: finished, or aborted
        self._left = True  # something of it is left to remove, should it be aborted

    @property
    def size(self) -> int:
        """The content's bytes so far."""
        return self.sealer.size

    async def write(self, piece: bytes | bytearray | memoryview) -> None:
        """Add ``piece`` to the datum. Raises :class:`DataLimitError` past a limit and
        :class:`DataStoreError` when the store does not answer; either way the datum is
        aborted, nothing of it left."""
        if self._ended:
            raise RuntimeError(
                f"the data '{self.name}' is no longer written: its call has ended (it timed "
                "out, or was cancelled)"
            )
        try:
            size = self.sealer.size + len(piece)
            limits = self.store.limits
            if size > limits.max_bytes:
                raise DataLimitError(
                    _too_large(f"The data '{self.name}'", size, limits.max_bytes, grew=True)
                )
            self._sealed += self.sealer.feed(piece)
            if len(self._sealed) >= BATCH_CHUNKS:
                await self._flush()
        except BaseException:
            await self.abort_shielded()
            raise

    async def finish(self) -> WrittenData:
        """The datum, whole on the place (not yet readable: see :meth:`DataStore.commit`)."""
        try:
            self._sealed.append(self.sealer.end())
            await self._flush(last=True)
            with self.store.failing("did not finish a write"):
                await self.blob.close()
            self._ended, self._left = True, False
        except BaseException:
            await self.abort_shielded()
            raise
        return WrittenData(
            self.data_id,
            self.owner,
            self.name,
            self.media_type,
            self.sealer.size,
            self.version,
            self.store.sealed,
        )

    async def abort(self) -> None:
        """Leave nothing of the datum being written (its object, its entry, its count):
        again, when an earlier abort was stopped halfway. Never raises; a finished datum
        is its commit's, or its discard's."""
        self._ended = True
        if not self._left:
            return
        self._sealed = []
        writing, self._writing = self._writing, None
        if writing is not None:  # ended first: a file's write runs on in its thread
            with contextlib.suppress(BaseException):
                await writing
        with contextlib.suppress(Exception):
            await self.blob.abort()
        await self.store.discard([self.data_id])
        self._left = False

    async def abort_shielded(self) -> None:
        """:meth:`abort`, which a cancellation of the task does not stop halfway (it takes
        a few store steps: bounded)."""
        with anyio.move_on_after(ABORT_SECONDS, shield=True):
            await self.abort()

    async def _flush(self, *, last: bool = False) -> None:
        """Count the content so far (past the reservation), then write the sealed chunks:
        in the background, while the next ones are sealed (one write at a time), or to
        their end when ``last``."""
        counted = counted_bytes(self.sealer.size)
        if counted > self.reserved:
            what = f"The data '{self.name}'"
            await self.store._count(self.owner, self.data_id, counted, what, self.sealer.size)
            self.reserved = counted
        await self._written()
        pieces, self._sealed = self._sealed, []
        self._writing = asyncio.ensure_future(self.blob.write(pieces))
        if last:
            await self._written()

    async def _written(self) -> None:
        """Wait for the write in the background, if any; raise what it met."""
        writing, self._writing = self._writing, None
        if writing is None:
            return
        with self.store.failing("did not take a write"):
            await writing


def _too_large(what: str, size: int, limit: int, *, grew: bool = False) -> str:
    amount = f"grew past {size_text(limit)}" if grew else f"is {size_text(size)}"
    return (
        f"{what} {amount}, more than this service keeps at once ({size_text(limit)}, "
        "MCP_MAX_DATA_BYTES): ask for less at once, such as a smaller range or fewer fields."
    )


def content_disposition(name: str) -> str:
    """The ``Content-Disposition`` of a download of the file ``name`` (RFC 6266): an ASCII
    ``filename`` first (curl reads only it), then the name itself as ``filename*`` (RFC
    8187; wget prefers it)."""
    fallback = "".join(ch if " " <= ch <= "~" and ch not in '"\\/%' else "_" for ch in name)
    encoded = quote(name, safe="!#$&+-.^_`|~")
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{encoded}"
