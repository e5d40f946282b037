"""The store of kept data, part by part: the chunks a datum is sealed in (whatever pieces it
comes in), an object cut short or reordered never read as data, each rule of the ledger
on SQLite and on Redis alike, and files on a directory written whole or not at all."""

import asyncio
import time
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_runtime.data.blobs import DirectoryBlobs, MemoryBlobs
from mcp_runtime.data.ledger import Entry, Ledger, LedgerConflictError, SqliteLedger
from mcp_runtime.data.redis_ledger import RedisLedger
from mcp_runtime.data.sealing import (
    CHUNK_BYTES,
    OVERHEAD,
    SEALED_BYTES,
    ChunkSealer,
    DataSeal,
    SealError,
    chunk_label,
)
from mcp_runtime.data.store import DataStore, DataStoreError, Limits

SEAL = DataSeal([Fernet.generate_key().decode()])
GIB = 1024**3


@settings(max_examples=40, deadline=None)
@given(cuts=st.lists(st.integers(min_value=0, max_value=3 * CHUNK_BYTES), max_size=6))
def test_a_datum_is_sealed_in_whole_chunks_whatever_pieces_it_comes_in(cuts: list[int]) -> None:
    content = bytes(range(256)) * (sum(cuts) // 256 + 1)
    content = content[: sum(cuts)]
    sealer = ChunkSealer(SEAL, "d", "v")
    sealed, start = [], 0
    for cut in cuts:
        sealed += sealer.feed(memoryview(content)[start : start + cut])
        start += cut
    sealed.append(sealer.end())
    count = max(1, -(-len(content) // CHUNK_BYTES))
    assert len(sealed) == count
    assert all(len(chunk) == SEALED_BYTES for chunk in sealed[:-1])
    opened = [
        SEAL.unseal(chunk, chunk_label("d", "v", number, number == count - 1))
        for number, chunk in enumerate(sealed)
    ]
    assert b"".join(opened) == content
    assert len(b"".join(sealed)) == len(content) + count * OVERHEAD


def test_a_chunk_opens_only_in_its_own_place() -> None:
    sealed = SEAL.seal(b"x" * 10, chunk_label("d", "v", 0, False))
    for label in (
        chunk_label("d", "v", 1, False),
        chunk_label("d", "v", 0, True),
        chunk_label("d", "w", 0, False),
        chunk_label("e", "v", 0, False),
    ):
        with pytest.raises(SealError):
            SEAL.unseal(sealed, label)
    with pytest.raises(SealError):
        DataSeal([Fernet.generate_key().decode()]).unseal(sealed, chunk_label("d", "v", 0, False))


def memory_store(ttl: float = 60.0) -> DataStore:
    limits = Limits(max_bytes=GIB, max_per_caller=GIB, ttl=ttl)
    return DataStore(MemoryBlobs(), SqliteLedger(":memory:"), SEAL, service="svc", limits=limits)


async def kept(store: DataStore, content: bytes, data_id: str = "d" * 32) -> None:
    writer = await store.writer("me", data_id, "x.bin", "application/octet-stream")
    await writer.write(content)
    assert await store.commit(await writer.finish())


@pytest.mark.anyio
async def test_an_object_cut_at_a_chunk_or_with_chunks_swapped_is_never_read_as_data() -> None:
    store = memory_store()
    content = bytes(range(256)) * (3 * CHUNK_BYTES // 256)
    await kept(store, content)
    found = await store.find("me", "d" * 32)
    assert found is not None
    assert await store.read_all(found) == content
    blobs = store.blobs
    assert isinstance(blobs, MemoryBlobs)
    key = store.key("d" * 32)
    whole = blobs.objects[key]
    cut = type(found)(**{**found.__dict__, "size": 2 * CHUNK_BYTES})
    swapped = (
        whole[SEALED_BYTES : 2 * SEALED_BYTES] + whole[:SEALED_BYTES] + whole[2 * SEALED_BYTES :]
    )
    for stored, read in ((whole[: 2 * SEALED_BYTES], cut), (swapped, found)):
        blobs.objects[key] = stored
        with pytest.raises(DataStoreError):
            await store.read_all(read)


@pytest.mark.anyio
async def test_another_owner_finds_nothing_and_an_expired_datum_is_swept() -> None:
    store = memory_store(ttl=0.2)
    await kept(store, b"abc")
    assert await store.find("someone else", "d" * 32) is None
    assert (await store.find("me", "d" * 32)) is not None
    await asyncio.sleep(0.3)
    assert await store.find("me", "d" * 32) is None
    assert await store.sweep() == ["d" * 32]
    assert isinstance(store.blobs, MemoryBlobs)
    assert (store.blobs.objects, await store.ledger.counted("me")) == ({}, 0)


def sqlite_ledger(tmp_path: Path) -> Ledger:
    return SqliteLedger(tmp_path / "ledger.sqlite3")


LEDGERS = ["sqlite", pytest.param("redis", marks=pytest.mark.any_python)]


@pytest.fixture(params=LEDGERS)
def ledger(request: pytest.FixtureRequest, tmp_path: Path) -> Ledger:
    if request.param == "sqlite":
        return sqlite_ledger(tmp_path)
    redis_url = request.getfixturevalue("redis_url")
    return RedisLedger(redis_url, f"ledger-{time.monotonic_ns()}")


@pytest.mark.anyio
async def test_each_ledger_keeps_its_rules(ledger: Ledger) -> None:
    """One sequence of steps, with the answers each step must give, on either ledger."""
    now, limit = time.time(), 2 * 64 * GIB
    assert await ledger.reserve("a", "o1", 64 * GIB, now + 60, limit) is None
    assert await ledger.reserve("b", "o1", 64 * GIB, now + 60, limit) is None
    assert await ledger.reserve("c", "o1", 1, now + 60, limit) == 128 * GIB  # over: refused
    assert await ledger.counted("o1") == 128 * GIB
    assert await ledger.reserve("a", "o1", 32 * GIB, now + 60, limit) is None  # shrunk
    assert await ledger.counted("o1") == 96 * GIB
    with pytest.raises(LedgerConflictError):
        await ledger.reserve("a", "o2", 5, now + 60, limit)  # another owner's
    assert await ledger.commit("a", "o2", 1000, "v1", now + 3600, b"m") is False
    assert await ledger.commit("a", "o1", 1000, "v1", now + 3600, b"\x00m") is True
    assert await ledger.counted("o1") == 64 * GIB + 1000
    found = await ledger.find("a", now)
    assert found is not None
    assert (found.owner, found.counted, found.version, found.meta) == ("o1", 1000, "v1", b"\x00m")
    assert isinstance(found, Entry)
    assert await ledger.find("b", now) is None  # still being written
    assert await ledger.renew(["b", "a", "z"], now + 120) == ["a", "z"]
    assert await ledger.claim_due(now + 121, 10, 30) == ["b"]  # b's lease ran out first
    with pytest.raises(LedgerConflictError):
        await ledger.reserve("b", "o1", 5, now + 200, limit)  # being removed
    assert await ledger.find("a", now + 121) is not None
    await ledger.drop(["b"])
    assert await ledger.counted("o1") == 1000
    await ledger.discard(["a"])
    assert await ledger.find("a", now) is None
    assert await ledger.claim_due(now, 10, 30) == ["a"]
    await ledger.drop(["a"])
    assert await ledger.counted("o1") == 0
    assert await ledger.claim_due(now + 10_000, 10, 30) == []
    assert await ledger.commit("a", "o1", 1, "v", now + 10, b"") is False
    await ledger.close()


@pytest.mark.anyio
async def test_a_file_is_whole_at_its_name_only_once_closed(tmp_path: Path) -> None:
    blobs = DirectoryBlobs(tmp_path)
    writer = await blobs.writer("svc/ab/abc")
    await writer.write([b"one", b"two"])
    [part] = (tmp_path / "svc" / "ab").iterdir()
    assert part.name.endswith(".part")
    await writer.close()
    assert (tmp_path / "svc" / "ab" / "abc").read_bytes() == b"onetwo"
    assert await blobs.read("svc/ab/abc", 3, 6) == b"two"
    aborted = await blobs.writer("svc/ab/abd")
    await aborted.write([b"x"])
    await aborted.abort()
    left = await blobs.writer("svc/ab/abc")  # a write its process left, part written
    await left.write([b"partial"])
    await blobs.delete("svc/ab/abc")
    assert list((tmp_path / "svc" / "ab").iterdir()) == []
