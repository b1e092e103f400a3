"""Similarity search for the tiered store: sqlite-vec inside SQLite, or NumPy beside it.

Vectors are stored as float32 BLOBs in ordinary columns, so one database file serves both
backends and either can open a file the other wrote:

- ``sqlite-vec`` (``pip install 'memlab[vectors]'``) ranks rows inside SQLite with
  ``vec_distance_cosine`` in the same query that filters them (time range, table). Loading an
  extension needs a ``sqlite3`` module built with extension loading; Python builds without it
  use the SQLite of ``pysqlite3-binary`` (same file format) when it is installed.
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
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Literal, Protocol, cast

import numpy as np

from memlab.memory.items import StoreError

__all__ = [
    "DISTANCE_DECIMALS",
    "HashedEmbedding",
    "NumpyIndex",
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


class VectorIndex(Protocol):
    """Ranks a table's rows by cosine similarity to a query vector."""

    name: str

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
        ...

    def added(self, table: Table, row_id: str, time_us: int, vector: np.ndarray) -> None:
        """A row was committed."""
        ...

    def removed(self, table: Table, row_ids: Sequence[str]) -> None:
        """Rows were deleted (committed)."""
        ...


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


class SqliteVecIndex:
    """Ranks inside SQLite with sqlite-vec's ``vec_distance_cosine`` (no state in Python)."""

    name = "sqlite-vec"

    def search(
        self,
        conn: sqlite3.Connection,
        table: Table,
        query: np.ndarray,
        k: int,
        since_us: int | None = None,
        until_us: int | None = None,
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

    def added(self, table: Table, row_id: str, time_us: int, vector: np.ndarray) -> None:
        return None

    def removed(self, table: Table, row_ids: Sequence[str]) -> None:
        return None


@dataclass
class _Rows:
    ids: list[str] = field(default_factory=list)
    times: list[int] = field(default_factory=list)
    vectors: list[np.ndarray] = field(default_factory=list)
    matrix: np.ndarray | None = None  # unit rows, rebuilt after a change


class NumpyIndex:
    """Ranks with NumPy over a per-table copy of the vectors kept in memory."""

    name = "numpy"

    def __init__(self) -> None:
        self._tables: dict[Table, _Rows] = {}

    def search(
        self,
        conn: sqlite3.Connection,
        table: Table,
        query: np.ndarray,
        k: int,
        since_us: int | None = None,
        until_us: int | None = None,
    ) -> list[tuple[str, float]]:
        rows = self._load(conn, table)
        if not rows.ids or k <= 0:
            return []
        if rows.matrix is None:
            rows.matrix = _unit_rows(np.vstack(rows.vectors))
        times = np.asarray(rows.times, dtype=np.int64)
        keep = np.ones(len(rows.ids), dtype=bool)
        if since_us is not None:
            keep &= times >= since_us
        if until_us is not None:
            keep &= times <= until_us
        (candidates,) = np.nonzero(keep)
        if candidates.size == 0:
            return []
        unit_query = _unit_rows(query.reshape(1, -1).astype(np.float32))[0]
        sims = rows.matrix[candidates] @ unit_query
        distances = np.round(1.0 - sims.astype(np.float64), DISTANCE_DECIMALS)
        if candidates.size > k:  # only the rows up to the k-th distance (ties kept) are sorted
            kth = np.partition(distances, k - 1)[k - 1]
            (near,) = np.nonzero(distances <= kth)
        else:
            near = np.arange(candidates.size)
        ranked = sorted(
            (float(distances[i]), rows.times[candidates[i]], rows.ids[candidates[i]])
            for i in near.tolist()
        )[:k]
        return [(row_id, _score(distance)) for distance, _time, row_id in ranked]

    def added(self, table: Table, row_id: str, time_us: int, vector: np.ndarray) -> None:
        rows = self._tables.get(table)
        if rows is None:  # not loaded yet: the first search reads it from the database
            return
        rows.ids.append(row_id)
        rows.times.append(time_us)
        rows.vectors.append(vector)
        rows.matrix = None

    def removed(self, table: Table, row_ids: Sequence[str]) -> None:
        rows = self._tables.get(table)
        gone = set(row_ids)
        if rows is None or not gone:
            return
        kept = [i for i, row_id in enumerate(rows.ids) if row_id not in gone]
        rows.ids = [rows.ids[i] for i in kept]
        rows.times = [rows.times[i] for i in kept]
        rows.vectors = [rows.vectors[i] for i in kept]
        rows.matrix = None

    def _load(self, conn: sqlite3.Connection, table: Table) -> _Rows:
        rows = self._tables.get(table)
        if rows is None:
            rows = _Rows()
            sql = f"SELECT id, {_TIME_COLUMN[table]}, embedding FROM {_vector_table(table)}"
            for row_id, time_us, blob in conn.execute(sql):
                rows.ids.append(str(row_id))
                rows.times.append(int(time_us))
                rows.vectors.append(np.frombuffer(blob, dtype=np.float32))
            self._tables[table] = rows
        return rows


def _vector_table(table: Table) -> str:
    # Memories keep their vectors in a table of their own (their rows are rewritten by decay);
    # the view joins the creation time in for ranking ties.
    return "memory_vectors_view" if table == "memories" else "episodes"


def _score(distance: float) -> float:
    """Cosine similarity from a rounded cosine distance, rounded alike (1 - 0.2 is 0.8)."""
    return round(1.0 - distance, DISTANCE_DECIMALS)


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return cast(np.ndarray, matrix / np.where(norms == 0.0, 1.0, norms))


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
        StoreError: ``choice`` is ``sqlite-vec`` and sqlite-vec cannot be loaded here.
    """
    if choice not in ("auto", "sqlite-vec", "numpy"):
        raise StoreError(f"vectors must be 'auto', 'sqlite-vec' or 'numpy', got {choice!r}")
    target = ":memory:" if path is None else str(path)
    if choice != "numpy":
        problem = sqlite_vec_available()
        if problem is None:
            module = cast(ModuleType, _sqlite_module_with_extensions())
            conn = cast(sqlite3.Connection, module.connect(target, isolation_level=None))
            _load_sqlite_vec(conn)
            logger.info("tiered store %s: vectors by sqlite-vec", target)
            return conn, SqliteVecIndex()
        if choice == "sqlite-vec":
            raise StoreError(f"vectors='sqlite-vec' is not available: {problem}")
        logger.info("tiered store %s: vectors by NumPy (%s)", target, problem)
    else:
        logger.info("tiered store %s: vectors by NumPy", target)
    return sqlite3.connect(target, isolation_level=None), NumpyIndex()


_TOKEN = re.compile(r"\w+")


@dataclass(frozen=True)
class HashedEmbedding:
    """A deterministic bag-of-words embedding: each lower-cased word adds ±1 to a hashed slot.

    A test and benchmark instrument (no model, same vectors on every machine): texts sharing
    words are similar, paraphrases are not. Empty texts map to the zero vector.
    """

    dim: int = 64

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in _TOKEN.findall(text.lower()):
                digest = hashlib.blake2b(token.encode(), digest_size=8).digest()
                value = int.from_bytes(digest, "little")
                out[row, value % self.dim] += 1.0 if (value >> 32) & 1 else -1.0
        return out
