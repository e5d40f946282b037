"""Where the bytes of kept data lie: one object a datum, written once, read by ranges.

:class:`Blobs` is what the data store asks of a place: a writer that makes an object whole
at its key only when closed (and leaves nothing when aborted), reads of a byte range,
removal, and a signed URL where the place signs them. Two places are here:
:class:`DirectoryBlobs` (a directory: the default, shared by the processes of one
machine, or by replicas that mount one volume) and :class:`MemoryBlobs` (this process's
memory, for tests); :mod:`mcp_runtime.data.object_blobs` has the object stores (S3, GCS,
Azure).
"""

import asyncio
import contextlib
import os
import secrets
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

__all__ = ["BlobMissingError", "BlobWriter", "Blobs", "DirectoryBlobs", "MemoryBlobs"]


class BlobMissingError(LookupError):
    """An object that is not (or no longer) where it was kept."""


class BlobWriter(Protocol):
    """One object being written."""

    async def write(self, pieces: Sequence[bytes]) -> None:
        """Append ``pieces``, in order."""
        ...

    async def close(self) -> None:
        """Make the object whole at its key (durably, where the place can)."""
        ...

    async def abort(self) -> None:
        """Leave nothing of the object (safe after :meth:`close`'s failure, and twice)."""
        ...


class Blobs(Protocol):
    """A place for the objects of kept data (see the module's docstring)."""

    location: str
    """Where it is, in words for the log (never a credential)."""
    signs: bool
    """Whether :meth:`sign` gives URLs."""
    read_chunks: int
    """The chunks a read of many asks for at once (a file's are cheap to read a few at a
    time; an object store's requests are not)."""

    async def writer(self, key: str, *, headers: Mapping[str, str] | None = None) -> BlobWriter:
        """A writer of the object ``key``, which a signed URL answers with ``headers``
        (``Content-Type``, ``Content-Disposition``) where the place keeps them. Raises
        ``OSError`` when the place cannot be written."""
        ...

    async def read(self, key: str, start: int, end: int) -> bytes | memoryview:
        """The bytes ``start`` to ``end`` (excluded) of the object ``key``. Raises
        :class:`BlobMissingError`."""
        ...

    async def delete(self, key: str) -> None:
        """Remove the object ``key`` and anything left of a write of it (none: done)."""
        ...

    async def sign(self, key: str, seconds: int) -> str:
        """A URL that reads the object ``key`` for ``seconds``."""
        ...

    async def close(self) -> None:
        """Let go of what this process holds of the place."""
        ...


class DirectoryBlobs:
    """Objects as files under ``root``: ``<key>`` once whole, written as
    ``<key>.<random>.part`` and renamed at the end, after the file's bytes are on disk
    (``fdatasync``). Each step runs in a thread, off the event loop."""

    signs = False
    read_chunks = 2

    def __init__(self, root: Path) -> None:
        self.root = root
        self.location = f"the directory {root}"

    async def writer(self, key: str, *, headers: Mapping[str, str] | None = None) -> "FileWriter":
        path = self.root / key
        return await asyncio.to_thread(FileWriter.opened, path)

    async def read(self, key: str, start: int, end: int) -> bytes:
        return await asyncio.to_thread(self.read_now, key, start, end)

    def read_now(self, key: str, start: int, end: int) -> bytes:
        """:meth:`read`, in the calling thread."""
        try:
            descriptor = os.open(self.root / key, os.O_RDONLY)
        except FileNotFoundError:
            raise BlobMissingError(key) from None
        try:
            data = os.pread(descriptor, end - start, start)
        finally:
            os.close(descriptor)
        if len(data) < end - start:
            raise BlobMissingError(key)  # cut short: not the object that was kept
        return data

    async def delete(self, key: str) -> None:
        await asyncio.to_thread(self._delete, key)

    def _delete(self, key: str) -> None:
        path = self.root / key
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        with contextlib.suppress(FileNotFoundError):
            for part in path.parent.glob(f"{path.name}.*.part"):
                with contextlib.suppress(FileNotFoundError):
                    part.unlink()

    async def sign(self, key: str, seconds: int) -> str:
        raise NotImplementedError("a directory signs no URL")

    async def close(self) -> None:
        return None


class FileWriter:
    """One file being written under a name of its own, renamed to ``path`` when whole."""

    def __init__(self, path: Path, part: Path, descriptor: int) -> None:
        self.path = path
        self.part = part
        self.descriptor: int | None = descriptor

    @classmethod
    def opened(cls, path: Path) -> "FileWriter":
        """A writer of ``path``, which removes what an earlier write of it left (the run of a
        task that another process took over writes its data again, in its place)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        for left in path.parent.glob(f"{path.name}.*.part"):
            with contextlib.suppress(FileNotFoundError):
                left.unlink()
        part = path.with_name(f"{path.name}.{secrets.token_hex(4)}.part")
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
        return cls(path, part, os.open(part, flags, 0o600))

    async def write(self, pieces: Sequence[bytes]) -> None:
        await asyncio.to_thread(self.write_now, pieces)

    def write_now(self, pieces: Sequence[bytes]) -> None:
        """:meth:`write`, in the calling thread."""
        assert self.descriptor is not None, "written after close"
        for piece in pieces:
            view = memoryview(piece)
            while view:
                view = view[os.write(self.descriptor, view) :]

    async def close(self) -> None:
        await asyncio.to_thread(self._close)

    def _close(self) -> None:
        descriptor, self.descriptor = self.descriptor, None
        assert descriptor is not None, "closed twice"
        try:
            os.fdatasync(descriptor)
        finally:
            os.close(descriptor)
        os.replace(self.part, self.path)

    async def abort(self) -> None:
        await asyncio.to_thread(self._abort)

    def _abort(self) -> None:
        descriptor, self.descriptor = self.descriptor, None
        if descriptor is not None:
            os.close(descriptor)
        with contextlib.suppress(FileNotFoundError):
            self.part.unlink()


class MemoryBlobs:
    """Objects in this process's memory (``memory://``): for tests, and for data that
    need not outlive the process."""

    signs = False
    read_chunks = 2
    location = "this process's memory"

    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}

    async def writer(self, key: str, *, headers: Mapping[str, str] | None = None) -> "MemoryWriter":
        return MemoryWriter(self, key)

    async def read(self, key: str, start: int, end: int) -> memoryview:
        data = self.objects.get(key)
        if data is None or len(data) < end:
            raise BlobMissingError(key)
        return memoryview(data)[start:end]

    async def delete(self, key: str) -> None:
        self.objects.pop(key, None)

    async def sign(self, key: str, seconds: int) -> str:
        raise NotImplementedError("memory signs no URL")

    async def close(self) -> None:
        return None


class MemoryWriter:
    """One object being written to :class:`MemoryBlobs`."""

    def __init__(self, blobs: MemoryBlobs, key: str) -> None:
        self.blobs = blobs
        self.key = key
        self.pieces: list[bytes] | None = []

    async def write(self, pieces: Sequence[bytes]) -> None:
        assert self.pieces is not None, "written after close"
        self.pieces.extend(pieces)

    async def close(self) -> None:
        assert self.pieces is not None, "closed twice"
        self.blobs.objects[self.key] = b"".join(self.pieces)
        self.pieces = None

    async def abort(self) -> None:
        self.pieces = None
