"""Data a tool hands back by link instead of inline: kept for its caller, read apart.

A tool whose answer is data of any size (a retrieved file: CSV, NetCDF, GRIB ...) keeps
it and puts the :class:`DataLink` it gets in its typed result, which stays small and
validated by its ``outputSchema``:

- :func:`keep_data_async` (async tools) and :func:`keep_data` (sync tools) keep bytes,
  text (as UTF-8), the path of a file the tool wrote, or an iterator of chunks (async
  ones in async tools), and stream it into the store as it comes: the service holds a
  few chunks of it at a time, whatever its size. In an async tool, ``keep_data`` keeps
  bytes and text only (stored once the tool has answered).
- :func:`reserve_data_async` and :func:`reserve_data` count the size the tool expects
  against the limits before the long work, so that a request too large is refused at
  once, not after hours in a data store's queue; the next datum kept takes it over.

The data is kept for the call's caller (the owner rule of tasks), sealed with the service's
key, on the service's data store (``MCP_DATA_URL``), for ``MCP_DATA_TTL`` seconds. Past
``MCP_MAX_DATA_BYTES`` for one datum, or ``MCP_MAX_DATA_BYTES_PER_CALLER`` for the
caller's data, keeping raises :class:`DataLimitError` and the call answers
``data_too_large``, nothing of the datum left. It becomes readable once the tool's answer
links it, with a ``resource_link`` item beside the answer's text; the caller reads it with
``resources/read`` of its ``uri``, an HTTP ``GET`` of its ``download`` path (with the
caller's credential; ``Range`` requests work), or page by page with the tool
``read_data`` (``MCP_DATA_TOOL``). Another caller's link answers as an unknown one does.
A call that answers ``isError`` keeps nothing, nor does data its answer does not link.
"""

import asyncio
import base64
import contextlib
import hashlib
import math
import mimetypes
import os
import re
import secrets
import time
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Callable,
    Coroutine,
    Iterable,
    Iterator,
)
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, TypeVar

import anyio
from pydantic import Field
from typing_extensions import TypedDict

from mcp_runtime.config.settings import current_settings
from mcp_runtime.data.store import (
    DataLimitError,
    DataStore,
    DataStoreError,
    DatumWriter,
    WrittenData,
    counted_bytes,
    size_text,
)

__all__ = [
    "DATA_SCHEME",
    "DOWNLOAD_PATH",
    "CallData",
    "CallDataScope",
    "DataLimitError",
    "DataLink",
    "DataSource",
    "DataStoreError",
    "DirectCallDataScope",
    "KeptDatum",
    "data_id_of",
    "is_text",
    "keep_data",
    "keep_data_async",
    "reserve_data",
    "reserve_data_async",
    "size_text",
]

T = TypeVar("T")

DATA_SCHEME = "mcp-data"
"""The scheme of a kept datum's resource URI: ``mcp-data://<id>``."""
DOWNLOAD_PATH = "/data/"
"""Where the service serves kept data over HTTP: ``GET /data/<id>``."""
MAX_NAME_CHARS = 200
MEDIA_TYPE = re.compile(r"^[A-Za-z0-9][\w.+-]*/[A-Za-z0-9][\w.+-]*(\s*;[ -~]*)?$")
TEXT_TYPES = ("text/", "application/json", "application/xml", "application/yaml")
DATA_ID = re.compile(r"^[A-Za-z0-9_-]{32}$")
PIECE_BYTES = 8 * 1024 * 1024
"""What a file is read in, and what a sync tool's chunks are gathered into, a step."""
CLEANUP_SECONDS = 10.0
"""How long a call's end may take to remove the data it did not keep."""

DataSource = (
    bytes | bytearray | memoryview | str | os.PathLike[str] | Iterable[bytes] | AsyncIterable[bytes]
)
"""What a tool keeps: bytes, text (kept as UTF-8), the path of a file it wrote, or an
iterator of chunks (async ones in async tools)."""


class DataLink(TypedDict):
    """Data kept for the caller of a tool (:func:`keep_data`), as its result names it: its
    ``uri`` for ``resources/read``, its ``download`` path on the service, what it is
    (``name``, ``media_type``, ``size`` in bytes), until when it is kept (``expires``, UTC),
    and ``how_to_read`` it, in words, for an agent that reads only the answer's text."""

    uri: Annotated[str, Field(max_length=100)]
    name: Annotated[str, Field(max_length=MAX_NAME_CHARS)]
    media_type: Annotated[str, Field(max_length=200)]
    size: int
    expires: Annotated[str, Field(max_length=20)]
    download: Annotated[str, Field(max_length=100)]
    how_to_read: Annotated[str, Field(max_length=1000)]


@dataclass
class KeptDatum:
    """A datum a call kept: its link, and where it is (``written`` on the store, or its
    ``content`` still in memory: kept from an async tool's bytes, or in a test)."""

    link: DataLink
    written: WrittenData | None = None
    content: bytes | None = None
    reserved: int = 0  # the bytes reserved for it, while its content is in memory

    @property
    def data_id(self) -> str:
        return self.link["uri"].removeprefix(f"{DATA_SCHEME}://")


@dataclass
class CallData:
    """The data one call keeps: on ``store`` for ``owner`` (None: in memory, as a test
    that calls a tool directly keeps it), with ids of the task ``task_id`` when it runs
    as one (so that a run that takes the task over writes the same data in place)."""

    store: DataStore | None
    owner: str = "anonymous"
    task_id: str | None = None
    loop: asyncio.AbstractEventLoop | None = None
    kept: list[KeptDatum] = field(default_factory=list)
    reserved: list[tuple[str, int]] = field(default_factory=list)  # id, counted bytes
    writers: set[DatumWriter] = field(default_factory=set)
    _numbers: int = 0

    def next_id(self) -> str:
        """The id of the next datum: random, or, in a task, the task's n-th."""
        if self.task_id is None:
            return secrets.token_urlsafe(24)
        self._numbers += 1
        digest = hashlib.sha256(f"mcp-data:{self.task_id}:{self._numbers}".encode()).digest()
        return base64.urlsafe_b64encode(digest).decode()[:32]

    # The tool's side ---------------------------------------------------------------------

    def check_size(self, size: int) -> None:
        """Raise unless ``size`` is a size one datum may have."""
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise ValueError("reserve_data takes the number of bytes the tool expects, 0 or more")
        limit = self.store.limits.max_bytes if self.store else current_settings().max_data_bytes
        if size > limit:
            raise DataLimitError(_over_datum_limit(size, limit))

    async def reserve(self, size: int) -> None:
        self.check_size(size)
        if self.store is None:
            return
        data_id = self.next_id()
        await self.store.reserve(self.owner, data_id, size, None)
        self.reserved.append((data_id, counted_bytes(size)))

    async def keep(self, source: DataSource, name: str, media_type: str | None) -> DataLink:
        name = _checked_name(name)
        media_type = _media_type(name, media_type, text=isinstance(source, str))
        if isinstance(source, str):
            source = source.encode("utf-8")
        if self.store is None:
            content = b"".join([bytes(piece) async for piece in _pieces(source)])
            return self.keep_in_memory(content, name, media_type)
        expected = await asyncio.to_thread(_size_of, source)
        writer = await self._writer(name, media_type, expected)
        # A writer the source's error or a cancellation stops stays the call's, which
        # aborts it when it ends.
        async for piece in _pieces(source):
            await writer.write(piece)
        written = await writer.finish()
        self.writers.discard(writer)
        link = self._link(written.data_id, name, media_type, written.size)
        written.expires_at = _expiry_of(link)
        return self._kept(KeptDatum(link, written=written))

    def keep_in_memory(self, content: bytes, name: str, media_type: str) -> DataLink:
        """Keep ``content`` as it is, to store once the tool has answered (bytes an async
        tool keeps with the sync :func:`keep_data`)."""
        limit = self.store.limits.max_bytes if self.store else current_settings().max_data_bytes
        if len(content) > limit:
            raise DataLimitError(_over_datum_limit(len(content), limit, name))
        data_id, reserved = self.reserved.pop(0) if self.reserved else (self.next_id(), 0)
        link = self._link(data_id, name, media_type, len(content))
        return self._kept(KeptDatum(link, content=content, reserved=reserved))

    def keep_from_thread(self, source: DataSource, name: str, media_type: str | None) -> DataLink:
        """:meth:`keep`, from a sync tool's thread: ``source`` is read in this thread, and
        its pieces, gathered to :data:`PIECE_BYTES`, written on the call's event loop."""
        name = _checked_name(name)
        media_type = _media_type(name, media_type, text=isinstance(source, str))
        if isinstance(source, str):
            source = source.encode("utf-8")
        if self.store is None:
            content = b"".join(bytes(piece) for piece in _sync_pieces(source))
            return self.keep_in_memory(content, name, media_type)
        writer = self.run(self._writer(name, media_type, _size_of(source)))
        try:
            gathered = bytearray()
            for piece in _sync_pieces(source):
                if not gathered and len(piece) >= PIECE_BYTES:
                    self.run(writer.write(piece))
                    continue
                gathered += piece
                if len(gathered) >= PIECE_BYTES:
                    self.run(writer.write(gathered))
                    gathered = bytearray()
            if gathered:
                self.run(writer.write(gathered))
            written = self.run(writer.finish())
        except BaseException:
            with contextlib.suppress(Exception):
                self.run(writer.abort())
            raise
        self.writers.discard(writer)
        link = self._link(written.data_id, name, media_type, written.size)
        written.expires_at = _expiry_of(link)
        return self._kept(KeptDatum(link, written=written))

    async def _writer(self, name: str, media_type: str, expected: int | None) -> DatumWriter:
        assert self.store is not None
        data_id, reserved = self.reserved.pop(0) if self.reserved else (self.next_id(), 0)
        writer = await self.store.writer(self.owner, data_id, name, media_type, reserved, expected)
        self.writers.add(writer)
        return writer

    def _kept(self, datum: KeptDatum) -> DataLink:
        self.kept.append(datum)
        return datum.link

    def _link(self, data_id: str, name: str, media_type: str, size: int) -> DataLink:
        settings = current_settings()
        ttl = self.store.limits.ttl if self.store else settings.data_ttl
        expires_at = math.ceil(time.time() + ttl)
        expires = datetime.fromtimestamp(expires_at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        uri, download = f"{DATA_SCHEME}://{data_id}", f"{DOWNLOAD_PATH}{data_id}"
        pages = ", or page through it with the tool read_data"
        pages = pages if settings.data_tool != "false" else ""
        return DataLink(
            uri=uri,
            name=name,
            media_type=media_type,
            size=size,
            expires=expires,
            download=download,
            how_to_read=(
                f"{name} is {size_text(size)} of {media_type}, kept for you until {expires}: "
                f"read it with resources/read of {uri}, download it with GET {download} on "
                f"this service with your credential (Range requests work){pages}."
            ),
        )

    # The runtime's side ------------------------------------------------------------------

    async def commit(self, linked: Iterable[str]) -> list[KeptDatum]:
        """Make the data whose URIs are ``linked`` readable (writing first what is still in
        memory); the rest is discarded when the call ends. Raises
        :class:`DataLimitError` and :class:`DataStoreError`."""
        wanted = set(linked)
        chosen = [datum for datum in self.kept if datum.link["uri"] in wanted]
        store = self.store
        if store is None or not chosen:
            return chosen
        for datum in chosen:
            if datum.written is None and datum.content is not None:
                datum.written = await self._write_now(datum)
        for datum in chosen:
            assert datum.written is not None
            if not await store.commit(datum.written):
                raise store._failed("lost a datum before it was kept (its write was swept)")
        self.kept = [datum for datum in self.kept if datum not in chosen]
        return chosen

    async def _write_now(self, datum: KeptDatum) -> WrittenData:
        assert self.store is not None
        assert datum.content is not None
        link = datum.link
        writer = await self.store.writer(
            self.owner,
            datum.data_id,
            link["name"],
            link["media_type"],
            datum.reserved,
            len(datum.content),
        )
        self.writers.add(writer)
        view = memoryview(datum.content)
        for start in range(0, max(1, len(view)), PIECE_BYTES):
            await writer.write(view[start : start + PIECE_BYTES])
        written = await writer.finish()
        self.writers.discard(writer)
        written.expires_at = _expiry_of(link)
        datum.content = None
        return written

    async def end(self) -> None:
        """Remove what the call wrote or reserved and did not keep (bounded, and never
        cancelled halfway)."""
        if self.store is None:
            return
        ids = [datum.data_id for datum in self.kept if datum.written or datum.reserved]
        ids += [data_id for data_id, _ in self.reserved]
        writers = list(self.writers)
        self.kept, self.reserved, self.writers = [], [], set()
        if not ids and not writers:
            return
        with anyio.move_on_after(CLEANUP_SECONDS, shield=True):
            for writer in writers:
                await writer.abort()
            await self.store.discard(ids)

    def run(self, step: Coroutine[Any, Any, T]) -> T:
        """``step`` run on the call's event loop, from a sync tool's thread."""
        assert self.loop is not None
        return asyncio.run_coroutine_threadsafe(step, self.loop).result()


class CallDataScope:
    """The block serves one call, whose data is kept on ``store`` for the owner
    ``owner_of()`` names (see :class:`CallData`, made when the tool first keeps or
    reserves data: a call that keeps none costs next to nothing); leaving it removes
    what the call did not keep."""

    __slots__ = ("loop", "made", "owner_of", "store", "task_id", "token")

    def __init__(
        self, store: DataStore | None, owner_of: Callable[[], str], task_id: str | None = None
    ) -> None:
        self.store = store
        self.owner_of = owner_of
        self.task_id = task_id
        self.loop: asyncio.AbstractEventLoop | None = None
        self.made: CallData | None = None
        self.token: Any = None

    @property
    def data(self) -> CallData:
        """The call's data, made on first use."""
        if self.made is None:
            self.made = CallData(self.store, self.owner_of(), self.task_id, self.loop)
        return self.made

    async def __aenter__(self) -> "CallDataScope":
        self.loop = asyncio.get_running_loop()
        self.token = _call_data.set(self)
        return self

    async def __aexit__(self, *_: object) -> None:
        _call_data.reset(self.token)
        if self.made is not None:
            await self.made.end()


class DirectCallDataScope:
    """The data tools called inside the block keep stays in memory (a test's direct calls)."""

    __slots__ = ("data", "token")

    def __init__(self) -> None:
        self.data = CallData(None)
        self.token: Any = None

    def __enter__(self) -> CallData:
        with contextlib.suppress(RuntimeError):  # an async test: its tools are told apart
            self.data.loop = asyncio.get_running_loop()
        self.token = _call_data.set(self)
        return self.data

    def __exit__(self, *_: object) -> None:
        _call_data.reset(self.token)


_call_data: ContextVar[CallDataScope | DirectCallDataScope | None] = ContextVar(
    "mcp_runtime_call_data", default=None
)


# The tools' functions -----------------------------------------------------------------


def keep_data(source: DataSource, *, name: str, media_type: str | None = None) -> DataLink:
    """Keep ``source`` for the caller of the tool call being served, as the file ``name``
    of ``media_type`` (guessed from ``name`` when None), and answer the link to put in the
    tool's result (see the module's docstring). For sync tools; an async tool keeps bytes
    and text with it, and anything else with :func:`keep_data_async`.

    Raises :class:`DataLimitError` past a limit; :class:`DataStoreError` when the store does
    not answer; ``ValueError`` for a blank or unsafe ``name`` or a malformed
    ``media_type``; ``TypeError`` for another source; and ``RuntimeError`` outside a served
    call (and a test's ``kept_data()``).
    """
    data = _current("keep_data")
    on_loop = _on_loop(data)
    if isinstance(source, str | bytes | bytearray | memoryview) and on_loop:
        content = source.encode("utf-8") if isinstance(source, str) else bytes(source)
        name = _checked_name(name)
        kind = _media_type(name, media_type, text=isinstance(source, str))
        return data.keep_in_memory(content, name, kind)
    if on_loop:
        raise TypeError(
            f"keep_data keeps bytes or str in an async tool, not {type(source).__name__}: "
            "await keep_data_async(...) to keep a file or an iterator, which streams it into "
            "the store without stopping the service"
        )
    _check_source(source, "keep_data", sync=True)
    return data.keep_from_thread(source, name, media_type)


async def keep_data_async(
    source: DataSource, *, name: str, media_type: str | None = None
) -> DataLink:
    """:func:`keep_data` for async tools: bytes, text, the path of a file the tool wrote, or
    an iterator of chunks (sync or async), streamed into the store as it comes; the link
    to put in the tool's result. Raises as :func:`keep_data` does."""
    data = _current("keep_data_async")
    _check_source(source, "keep_data_async", sync=False)
    return await data.keep(source, name, media_type)


def reserve_data(size: int) -> None:
    """Count ``size`` bytes, the size of the data the tool expects to keep, against the
    service's limits now, before the long work; the next datum kept takes the reservation
    over (it may then be larger or smaller). For sync tools; async ones await
    :func:`reserve_data_async`. Raises :class:`DataLimitError` past a limit (the call then
    answers ``data_too_large``), and as :func:`keep_data` does."""
    data = _current("reserve_data")
    if _on_loop(data):
        raise TypeError("reserve_data is for sync tools: an async tool awaits reserve_data_async")
    if data.store is None:
        data.check_size(size)
        return
    data.run(data.reserve(size))


async def reserve_data_async(size: int) -> None:
    """:func:`reserve_data` for async tools."""
    await _current("reserve_data_async").reserve(size)


def data_id_of(reference: str) -> str | None:
    """The id of kept data that ``reference`` (its uri, download path or id) names; None
    when it names none."""
    for prefix in (f"{DATA_SCHEME}://", DOWNLOAD_PATH):
        reference = reference.removeprefix(prefix)
    return reference if DATA_ID.match(reference) else None


def is_text(media_type: str) -> bool:
    """Whether data of ``media_type`` is text (read as text, not base64)."""
    base = media_type.split(";")[0].strip().lower()
    return base.startswith(TEXT_TYPES) or base.endswith(("+json", "+xml")) or base == "text"


# Helpers ------------------------------------------------------------------------------


def _current(function: str) -> CallData:
    scope = _call_data.get()
    if scope is None:
        raise RuntimeError(
            f"{function} keeps data for the caller of a tool call: call it from a tool the "
            "runtime serves (build_server); a test that calls the tool directly calls it "
            "inside mcp_runtime.testing.kept_data()"
        )
    return scope.data


def _on_loop(data: CallData) -> bool:
    """Whether this thread runs the call's event loop (an async tool's code)."""
    try:
        return asyncio.get_running_loop() is data.loop
    except RuntimeError:
        return False


def _check_source(source: object, function: str, *, sync: bool) -> None:
    if isinstance(source, str | bytes | bytearray | memoryview | os.PathLike):
        return
    if isinstance(source, AsyncIterable) and sync:
        raise TypeError(
            f"{function} takes sync iterators in a sync tool: an async tool awaits "
            "keep_data_async(...) with an async iterator"
        )
    if not isinstance(source, Iterable | AsyncIterable):
        raise TypeError(
            f"{function} keeps bytes, str, the path of a file (pathlib.Path) or an iterator "
            f"of bytes, not {type(source).__name__}"
        )


async def _pieces(source: DataSource) -> AsyncIterator[bytes | bytearray | memoryview]:
    """The pieces of ``source``, read as they come (a file a step at a time, in a thread)."""
    if isinstance(source, str):
        yield source.encode("utf-8")
    elif isinstance(source, bytes | bytearray | memoryview):
        yield source
    elif isinstance(source, os.PathLike):
        with await asyncio.to_thread(open, Path(source), "rb") as file:
            while piece := await asyncio.to_thread(file.read, PIECE_BYTES):
                yield piece
    elif isinstance(source, AsyncIterable):
        async for piece in source:
            yield _checked_piece(piece)
    else:
        for piece in source:
            yield _checked_piece(piece)


def _sync_pieces(source: DataSource) -> Iterator[bytes | bytearray | memoryview]:
    """The pieces of ``source``, read in the calling thread."""
    if isinstance(source, str):
        yield source.encode("utf-8")
    elif isinstance(source, bytes | bytearray | memoryview):
        yield source
    elif isinstance(source, os.PathLike):
        with open(Path(source), "rb") as file:
            while piece := file.read(PIECE_BYTES):
                yield piece
    else:
        assert isinstance(source, Iterable)
        for piece in source:
            yield _checked_piece(piece)


def _size_of(source: DataSource) -> int | None:
    """The bytes ``source`` holds, where that is known before it is read (bytes, a file)."""
    if isinstance(source, bytes | bytearray):
        return len(source)
    if isinstance(source, memoryview):
        return source.nbytes
    if isinstance(source, os.PathLike):
        return os.stat(source).st_size
    return None


def _checked_piece(piece: object) -> bytes | bytearray | memoryview:
    if not isinstance(piece, bytes | bytearray | memoryview):
        raise TypeError(f"an iterator of data yields bytes, not {type(piece).__name__}")
    return piece


def _expiry_of(link: DataLink) -> float:
    return datetime.strptime(link["expires"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()


def _over_datum_limit(size: int, limit: int, name: str | None = None) -> str:
    what = f"The data '{name}'" if name else "The data asked for"
    return (
        f"{what} is {size_text(size)}, more than this service keeps at once "
        f"({size_text(limit)}, MCP_MAX_DATA_BYTES): ask for less at once, such as a smaller "
        "range or fewer fields."
    )


def _checked_name(name: str) -> str:
    cleaned = name.strip() if isinstance(name, str) else ""
    if not cleaned:
        raise ValueError("keep_data needs a name for the data, such as 'rainfall.csv'")
    unsafe = any(ch in cleaned for ch in "/\\") or not cleaned.isprintable()
    if len(cleaned) > MAX_NAME_CHARS or unsafe:
        raise ValueError(
            f"keep_data's name must be a file name of at most {MAX_NAME_CHARS} printable "
            "characters without / or \\, such as 'rainfall.csv'"
        )
    return cleaned


def _media_type(name: str, media_type: str | None, *, text: bool) -> str:
    if media_type is None:
        guessed, _ = mimetypes.guess_type(name, strict=False)
        media_type = guessed or ("text/plain" if text else "application/octet-stream")
    if len(media_type) > 200 or not MEDIA_TYPE.match(media_type):
        raise ValueError(
            f"keep_data's media_type {media_type!r} is not a media type such as 'text/csv' "
            "or 'application/x-netcdf'"
        )
    return media_type
