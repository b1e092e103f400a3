"""The tiered store's SQLite file: schema, checks on opening, transactions, row conversions.

One :class:`Database` per store: a connection (with sqlite-vec loaded when the vector backend
is sqlite-vec), a lock, and the mapping of SQLite's errors to memlab's (:class:`StorageError`,
:class:`CorruptStoreError` naming the file). Opening checks the file before writing anything,
so a file that is not a tiered memory database is left byte-identical.

Times are integer microseconds since the epoch (UTC): exact, ordered and cheap to compare.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from memlab.core.pipeline.storage import StorageError
from memlab.memory.storage.items import CorruptStoreError, Episode, MemoryItem
from memlab.memory.storage.vectors import Table, VectorChoice, VectorIndex, connect, range_clause

__all__ = [
    "EPISODE_COLUMNS",
    "MEMORY_COLUMNS",
    "SCHEMA",
    "Database",
    "episode_of",
    "from_us",
    "item_of",
    "marks",
    "time_range",
    "to_us",
]

SCHEMA = "memlab-tiered/1"
"""The ``schema`` value of a store's ``meta`` table; another value is refused."""

_TABLES = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE memories (
    id TEXT PRIMARY KEY, content TEXT NOT NULL, category TEXT NOT NULL,
    importance REAL NOT NULL, created_us INTEGER NOT NULL, accessed_us INTEGER NOT NULL,
    decayed_us INTEGER NOT NULL, source TEXT NOT NULL, kind TEXT NOT NULL,
    merge_checked INTEGER NOT NULL DEFAULT 0);
CREATE TABLE memory_vectors (id TEXT PRIMARY KEY, embedding BLOB NOT NULL);
CREATE VIEW memory_vectors_view AS
    SELECT v.id AS id, m.created_us AS created_us, v.embedding AS embedding
    FROM memory_vectors v JOIN memories m ON m.id = v.id;
CREATE TABLE episodes (
    n INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, at_us INTEGER NOT NULL,
    thread_id TEXT NOT NULL, input TEXT NOT NULL, output TEXT NOT NULL, outcome TEXT NOT NULL,
    embedding BLOB NOT NULL);
CREATE INDEX episodes_at ON episodes (at_us);
CREATE TABLE session_summaries (
    thread_id TEXT PRIMARY KEY, summary TEXT NOT NULL, key_points TEXT NOT NULL,
    at_us INTEGER NOT NULL, seq INTEGER NOT NULL);
"""

MEMORY_COLUMNS = (
    "id, content, category, importance, created_us, accessed_us, source, kind, "
    "decayed_us, merge_checked"
)
"""The ``memories`` columns :func:`item_of` reads (the first eight), in that order."""
EPISODE_COLUMNS = "id, at_us, thread_id, input, output, outcome"
"""The ``episodes`` columns :func:`episode_of` reads, in that order."""

_MMAP_BYTES = 1 << 28
# What SQLite says of a file it cannot read as a database (other errors are not the file's).
_CORRUPT_SIGNS = ("not a database", "malformed", "corrupt")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def to_us(moment: datetime) -> int:
    """``moment`` as microseconds since the epoch.

    Raises:
        StorageError: ``moment`` is naive.
    """
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise StorageError(
            f"tiered memory times must be timezone-aware, got naive {moment!r}; "
            "use datetime(..., tzinfo=UTC)"
        )
    return (moment - _EPOCH) // _MICROSECOND


def from_us(us: int) -> datetime:
    """The UTC datetime of ``us`` microseconds since the epoch."""
    return _EPOCH + us * _MICROSECOND


def item_of(row: Sequence[Any]) -> MemoryItem:
    """A memory from a row of :data:`MEMORY_COLUMNS`."""
    return MemoryItem(
        id=row[0],
        content=row[1],
        category=row[2],
        importance=float(row[3]),
        created_at=from_us(row[4]),
        last_accessed=from_us(row[5]),
        source=row[6],
        kind=row[7],
    )


def episode_of(row: Sequence[Any]) -> Episode:
    """An episode from a row of :data:`EPISODE_COLUMNS`."""
    return Episode(
        id=row[0], at=from_us(row[1]), thread_id=row[2], input=row[3], output=row[4], outcome=row[5]
    )


def marks(values: Sequence[object]) -> str:
    """``?, ?, ...``: one placeholder per value."""
    return ", ".join("?" * len(values))


def time_range(since: datetime | None, until: datetime | None) -> tuple[str, list[int]]:
    """The ``WHERE`` clause of ``since <= at_us <= until`` (bounds optional)."""
    return range_clause(
        None if since is None else to_us(since), None if until is None else to_us(until), "at_us"
    )


def _is_sqlite_error(exc: BaseException) -> bool:
    # sqlite3's and pysqlite3's exception classes differ; both follow DB-API names.
    return isinstance(exc, sqlite3.Error) or any(
        cls.__name__ == "DatabaseError" for cls in type(exc).__mro__
    )


class Database:
    """One store's SQLite connection, its vector index and its transactions.

    Raises:
        CorruptStoreError: ``path`` is not a readable tiered memory database (left untouched).
        StorageError: ``vectors="sqlite-vec"`` where sqlite-vec cannot be loaded.
    """

    def __init__(self, path: Path | None, vectors: VectorChoice) -> None:
        self.path = path
        self.lock = threading.RLock()
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        self.conn, index = connect(path, vectors)
        self.index: VectorIndex = index
        self.dim: int | None = None
        try:
            self._open()
        except BaseException as exc:
            self.conn.close()
            if _is_sqlite_error(exc):
                raise self.corrupt(exc) from None
            raise

    def corrupt(self, exc: BaseException) -> CorruptStoreError:
        """The error for a file SQLite cannot read (or that is not memlab's)."""
        return CorruptStoreError(self.path or Path(":memory:"), str(exc) or type(exc).__name__)

    def _open(self) -> None:
        # The file is checked before anything is written: switching to WAL rewrites its header.
        conn = self.conn
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        if tables and "meta" not in tables:
            raise self.corrupt(ValueError("an SQLite database without memlab's tables"))
        if tables:
            row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
            if row is None or row[0] != SCHEMA:
                found = "none" if row is None else repr(row[0])
                raise self.corrupt(ValueError(f"schema {found}, expected {SCHEMA!r}"))
        mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if self.path is not None and str(mode).lower() != "wal":
            raise self.corrupt(ValueError(f"journal mode {mode!r} instead of WAL"))
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA busy_timeout=10000")
        # Reads through a memory map: a k-nearest query reads every vector page, and copying
        # them through SQLite's page cache took a third longer (10,000 episodes).
        conn.execute(f"PRAGMA mmap_size={_MMAP_BYTES}")
        if not tables:
            with self.write():
                for statement in _TABLES.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                conn.execute("INSERT INTO meta VALUES ('schema', ?)", (SCHEMA,))
        dim = conn.execute("SELECT value FROM meta WHERE key = 'dim'").fetchone()
        self.dim = None if dim is None else int(dim[0])
        self.index.prepare(conn, self.dim)

    def remember_dim(self, conn: sqlite3.Connection, dim: int) -> None:
        """Record the vectors' dimension with the first vector (inside its transaction)."""
        if self.dim is None:
            conn.execute("INSERT OR IGNORE INTO meta VALUES ('dim', ?)", (str(dim),))

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One transaction: committed (and synced) on success, rolled back on any error."""
        with self.lock:
            conn = self.conn
            try:
                conn.execute("BEGIN IMMEDIATE")
            except Exception as exc:
                raise self.error(exc) from None
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException as exc:
                conn.execute("ROLLBACK")
                if isinstance(exc, StorageError) or not _is_sqlite_error(exc):
                    raise
                raise self.error(exc) from None
            if self.dim is None:
                row = conn.execute("SELECT value FROM meta WHERE key = 'dim'").fetchone()
                self.dim = None if row is None else int(row[0])

    def error(self, exc: BaseException) -> StorageError:
        """memlab's error for an SQLite error ``exc``."""
        if type(exc).__name__ == "IntegrityError":
            return StorageError(
                f"tiered memory database {self.path}: {exc} (an id issued twice?)", path=self.path
            )
        if any(sign in str(exc).lower() for sign in _CORRUPT_SIGNS):
            return self.corrupt(exc)
        return StorageError(f"tiered memory database {self.path}: {exc}", path=self.path)

    def read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """The rows of one query."""
        with self.lock:
            try:
                return list(self.conn.execute(sql, params).fetchall())
            except Exception as exc:
                if _is_sqlite_error(exc):
                    raise self.error(exc) from None
                raise

    def search(
        self, table: Table, query: np.ndarray, k: int, since_us: int | None, until_us: int | None
    ) -> list[tuple[str, float]]:
        """The vector index's search, under the lock, with SQLite errors mapped."""
        with self.lock:
            try:
                return self.index.search(self.conn, table, query, k, since_us, until_us)
            except Exception as exc:
                if _is_sqlite_error(exc):
                    raise self.error(exc) from None
                raise

    def close(self) -> None:
        """Close the connection (checkpointing the WAL into the file)."""
        with self.lock:
            self.conn.close()
