"""Kept data on an object store: S3 and the stores that speak its API (MinIO, Ceph, ...),
Google Cloud Storage and Azure Blob Storage, through ``obstore`` (Rust's
``object_store``).

An object is written by a multipart upload that completes only when the writer closes,
and is aborted otherwise, so no reader ever sees part of one; an upload that a killed
process leaves incomplete is the store's to remove, by a lifecycle rule (S3's
``AbortIncompleteMultipartUpload``; docs/large-results.md). Ranges are read with ranged
GETs. The store's credentials and options come from the environment, as the store's
own tools read them (``AWS_*``, ``GOOGLE_*``, ``AZURE_*``); the URL names the bucket and
a prefix.

``obstore`` is imported when the first store opens: a service that keeps its data on a
directory never loads it.
"""

import asyncio
import contextlib
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from mcp_runtime.data.blobs import BlobMissingError

if TYPE_CHECKING:
    from obstore import AsyncWritableFile

__all__ = ["OBJECT_SCHEMES", "ObjectBlobs"]

OBJECT_SCHEMES = ("s3", "s3a", "gs", "az", "abfs", "abfss", "azure")
"""The URL schemes of the object stores (``s3://bucket/prefix``, ``gs://``, ``az://``)."""
PART_BYTES = 8 * 1024 * 1024
"""The least bytes of one part of an upload (S3 takes parts of 5 MiB and more); larger for
a service that keeps data past 9,000 parts of it (S3 and GCS take at most 10,000)."""
UPLOADS_AT_ONCE = 2
"""The parts of one upload sent at once (each held in memory until it is sent)."""


class Aborted(Exception):  # noqa: N818 - what happened, not an error
    """Raised into an upload's writer to abort it."""


class ObjectBlobs:
    """Objects on the object store the URL ``url`` names (see the module's docstring), of
    ``largest`` bytes at most (its parts' size follows)."""

    signs = True
    read_chunks = 8

    def __init__(self, url: str, largest: int = 64 * 1024**3) -> None:
        self.url = url
        self.location = f"the object store {url}"
        mib = 1024 * 1024
        self.part_bytes = max(PART_BYTES, -(-largest // 9000 // mib) * mib)
        self._store: Any = None

    def _opened(self) -> Any:
        if self._store is None:
            from obstore.store import from_url

            self._store = from_url(self.url)
        return self._store

    async def writer(self, key: str, *, headers: Mapping[str, str] | None = None) -> "ObjectWriter":
        import obstore

        upload = obstore.open_writer_async(
            self._opened(),
            key,
            attributes=dict(headers) if headers else None,
            buffer_size=self.part_bytes,
            max_concurrency=UPLOADS_AT_ONCE,
        )
        return ObjectWriter(upload)

    async def read(self, key: str, start: int, end: int) -> memoryview:
        import obstore

        try:
            data = await obstore.get_range_async(self._opened(), key, start=start, end=end)
        except FileNotFoundError:
            raise BlobMissingError(key) from None
        view = memoryview(data)
        if len(view) < end - start:
            raise BlobMissingError(key)
        return view

    async def delete(self, key: str) -> None:
        import obstore

        with contextlib.suppress(FileNotFoundError):  # GCS and Azure: already gone
            await obstore.delete_async(self._opened(), key)

    async def sign(self, key: str, seconds: int) -> str:
        import obstore

        url: str = await obstore.sign_async(self._opened(), "GET", key, timedelta(seconds=seconds))
        return url

    async def close(self) -> None:
        # The store's client ends with the process; a moment lets its threads hand back
        # what they still answer before the interpreter stops (pyo3's threads).
        if self._store is not None:
            self._store = None
            await asyncio.sleep(0.05)


class ObjectWriter:
    """One upload to the object store."""

    def __init__(self, upload: "AsyncWritableFile") -> None:
        self.upload = upload
        self.done = False

    async def write(self, pieces: Sequence[bytes]) -> None:
        for piece in pieces:
            await self.upload.write(piece)

    async def close(self) -> None:
        await self.upload.close()
        self.done = True

    async def abort(self) -> None:
        if not self.done:
            self.done = True
            with contextlib.suppress(Exception):
                await self.upload.__aexit__(Aborted, Aborted(), None)
