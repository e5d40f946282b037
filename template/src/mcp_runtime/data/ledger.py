"""The ledger of kept data: which data there is, whose, until when, and each caller's bytes.

The bytes of a datum are on the data store (:mod:`mcp_runtime.data.blobs`); the ledger
holds, for each datum, its owner's digest, the bytes it counts, its state, until when it
is held, and its sealed name and media type, and for each owner the bytes its data
counts. Every step is one atomic operation, so a caller's bytes stay under its limit
exactly however many calls keep data at once, at the same cost whatever it has kept.

A datum's entry goes through three states:

- ``writing``: counted from its reservation on, held by the process writing it until its
  deadline, which that process renews; unreadable. Its write grows what it counts as the
  content comes (:meth:`Ledger.reserve`), never past its owner's limit.
- ``kept``: readable by its owner until its deadline, its expiry (:meth:`Ledger.commit`).
- ``removing``: unreadable, claimed by the process that removes its object
  (:meth:`Ledger.claim_due`, then :meth:`Ledger.drop`, which uncounts it).

An entry whose deadline has passed is due: a ``writing`` one whose process stopped (a
``kill -9``) as a ``kept`` one that expired. Every serving process sweeps the due entries
now and then: claims some, removes their objects, drops them.

Two ledgers keep these rules: :class:`SqliteLedger` (a file beside the data on a directory
the processes of one machine share; in memory for ``memory://``) here, and
:class:`~mcp_runtime.data.redis_ledger.RedisLedger` on the task store's Redis, which every
replica shares.
"""

import asyncio
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

__all__ = ["Entry", "Ledger", "LedgerConflictError", "SqliteLedger"]

T = TypeVar("T")


@dataclass(frozen=True)
class Entry:
    """A kept datum as the ledger holds it: its owner's digest, the bytes it counts, the
    write that stored it (``version``), until when it is kept, its sealed name and media
    type (``meta``), and when it was kept."""

    data_id: str
    owner: str
    counted: int
    version: str
    expires_at: float
    meta: bytes
    kept_at: float


class LedgerConflictError(Exception):
    """A datum's entry that cannot be reserved now: it is being removed, or it is another
    owner's."""


class Ledger(Protocol):
    """What the store asks of a ledger (see the module's docstring)."""

    async def reserve(
        self, data_id: str, owner: str, counted: int, deadline: float, limit: int
    ) -> int | None:
        """Count ``counted`` bytes of ``owner`` for ``data_id`` in place of what it counted,
        ``writing`` until ``deadline``, when its owner's bytes stay within ``limit``: None
        then, else the bytes the owner's other data count. Raises
        :class:`LedgerConflictError`."""
        ...

    async def renew(self, data_ids: Sequence[str], deadline: float) -> list[str]:
        """Hold the ``writing`` entries ``data_ids`` until ``deadline``; those that are
        no longer held (swept after their process missed its renewals)."""
        ...

    async def commit(
        self,
        data_id: str,
        owner: str,
        counted: int,
        version: str,
        expires_at: float,
        meta: bytes,
    ) -> bool:
        """Make ``owner``'s ``writing`` ``data_id`` kept (readable) until ``expires_at``, counting
        ``counted`` bytes; whether it was still held."""
        ...

    async def discard(self, data_ids: Sequence[str]) -> None:
        """Make the entries ``data_ids`` unreadable and due now, for their objects to be
        removed (:meth:`claim_due`)."""
        ...

    async def find(self, data_id: str, now: float) -> Entry | None:
        """``data_id``'s entry while it is kept and before its expiry."""
        ...

    async def claim_due(self, now: float, limit: int, hold: float) -> list[str]:
        """Up to ``limit`` entries due at ``now``, each claimed (``removing``) for ``hold``
        seconds, in which their objects are removed."""
        ...

    async def drop(self, data_ids: Sequence[str]) -> None:
        """Remove the claimed entries ``data_ids`` and uncount their bytes."""
        ...

    async def counted(self, owner: str) -> int:
        """The bytes ``owner``'s data count."""
        ...

    async def close(self) -> None:
        """Close this process's connection to the ledger."""
        ...


SCHEMA = """
CREATE TABLE IF NOT EXISTS data (
    id TEXT PRIMARY KEY, owner TEXT NOT NULL, counted INTEGER NOT NULL,
    state TEXT NOT NULL, deadline REAL NOT NULL, version TEXT NOT NULL DEFAULT '',
    meta BLOB, kept_at REAL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS data_due ON data (deadline);
CREATE TABLE IF NOT EXISTS owners (owner TEXT PRIMARY KEY, counted INTEGER NOT NULL)
    WITHOUT ROWID;
"""


class SqliteLedger:
    """The ledger in an SQLite database: the file ``path`` (shared by the processes of one
    machine: SQLite locks it, and each step is a transaction), or ``:memory:`` (this
    process only). Each step runs in a thread, off the event loop."""

    def __init__(self, path: Path | str) -> None:
        self.path = str(path)
        self._connection: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    async def reserve(
        self, data_id: str, owner: str, counted: int, deadline: float, limit: int
    ) -> int | None:
        def step(db: sqlite3.Connection) -> int | None:
            row = db.execute(
                "SELECT owner, counted, state FROM data WHERE id = ?", (data_id,)
            ).fetchone()
            prior = 0
            if row is not None:
                if row[0] != owner or row[2] == "removing":
                    raise LedgerConflictError(data_id)
                prior = row[1]
            used = _owner_counted(db, owner) - prior
            if counted > prior and used + counted > limit:
                return used
            db.execute(
                "INSERT INTO data (id, owner, counted, state, deadline) "
                "VALUES (?, ?, ?, 'writing', ?) ON CONFLICT (id) DO UPDATE SET "
                "counted = excluded.counted, state = 'writing', deadline = excluded.deadline",
                (data_id, owner, counted, deadline),
            )
            _count(db, owner, counted - prior)
            return None

        return await self._transaction(step)

    async def renew(self, data_ids: Sequence[str], deadline: float) -> list[str]:
        def step(db: sqlite3.Connection) -> list[str]:
            lost = []
            for data_id in data_ids:
                changed = db.execute(
                    "UPDATE data SET deadline = ? WHERE id = ? AND state = 'writing'",
                    (deadline, data_id),
                ).rowcount
                if not changed:
                    lost.append(data_id)
            return lost

        return await self._transaction(step)

    async def commit(
        self,
        data_id: str,
        owner: str,
        counted: int,
        version: str,
        expires_at: float,
        meta: bytes,
    ) -> bool:
        def step(db: sqlite3.Connection) -> bool:
            row = db.execute(
                "SELECT owner, counted FROM data WHERE id = ? AND state = 'writing' AND owner = ?",
                (data_id, owner),
            ).fetchone()
            if row is None:
                return False
            db.execute(
                "UPDATE data SET counted = ?, state = 'kept', deadline = ?, version = ?, "
                "meta = ?, kept_at = ? WHERE id = ?",
                (counted, expires_at, version, meta, time.time(), data_id),
            )
            _count(db, row[0], counted - row[1])
            return True

        return await self._transaction(step)

    async def discard(self, data_ids: Sequence[str]) -> None:
        def step(db: sqlite3.Connection) -> None:
            db.executemany(
                "UPDATE data SET state = 'removing', deadline = 0 WHERE id = ? "
                "AND state != 'removing'",
                [(data_id,) for data_id in data_ids],
            )

        await self._transaction(step)

    async def find(self, data_id: str, now: float) -> Entry | None:
        def step(db: sqlite3.Connection) -> Entry | None:
            row = db.execute(
                "SELECT owner, counted, version, deadline, meta, kept_at FROM data "
                "WHERE id = ? AND state = 'kept' AND deadline > ?",
                (data_id, now),
            ).fetchone()
            return None if row is None else Entry(data_id, *row)

        return await self._run(step)

    async def claim_due(self, now: float, limit: int, hold: float) -> list[str]:
        def step(db: sqlite3.Connection) -> list[str]:
            due = [
                row[0]
                for row in db.execute(
                    "SELECT id FROM data WHERE deadline <= ? LIMIT ?", (now, limit)
                )
            ]
            db.executemany(
                "UPDATE data SET state = 'removing', deadline = ? WHERE id = ?",
                [(now + hold, data_id) for data_id in due],
            )
            return due

        return await self._transaction(step)

    async def drop(self, data_ids: Sequence[str]) -> None:
        def step(db: sqlite3.Connection) -> None:
            for data_id in data_ids:
                row = db.execute(
                    "DELETE FROM data WHERE id = ? AND state = 'removing' RETURNING owner, counted",
                    (data_id,),
                ).fetchone()
                if row is not None:
                    _count(db, row[0], -row[1])

        await self._transaction(step)

    async def counted(self, owner: str) -> int:
        return await self._run(lambda db: _owner_counted(db, owner))

    async def close(self) -> None:
        with self._lock:
            connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()

    async def _transaction(self, step: Callable[[sqlite3.Connection], T]) -> T:
        def whole(db: sqlite3.Connection) -> T:
            db.execute("BEGIN IMMEDIATE")
            try:
                answer = step(db)
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
            return answer

        return await self._run(whole)

    async def _run(self, step: Callable[[sqlite3.Connection], T]) -> T:
        def locked() -> T:
            with self._lock:
                return step(self._opened())

        return await asyncio.to_thread(locked)

    def _opened(self) -> sqlite3.Connection:
        if self._connection is None:
            if self.path != ":memory:":
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(
                self.path, timeout=30, isolation_level=None, check_same_thread=False
            )
            if self.path != ":memory:":
                connection.execute("PRAGMA journal_mode = WAL")
                connection.execute("PRAGMA synchronous = NORMAL")
            connection.executescript(SCHEMA)
            self._connection = connection
        return self._connection


def _owner_counted(db: sqlite3.Connection, owner: str) -> int:
    row = db.execute("SELECT counted FROM owners WHERE owner = ?", (owner,)).fetchone()
    return 0 if row is None else int(row[0])


def _count(db: sqlite3.Connection, owner: str, change: int) -> None:
    """Add ``change`` to ``owner``'s bytes (an owner with none is not kept)."""
    if change == 0:
        return
    db.execute(
        "INSERT INTO owners (owner, counted) VALUES (?, ?) "
        "ON CONFLICT (owner) DO UPDATE SET counted = counted + excluded.counted",
        (owner, change),
    )
    db.execute("DELETE FROM owners WHERE owner = ? AND counted <= 0", (owner,))
