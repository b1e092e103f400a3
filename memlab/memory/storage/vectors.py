"""Similarity search for the tiered store: sqlite-vec inside SQLite, or NumPy beside it.

Vectors are stored as float32 BLOBs in ordinary columns, so one database file serves both
backends and either can open a file the other wrote:

- ``sqlite-vec`` (``pip install 'memlab[vectors]'``) ranks inside SQLite. Episodes (append
  only, many) are mirrored into a ``vec0`` virtual table, whose k-nearest-neighbour query
  filters the time range in the same scan; memories (few, deleted by forgetting) are ranked
  with ``vec_distance_cosine`` over their column. Loading an extension needs a ``sqlite3``
  module built with extension loading; Python builds without it use the SQLite of
  ``pysqlite3-binary`` (same file format) when it is installed. A file written without
  sqlite-vec is mirrored when sqlite-vec next opens it.
- ``numpy`` reads every vector of a table once, keeps the matrix in memory and ranks with one
  matrix product; the store tells it each row it adds or deletes.

``auto`` picks sqlite-vec when it imports and loads, else NumPy, and logs which. Both rank by
cosine *distance* rounded to 6 decimals, ties broken by the time column then the id, so they
return the same rows in the same order (``tests/test_tiered_vectors.py``); their scores
(``1 - distance``) differ by float32 rounding only.

:class:`HashedEmbedding` is a deterministic bag-of-words embedding (no model) for tests and
benchmarks; real runs pass a model's embedding function.
"""

from __future__ import annotations

import hashlib
import importlib
import logging
import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any, Literal, cast

import numpy as np

from memlab.core.pipeline.storage import StorageError

__all__ = [
    "DISTANCE_DECIMALS",
    "HashedEmbedding",
    "NumpyIndex",
    "RowMatrix",
    "SqliteVecIndex",
    "Table",
    "VectorChoice",
    "VectorIndex",
    "connect",
    "range_clause",
    "sqlite_vec_available",
]

logger = logging.getLogger(__name__)

VectorChoice = Literal["auto", "sqlite-vec", "numpy"]
Table = Literal["memories", "episodes"]

DISTANCE_DECIMALS = 6
"""Cosine distances are rounded to this many decimals before ranking (backends agree)."""

# Per table: the vector column's table, the time column ties are broken by.
_TIME_COLUMN: dict[Table, str] = {"memories": "created_us", "episodes": "at_us"}


class VectorIndex:
    """Ranks a table's rows by cosine similarity to a query vector.

    The store calls the hooks around its writes; they do nothing unless a backend keeps state.
    """

    name = ""

    def search(
        self,
        conn: sqlite3.Connection,
        table: Table,
        query: np.ndarray,
        k: int,
        since_us: int | None = None,
        until_us: int | None = None,
    ) -> list[tuple[str, float]]:
        """The ``k`` nearest rows as ``(id, similarity)``, nearest first."""
        raise NotImplementedError

    def prepare(self, conn: sqlite3.Connection, dim: int | None) -> None:
        """The store opened (``dim``: the stored vectors' size, ``None`` before the first)."""

    def stage(
        self, conn: sqlite3.Connection, table: Table, rowid: int, time_us: int, vector: np.ndarray
    ) -> None:
        """A row is being inserted, inside the store's open transaction."""

    def added(self, table: Table, row_id: str, time_us: int, vector: np.ndarray) -> None:
        """A row was committed."""

    def removed(self, table: Table, row_ids: Sequence[str]) -> None:
        """Rows were deleted (committed)."""


def range_clause(since_us: int | None, until_us: int | None, column: str) -> tuple[str, list[int]]:
    """``" WHERE since <= column <= until"`` (bounds optional) and its parameters."""
    clauses, params = [], []
    if since_us is not None:
        clauses.append(f"{column} >= ?")
        params.append(since_us)
    if until_us is not None:
        clauses.append(f"{column} <= ?")
        params.append(until_us)
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


_EPISODE_VEC = "episode_vectors"
# vec0's k-nearest-neighbour queries take k <= 4096.
_KNN_MAX = 4096


class SqliteVecIndex(VectorIndex):
    """Ranks inside SQLite with sqlite-vec: a vec0 table for episodes, a scan for memories."""

    name = "sqlite-vec"

    def __init__(self) -> None:
        self._has_table = False

    def prepare(self, conn: sqlite3.Connection, dim: int | None) -> None:
        if dim is None:
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            self._create(conn, dim)
            # Episodes written while sqlite-vec was not loaded (append only: compare counts).
            (mirrored,) = conn.execute(f"SELECT count(*) FROM {_EPISODE_VEC}").fetchone()
            (stored,) = conn.execute("SELECT count(*) FROM episodes").fetchone()
            if mirrored != stored:
                conn.execute(f"DELETE FROM {_EPISODE_VEC}")
                conn.execute(
                    f"INSERT INTO {_EPISODE_VEC} (rowid, at_us, embedding) "
                    "SELECT n, at_us, embedding FROM episodes"
                )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _mirrored(self, conn: sqlite3.Connection) -> bool:
        """Whether the vec0 table exists (it is made with the first vector's dimension)."""
        if not self._has_table:
            sql = "SELECT 1 FROM sqlite_master WHERE name = ?"
            self._has_table = conn.execute(sql, (_EPISODE_VEC,)).fetchone() is not None
        return self._has_table

    @staticmethod
    def _create(conn: sqlite3.Connection, dim: int) -> None:
        conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {_EPISODE_VEC} USING "
            f"vec0(at_us integer, embedding float[{int(dim)}] distance_metric=cosine)"
        )

    def stage(
        self, conn: sqlite3.Connection, table: Table, rowid: int, time_us: int, vector: np.ndarray
    ) -> None:
        if table == "episodes":
            self._create(conn, vector.shape[0])
            conn.execute(
                f"INSERT INTO {_EPISODE_VEC} (rowid, at_us, embedding) VALUES (?, ?, ?)",
                (rowid, time_us, _blob(vector)),
            )

    def search(
        self,
        conn: sqlite3.Connection,
        table: Table,
        query: np.ndarray,
        k: int,
        since_us: int | None = None,
        until_us: int | None = None,
    ) -> list[tuple[str, float]]:
        if table == "episodes" and query.any() and self._mirrored(conn):
            found = self._nearest_episodes(conn, query, k, since_us, until_us)
            if found is not None:
                return found
        return self._scan(conn, table, query, k, since_us, until_us)

    def _nearest_episodes(
        self,
        conn: sqlite3.Connection,
        query: np.ndarray,
        k: int,
        since_us: int | None,
        until_us: int | None,
    ) -> list[tuple[str, float]] | None:
        """The vec0 query, or ``None`` when ties at the k-th distance may reach past it."""
        fetch = 2 * k + 16
        if fetch > _KNN_MAX:
            return None
        where, params = range_clause(since_us, until_us, "at_us")
        where = where.replace(" WHERE ", " AND ")
        rows = conn.execute(
            f"WITH knn AS (SELECT rowid, distance FROM {_EPISODE_VEC} "
            f"WHERE embedding MATCH ? AND k = ?{where}) "
            "SELECT e.id, e.at_us, knn.distance FROM knn JOIN episodes e ON e.n = knn.rowid",
            [_blob(query), fetch, *params],
        ).fetchall()
        ranked = sorted((_rounded(d), int(t), str(i)) for i, t, d in rows)
        if len(ranked) == fetch and ranked[min(k, fetch) - 1][0] == ranked[-1][0]:
            return None  # the rows not fetched may tie with the k-th: rank them all
        return [(row_id, _score(distance)) for distance, _time, row_id in ranked[:k]]

    def _scan(
        self,
        conn: sqlite3.Connection,
        table: Table,
        query: np.ndarray,
        k: int,
        since_us: int | None,
        until_us: int | None,
    ) -> list[tuple[str, float]]:
        time_column = _TIME_COLUMN[table]
        where, params = range_clause(since_us, until_us, time_column)
        # A zero vector has no cosine (NULL): it ranks as orthogonal, as in NumpyIndex.
        sql = (
            f"SELECT id, round(coalesce(vec_distance_cosine(embedding, ?), 1.0), "
            f"{DISTANCE_DECIMALS}) AS d FROM {_vector_table(table)}{where} "
            f"ORDER BY d, {time_column}, id LIMIT ?"
        )
        rows = conn.execute(sql, [_blob(query), *params, k]).fetchall()
        return [(str(row_id), _score(float(distance))) for row_id, distance in rows]


class RowMatrix:
    """Vectors by id in one float32 matrix that grows by doubling, with each row's time.

    Adding a row costs amortised O(dim), removing one marks it dead; reads take the live rows.
    """

    def __init__(self) -> None:
        self._row: dict[str, int] = {}
        self._ids: list[str] = []
        self._data = np.zeros((0, 0), dtype=np.float32)
        self._times = np.zeros(0, dtype=np.int64)
        self._norms = np.zeros(0, dtype=np.float32)
        self._alive = np.zeros(0, dtype=bool)

    def __len__(self) -> int:
        return len(self._row)

    def add(self, row_id: str, time_us: int, vector: np.ndarray) -> None:
        size = len(self._ids)
        if size == self._data.shape[0]:
            capacity = max(64, 2 * size)
            data = np.zeros((capacity, vector.shape[0]), dtype=np.float32)
            if size:
                data[:size] = self._data[:size]
            self._data = data
            self._times = np.resize(self._times, capacity)
            self._norms = np.resize(self._norms, capacity)
            self._alive = np.concatenate([self._alive[:size], np.zeros(capacity - size, bool)])
        self._data[size] = vector
        self._times[size] = time_us
        self._norms[size] = np.linalg.norm(vector)
        self._alive[size] = True
        self._row[row_id] = size
        self._ids.append(row_id)

    def remove(self, row_ids: Sequence[str]) -> None:
        for row_id in row_ids:
            row = self._row.pop(row_id, None)
            if row is not None:
                self._alive[row] = False

    def get(self, row_ids: Sequence[str]) -> np.ndarray:
        """The vectors of ``row_ids``, in that order."""
        return self._data[[self._row[row_id] for row_id in row_ids]]

    def nearest(
        self, query: np.ndarray, k: int, since_us: int | None, until_us: int | None
    ) -> list[tuple[str, float]]:
        """The ``k`` live rows in the time range nearest ``query``: ``(id, similarity)``."""
        size = len(self._ids)
        keep = self._alive[:size].copy()
        times = self._times[:size]
        if since_us is not None:
            keep &= times >= since_us
        if until_us is not None:
            keep &= times <= until_us
        candidates = np.flatnonzero(keep)
        if candidates.size == 0 or k <= 0:
            return []
        every = candidates.size == size
        matrix = self._data[:size] if every else self._data[candidates]
        # einsum, not BLAS: a matrix-vector product this size is faster on one core than
        # split across threads that wait for busy cores (20 ms against 1.5 ms measured).
        dots = np.einsum("ij,j->i", matrix, query.astype(np.float32))
        norms = (self._norms[:size] if every else self._norms[candidates]) * np.linalg.norm(query)
        sims = np.where(norms == 0.0, 0.0, dots / np.where(norms == 0.0, 1.0, norms))
        distances = np.round(1.0 - sims.astype(np.float64), DISTANCE_DECIMALS)
        if candidates.size > k:  # only the rows up to the k-th distance (ties kept) are sorted
            kth = np.partition(distances, k - 1)[k - 1]
            near = np.flatnonzero(distances <= kth)
        else:
            near = np.arange(candidates.size)
        ranked = sorted(
            (float(distances[i]), int(times[candidates[i]]), self._ids[candidates[i]])
            for i in near.tolist()
        )[:k]
        return [(row_id, _score(distance)) for distance, _time, row_id in ranked]


class NumpyIndex(VectorIndex):
    """Ranks with NumPy over a per-table copy of the vectors kept in memory."""

    name = "numpy"

    def __init__(self) -> None:
        self._tables: dict[Table, RowMatrix] = {}

    def search(
        self,
        conn: sqlite3.Connection,
        table: Table,
        query: np.ndarray,
        k: int,
        since_us: int | None = None,
        until_us: int | None = None,
    ) -> list[tuple[str, float]]:
        return self._load(conn, table).nearest(query, k, since_us, until_us)

    def added(self, table: Table, row_id: str, time_us: int, vector: np.ndarray) -> None:
        rows = self._tables.get(table)
        if rows is not None:  # not loaded yet: the first search reads it from the database
            rows.add(row_id, time_us, vector)

    def removed(self, table: Table, row_ids: Sequence[str]) -> None:
        rows = self._tables.get(table)
        if rows is not None:
            rows.remove(row_ids)

    def _load(self, conn: sqlite3.Connection, table: Table) -> RowMatrix:
        rows = self._tables.get(table)
        if rows is None:
            rows = self._tables[table] = RowMatrix()
            sql = f"SELECT id, {_TIME_COLUMN[table]}, embedding FROM {_vector_table(table)}"
            for row_id, time_us, blob in conn.execute(sql):
                rows.add(str(row_id), int(time_us), np.frombuffer(blob, dtype=np.float32))
        return rows


def _vector_table(table: Table) -> str:
    # Memories keep their vectors in a table of their own (their rows are rewritten by decay);
    # the view joins the creation time in for ranking ties.
    return "memory_vectors_view" if table == "memories" else "episodes"


def _rounded(distance: float | None) -> float:
    """A distance from SQLite rounded for ranking; no distance (a zero vector) is 1.0."""
    if distance is None or distance != distance:  # NULL or NaN
        return 1.0
    return round(float(distance), DISTANCE_DECIMALS)


def _score(distance: float) -> float:
    """Cosine similarity from a rounded cosine distance, rounded alike (1 - 0.2 is 0.8)."""
    return round(1.0 - distance, DISTANCE_DECIMALS)


def _blob(vector: np.ndarray) -> bytes:
    return np.ascontiguousarray(vector, dtype=np.float32).tobytes()


def _sqlite_module_with_extensions() -> ModuleType | None:
    """A DB-API ``sqlite3`` module that can load extensions, or ``None``."""
    if hasattr(sqlite3.Connection, "enable_load_extension"):
        return sqlite3
    try:
        return importlib.import_module("pysqlite3.dbapi2")
    except ImportError:
        return None


def _load_sqlite_vec(conn: Any) -> None:
    import sqlite_vec

    conn.enable_load_extension(True)
    try:
        sqlite_vec.load(conn)
    finally:
        conn.enable_load_extension(False)


def sqlite_vec_available() -> str | None:
    """``None`` when sqlite-vec imports and loads here, else why not (one line)."""
    module = _sqlite_module_with_extensions()
    if module is None:
        return (
            "this Python's sqlite3 cannot load extensions and pysqlite3 is not installed "
            "(pip install 'memlab[vectors]')"
        )
    try:
        conn = module.connect(":memory:")
        try:
            _load_sqlite_vec(conn)
        finally:
            conn.close()
    except ImportError:
        return "sqlite-vec is not installed (pip install 'memlab[vectors]')"
    except Exception as exc:  # the extension failed to load: any SQLite error
        return f"sqlite-vec did not load: {exc}"
    return None


def connect(path: Path | None, choice: VectorChoice) -> tuple[sqlite3.Connection, VectorIndex]:
    """Open ``path`` (``None``: in memory) with the vector backend ``choice`` resolves to.

    Raises:
        StorageError: ``choice`` is ``sqlite-vec`` and sqlite-vec cannot be loaded here.
    """
    if choice not in ("auto", "sqlite-vec", "numpy"):
        raise StorageError(f"vectors must be 'auto', 'sqlite-vec' or 'numpy', got {choice!r}")
    target = ":memory:" if path is None else str(path)
    if choice != "numpy":
        problem = sqlite_vec_available()
        if problem is None:
            module = cast(ModuleType, _sqlite_module_with_extensions())
            conn = cast(
                sqlite3.Connection,
                module.connect(target, isolation_level=None, check_same_thread=False),
            )
            _load_sqlite_vec(conn)
            logger.info("tiered store %s: vectors by sqlite-vec", target)
            return conn, SqliteVecIndex()
        if choice == "sqlite-vec":
            raise StorageError(f"vectors='sqlite-vec' is not available: {problem}")
        logger.info("tiered store %s: vectors by NumPy (%s)", target, problem)
    else:
        logger.info("tiered store %s: vectors by NumPy", target)
    # One connection for every thread: the store serialises its use with a lock.
    return sqlite3.connect(target, isolation_level=None, check_same_thread=False), NumpyIndex()


_TOKEN = re.compile(r"\w+")


@lru_cache(maxsize=65536)
def _word_vector(word: str, dim: int) -> np.ndarray:
    # SHAKE-256 gives as many bytes as asked, the same on every machine and NumPy version.
    raw = np.frombuffer(hashlib.shake_256(word.encode()).digest(dim), dtype=np.int8)
    return raw.astype(np.float32) / 128.0


@dataclass(frozen=True)
class HashedEmbedding:
    """A deterministic bag-of-words embedding: the sum of a pseudo-random vector per word.

    A test and benchmark instrument (no model, the same vectors on every machine): texts
    sharing words are similar, paraphrases are not; word order and case do not matter, as in
    an averaged word-vector model such as wordllama. Empty texts map to the zero vector.
    """

    dim: int = 64

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in _TOKEN.findall(text.lower()):
                out[row] += _word_vector(token, self.dim)
        return out
