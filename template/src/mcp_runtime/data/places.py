"""Where a service keeps its data, as its settings say: the data store's place
(``MCP_DATA_URL``), its ledger, and its seal.

- a path, or ``file:///path`` (unset: ``$XDG_STATE_HOME/mcp-data``, else
  ``~/.local/state/mcp-data``): objects in that directory (one machine's disk, or a
  volume every replica mounts); the ledger on Redis when tasks are
  (``MCP_TASKS_URL``), else in an SQLite file in the directory;
- ``s3://bucket/prefix``, ``gs://...``, ``az://...``: objects on the object store; the
  ledger on Redis (``MCP_TASKS_URL``), which is then required;
- ``memory://``: both in this process's memory.

Data is sealed with ``MCP_TASK_KEYS``; without them, with a key of the process's own, so
that data kept by one process is read by that process only (with several worker
processes, or on Redis, keeping data without them is refused, saying so).
"""

import os
from pathlib import Path
from urllib.parse import unquote, urlsplit

from mcp_runtime.config.settings import ServiceSettings, SettingsError
from mcp_runtime.data.blobs import Blobs, DirectoryBlobs, MemoryBlobs
from mcp_runtime.data.ledger import Ledger, SqliteLedger
from mcp_runtime.data.object_blobs import OBJECT_SCHEMES, ObjectBlobs
from mcp_runtime.data.redis_ledger import RedisLedger
from mcp_runtime.data.sealing import DataSeal, sealed_size
from mcp_runtime.data.store import DataStore, Limits

__all__ = ["data_directory", "open_data_store"]

NO_KEYS = (
    "bad setting MCP_TASK_KEYS: data kept {where} is sealed with the service's key so that "
    "{who} read it, and MCP_TASK_KEYS is not set: set it to the key `<service> task-key` "
    "prints"
)


def data_directory(settings: ServiceSettings) -> Path | None:
    """The directory ``settings`` keep data in; None for an object store or memory."""
    url = settings.data_url
    if not url:
        state = os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state"
        return Path(state) / "mcp-data"
    parts = urlsplit(url)
    if parts.scheme == "file":
        return Path(unquote(parts.path))
    if parts.scheme:
        return None
    return Path(url).expanduser().resolve()


def open_data_store(
    settings: ServiceSettings, service: str, keys: tuple[str, ...], own_key: str
) -> DataStore:
    """The data store of ``service`` as ``settings`` say, sealed with ``keys``
    (``MCP_TASK_KEYS``), or ``own_key`` (the process's) where that is enough. Raises
    :class:`SettingsError` for settings that cannot keep data."""
    url = settings.data_url
    scheme = urlsplit(url).scheme
    directory = data_directory(settings)
    blobs: Blobs
    if url == "memory://":
        blobs = MemoryBlobs()
    elif directory is not None:
        blobs = DirectoryBlobs(directory)
    elif scheme in OBJECT_SCHEMES:
        blobs = ObjectBlobs(url, largest=sealed_size(settings.max_data_bytes))
    else:
        raise SettingsError(
            f"bad setting MCP_DATA_URL: {scheme}:// names no data store; name a directory, "
            "s3://bucket/prefix, gs://bucket/prefix, az://container/prefix or memory://"
        )
    ledger: Ledger
    if url == "memory://":
        ledger = SqliteLedger(":memory:")
    elif not settings.tasks_in_memory:
        ledger = RedisLedger(settings.tasks_url, service)
    elif directory is not None:
        ledger = SqliteLedger(directory / DataStore.folder_of(service) / "ledger.sqlite3")
    else:
        raise SettingsError(
            f"bad setting MCP_DATA_URL: data on an object store ({url}) is counted and "
            "indexed on Redis, which every replica reads: set MCP_TASKS_URL to it "
            "(redis://host:6379/0), and MCP_TASK_KEYS"
        )
    if settings.data_signed_urls and not blobs.signs:
        raise SettingsError(
            "bad setting MCP_DATA_SIGNED_URLS: downloads by signed URL need an object store "
            f"that signs them (MCP_DATA_URL=s3://..., gs://... or az://...), not {blobs.location}"
        )
    refusal = None
    if not keys:
        if not settings.tasks_in_memory:
            refusal = NO_KEYS.format(where="on Redis", who="every process")
        elif settings.workers > 1:
            refusal = NO_KEYS.format(
                where=f"with {settings.workers} worker processes", who="each worker can"
            )
    if url == "memory://" and settings.workers > 1:
        refusal = (
            f"bad setting MCP_WORKERS: data kept in memory (MCP_DATA_URL=memory://) is read "
            f"only by the process that kept it, and {settings.workers} worker processes "
            "serve: keep data in a directory or an object store (MCP_DATA_URL), or serve "
            "MCP_WORKERS=1"
        )
    seal = DataSeal(keys or (own_key,))
    limits = Limits(
        max_bytes=settings.max_data_bytes,
        max_per_caller=settings.max_data_bytes_per_caller,
        ttl=settings.data_ttl,
        lease=settings.task_lease,
    )
    return DataStore(
        blobs,
        ledger,
        seal,
        service=service,
        limits=limits,
        refusal=refusal,
        sealed=not settings.data_signed_urls,
    )
