"""The tiered memory's store: one SQLite database per lane and owner.

Semantic memories, episodes and session summaries live in one SQLite file in WAL mode with
``synchronous=FULL``: every write method is one transaction, committed and synced before it
returns, so a process killed at any point leaves a database that opens, passes
``PRAGMA integrity_check`` and holds every write that returned (``tests/test_tiered_store.py``
kills a writer with SIGKILL). A file that is not such a database raises
:class:`CorruptStoreError` naming it, and is never written to.

Times are stored as integer microseconds since the epoch (UTC), exact and ordered. Vectors are
float32 BLOBs; similarity search goes through :mod:`memlab.memory.storage.vectors` (sqlite-vec or
NumPy). Forgetting runs on the replay's virtual clock: :meth:`TieredStore.forget` applies the
pure rules of :mod:`memlab.memory.storage.forgetting` (decay and delete, then merge) in one
transaction.

A store assumes it is the only writer of its file while open (one lane's owner replays in one
place); it may be used from several threads.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from memlab.core.jsondoc.document import utc_iso
from memlab.core.pipeline.storage import StorageError
from memlab.memory.storage.database import (
    EPISODE_COLUMNS,
    MEMORY_COLUMNS,
    SCHEMA,
    Database,
    episode_of,
    from_us,
    item_of,
    marks,
    time_range,
    to_us,
)
from memlab.memory.storage.forgetting import (
    compression_candidates,
    decayed_importance,
    idle_days,
    merge_plan,
)
from memlab.memory.storage.items import (
    CorruptStoreError,
    Episode,
    ForgettingEvent,
    ForgettingRules,
    MemoryItem,
)
from memlab.memory.storage.vectors import RowMatrix, Table, VectorChoice

__all__ = [
    "SCHEMA",
    "CorruptStoreError",
    "Embed",
    "Episode",
    "ForgettingEvent",
    "ForgettingRules",
    "MemoryItem",
    "TieredStore",
]

Embed = Callable[[Sequence[str]], np.ndarray]
"""Texts -> an array of shape ``(len(texts), dim)``; the same ``dim`` for a store's life."""


class TieredStore:
    """Semantic memories, episodes and session summaries of one lane's owner.

    Args:
        path: The database file (created with its folder when missing); ``None``: in memory.
        embed: Turns texts into vectors (one row each); called once per written text and query.
        vectors: ``auto`` (sqlite-vec when it loads, else NumPy), ``sqlite-vec`` or ``numpy``.
        ids: Issues ids for new memories and episodes (deterministic when seeded, e.g.
            :class:`memlab.core.SeededFactIds`); default random ``mem_``/``ep_`` ids.

    Raises:
        CorruptStoreError: ``path`` is not a readable tiered memory database (left untouched).
        StorageError: ``vectors="sqlite-vec"`` where sqlite-vec cannot be loaded.
    """

    def __init__(
        self,
        path: Path | None,
        *,
        embed: Embed,
        vectors: VectorChoice = "auto",
        ids: Callable[[], str] | None = None,
    ) -> None:
        self.path = None if path is None else Path(path)
        self._embed = embed
        self._ids = ids
        self._db = Database(self.path, vectors)
        self._memory_vectors: RowMatrix | None = None

    @property
    def vectors(self) -> str:
        """The vector backend in use: ``sqlite-vec`` or ``numpy``."""
        return self._db.index.name

    # ------------------------------------------------------------------ vectors

    def _vectors_of(self, texts: Sequence[str]) -> np.ndarray:
        matrix = np.asarray(self._embed(texts), dtype=np.float32)
        if matrix.ndim != 2 or matrix.shape[0] != len(texts) or matrix.shape[1] == 0:
            raise StorageError(
                f"embed returned an array of shape {matrix.shape} for {len(texts)} text(s); "
                "it must return one non-empty row per text"
            )
        if not np.isfinite(matrix).all():
            raise StorageError("embed returned NaN or infinite values")
        stored = self._db.dim
        if stored is not None and stored != matrix.shape[1]:
            raise StorageError(
                f"embed returned {matrix.shape[1]}-dimensional vectors but {self.path} holds "
                f"{stored}-dimensional ones; open it with the embedding it was written with"
            )
        return np.ascontiguousarray(matrix)

    def _memory_vector_cache(self) -> RowMatrix:
        """The memories' vectors, read once (called under the database lock)."""
        if self._memory_vectors is None:
            self._memory_vectors = RowMatrix()
            for row_id, blob in self._db.read("SELECT id, embedding FROM memory_vectors"):
                self._memory_vectors.add(str(row_id), 0, np.frombuffer(blob, dtype=np.float32))
        return self._memory_vectors

    def _new_id(self, prefix: str) -> str:
        return self._ids() if self._ids is not None else f"{prefix}{uuid.uuid4().hex}"

    # ------------------------------------------------------------------ writes

    def add_memory(
        self, content: str, *, category: str, importance: float, at: datetime, source: str
    ) -> MemoryItem:
        """Write one semantic memory (importance 0..1) created and last accessed at ``at``."""
        if not 0.0 <= importance <= 1.0:  # also refuses NaN
            raise StorageError(f"importance must be between 0 and 1, got {importance!r}")
        item = MemoryItem(
            id=self._new_id("mem_"),
            content=content,
            category=category,
            importance=float(importance),
            created_at=at,
            last_accessed=at,
            source=source,
        )
        vector = self._vectors_of([content])[0]
        with self._db.write() as conn:
            self._insert_memory(conn, item, vector)
        self._added_memory(item, vector)
        return item

    def _insert_memory(
        self, conn: sqlite3.Connection, item: MemoryItem, vector: np.ndarray
    ) -> None:
        created = to_us(item.created_at)
        conn.execute(
            f"INSERT INTO memories ({MEMORY_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0)",
            (item.id, item.content, item.category, item.importance, created,
             to_us(item.last_accessed), item.source, item.kind, created),
        )  # fmt: skip
        conn.execute("INSERT INTO memory_vectors VALUES (?, ?)", (item.id, vector.tobytes()))
        self._db.remember_dim(conn, vector.shape[0])

    def _added_memory(self, item: MemoryItem, vector: np.ndarray) -> None:
        with self._db.lock:
            if self._memory_vectors is not None:
                self._memory_vectors.add(item.id, 0, vector)
            self._db.index.added("memories", item.id, to_us(item.created_at), vector)

    def _removed_memories(self, ids: Sequence[str]) -> None:
        with self._db.lock:
            if self._memory_vectors is not None:
                self._memory_vectors.remove(ids)
            self._db.index.removed("memories", ids)

    def add_episode(
        self, *, at: datetime, thread_id: str, input: str, output: str, outcome: str
    ) -> Episode:
        """Record one interaction; its input is embedded for similarity recall."""
        episode = Episode(
            id=self._new_id("ep_"),
            at=at,
            thread_id=thread_id,
            input=input,
            output=output,
            outcome=outcome,
        )
        vector = self._vectors_of([input])[0]
        at_us = to_us(at)
        with self._db.write() as conn:
            cursor = conn.execute(
                f"INSERT INTO episodes ({EPISODE_COLUMNS}, embedding) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (episode.id, at_us, thread_id, input, output, outcome, vector.tobytes()),
            )
            self._db.remember_dim(conn, vector.shape[0])
            self._db.index.stage(conn, "episodes", int(cursor.lastrowid or 0), at_us, vector)
        with self._db.lock:
            self._db.index.added("episodes", episode.id, at_us, vector)
        return episode

    def set_session_summary(
        self, thread_id: str, summary: str, key_points: Sequence[str], at: datetime
    ) -> None:
        """Set (replace) the summary and key points of ``thread_id``, written at ``at``."""
        points = json.dumps([str(point) for point in key_points], ensure_ascii=False)
        with self._db.write() as conn:
            (seq,) = conn.execute(
                "SELECT coalesce(max(seq), 0) + 1 FROM session_summaries"
            ).fetchone()
            conn.execute(
                "INSERT OR REPLACE INTO session_summaries VALUES (?, ?, ?, ?, ?)",
                (thread_id, summary, points, to_us(at), seq),
            )

    # ------------------------------------------------------------------ reads

    def memories(self) -> list[MemoryItem]:
        """Every semantic memory, ordered by creation time then id."""
        rows = self._db.read(f"SELECT {MEMORY_COLUMNS} FROM memories ORDER BY created_us, id")
        return [item_of(row) for row in rows]

    def episodes(
        self, *, since: datetime | None = None, until: datetime | None = None
    ) -> list[Episode]:
        """Episodes with ``since <= at <= until`` (either bound optional), oldest first."""
        where, params = time_range(since, until)
        rows = self._db.read(
            f"SELECT {EPISODE_COLUMNS} FROM episodes{where} ORDER BY at_us, id", params
        )
        return [episode_of(row) for row in rows]

    def session_summary(self, thread_id: str | None = None) -> tuple[str, list[str]] | None:
        """``(summary, key points)`` of ``thread_id``, or of the latest written; else ``None``."""
        select = "SELECT summary, key_points FROM session_summaries"
        if thread_id is None:
            rows = self._db.read(f"{select} ORDER BY at_us DESC, seq DESC LIMIT 1")
        else:
            rows = self._db.read(f"{select} WHERE thread_id = ?", (thread_id,))
        if not rows:
            return None
        return str(rows[0][0]), [str(point) for point in json.loads(rows[0][1])]

    def recall_memories(
        self, query: str, k: int, *, at: datetime
    ) -> list[tuple[MemoryItem, float]]:
        """The ``k`` memories most similar to ``query`` with their cosine, nearest first.

        Recall is an access: the returned items' ``last_accessed`` becomes ``at`` (committed
        before returning), which restarts their decay.
        """
        if k <= 0:
            return []
        found = self._search("memories", query, k)
        if not found:
            return []
        at_us = to_us(at)
        ids = [row_id for row_id, _score in found]
        with self._db.write() as conn:
            conn.executemany(
                "UPDATE memories SET accessed_us = max(accessed_us, ?) WHERE id = ?",
                [(at_us, row_id) for row_id in ids],
            )
            rows = conn.execute(
                f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id IN ({marks(ids)})", ids
            ).fetchall()
        items = {row[0]: item_of(row) for row in rows}
        return [(items[row_id], score) for row_id, score in found]

    def recall_episodes(
        self,
        query: str | None,
        k: int,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> list[tuple[Episode, float]]:
        """Episodes in ``[since, until]``: the ``k`` most similar to ``query``, nearest first.

        Without a query: the ``k`` latest episodes in the range, newest first, each with score
        ``0.0``.
        """
        if k <= 0:
            return []
        if query is None:
            where, params = time_range(since, until)
            rows = self._db.read(
                f"SELECT {EPISODE_COLUMNS} FROM episodes{where} "
                "ORDER BY at_us DESC, id DESC LIMIT ?",
                [*params, k],
            )
            return [(episode_of(row), 0.0) for row in rows]
        since_us = None if since is None else to_us(since)
        until_us = None if until is None else to_us(until)
        found = self._search("episodes", query, k, since_us, until_us)
        if not found:
            return []
        ids = [row_id for row_id, _score in found]
        rows = self._db.read(
            f"SELECT {EPISODE_COLUMNS} FROM episodes WHERE id IN ({marks(ids)})", ids
        )
        episodes = {row[0]: episode_of(row) for row in rows}
        return [(episodes[row_id], score) for row_id, score in found]

    def _search(
        self,
        table: Table,
        query: str,
        k: int,
        since_us: int | None = None,
        until_us: int | None = None,
    ) -> list[tuple[str, float]]:
        vector = self._vectors_of([query])[0]
        return self._db.search(table, vector, k, since_us, until_us)

    # ------------------------------------------------------------------ forgetting

    def forget(self, at: datetime, rules: ForgettingRules) -> list[ForgettingEvent]:
        """Decay every idle memory to ``at``, delete those below the threshold, then merge.

        One transaction. Events: one ``decayed`` per deleted item (as it was, decayed), then one
        ``merged`` per dropped near-duplicate (most similar pair first).
        """
        at_us = to_us(at)
        with self._db.write() as conn:
            rows = conn.execute(
                "SELECT id, importance, accessed_us, decayed_us, merge_checked, length(content) "
                "FROM memories ORDER BY created_us, id"
            ).fetchall()
            if not rows:
                return []
            ids, importance, accessed, decayed, checked, lengths = (
                list(c) for c in zip(*rows, strict=True)
            )
            days = idle_days(np.array(accessed), np.array(decayed), at_us)
            current = decayed_importance(np.array(importance), days, rules)
            gone = current < rules.delete_below
            idle = np.flatnonzero((days > 0) & ~gone).tolist()
            conn.executemany(
                "UPDATE memories SET importance = ?, decayed_us = ? WHERE id = ?",
                [(float(current[i]), at_us, ids[i]) for i in idle],
            )
            deleted = np.flatnonzero(gone).tolist()
            events = [
                ForgettingEvent(
                    kind="decayed",
                    at=at,
                    removed=(replace(item, importance=float(current[i])),),
                    kept=None,
                )
                for i, item in zip(
                    deleted, self._items(conn, [ids[i] for i in deleted]), strict=True
                )
            ]
            kept = np.flatnonzero(~gone).tolist()
            events += self._merge(
                conn,
                [ids[i] for i in kept],
                [lengths[i] for i in kept],
                [not checked[i] for i in kept],
                at,
                rules,
            )
            removed = [item.id for event in events for item in event.removed]
            conn.executemany("DELETE FROM memories WHERE id = ?", [(i,) for i in removed])
            conn.executemany("DELETE FROM memory_vectors WHERE id = ?", [(i,) for i in removed])
            conn.execute("UPDATE memories SET merge_checked = 1 WHERE merge_checked = 0")
            conn.execute(
                "INSERT OR REPLACE INTO meta VALUES ('merge_checked_above', ?)",
                (repr(rules.merge_above),),
            )
        self._removed_memories(removed)
        return events

    def _items(self, conn: sqlite3.Connection, ids: Sequence[str]) -> list[MemoryItem]:
        """The memories ``ids`` as stored now (inside the open transaction), in that order."""
        if not ids:
            return []
        rows = conn.execute(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id IN ({marks(ids)})", list(ids)
        ).fetchall()
        items = {row[0]: item_of(row) for row in rows}
        return [items[item_id] for item_id in ids]

    def _merge(
        self,
        conn: sqlite3.Connection,
        ids: list[str],
        lengths: list[int],
        fresh: list[bool],
        at: datetime,
        rules: ForgettingRules,
    ) -> list[ForgettingEvent]:
        if len(ids) < 2:
            return []
        checked = conn.execute(
            "SELECT value FROM meta WHERE key = 'merge_checked_above'"
        ).fetchone()
        same_threshold = checked is not None and checked[0] == repr(rules.merge_above)
        if same_threshold and not any(fresh):
            return []
        vectors = self._memory_vector_cache().get(ids)
        steps = merge_plan(lengths, vectors, rules, fresh if same_threshold else None)
        involved = sorted({ids[i] for step in steps for i in (step.kept, step.removed)})
        items = dict(zip(involved, self._items(conn, involved), strict=True))
        return [
            ForgettingEvent(
                kind="merged",
                at=at,
                removed=(items[ids[step.removed]],),
                kept=items[ids[step.kept]],
            )
            for step in steps
        ]

    def compression_candidates(self, at: datetime, rules: ForgettingRules) -> list[MemoryItem]:
        """Memories older than ``compress_after_days``, or ``[]`` while fewer than the minimum."""
        return compression_candidates(self.memories(), at, rules)

    def replace_with_summary(
        self, items: Sequence[MemoryItem], summary: str, at: datetime
    ) -> ForgettingEvent:
        """Replace ``items`` by one ``summary`` memory written at ``at`` (one transaction).

        The summary takes the items' highest importance and commonest category (ties: the
        first in alphabetical order), ``source="compressed"`` and ``kind="summary"``.

        Raises:
            StorageError: ``items`` is empty or names a memory the store does not hold.
        """
        ids = list(dict.fromkeys(item.id for item in items))
        if not ids:
            raise StorageError("replace_with_summary needs at least one memory to replace")
        vector = self._vectors_of([summary])[0]
        with self._db.write() as conn:
            rows = conn.execute(
                f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id IN ({marks(ids)}) "
                "ORDER BY created_us, id",
                ids,
            ).fetchall()
            removed = tuple(item_of(row) for row in rows)
            missing = sorted(set(ids) - {item.id for item in removed})
            if missing:
                raise StorageError(
                    f"replace_with_summary: {len(missing)} memory id(s) not in the store, "
                    f"e.g. {missing[0]!r} (forgotten since the candidates were read?)"
                )
            categories = Counter(item.category for item in removed)
            top = max(categories.values())
            kept = MemoryItem(
                id=self._new_id("mem_"),
                content=summary,
                category=min(c for c, n in categories.items() if n == top),
                importance=max(item.importance for item in removed),
                created_at=at,
                last_accessed=at,
                source="compressed",
                kind="summary",
            )
            conn.executemany("DELETE FROM memories WHERE id = ?", [(i,) for i in ids])
            conn.executemany("DELETE FROM memory_vectors WHERE id = ?", [(i,) for i in ids])
            self._insert_memory(conn, kept, vector)
        self._removed_memories(ids)
        self._added_memory(kept, vector)
        return ForgettingEvent(kind="compressed", at=at, removed=removed, kept=kept)

    # ------------------------------------------------------------------ whole store

    def snapshot(self) -> dict[str, Any]:
        """The store as JSON (no vectors): memories, episodes, session summaries, sorted."""
        summaries = self._db.read(
            "SELECT thread_id, summary, key_points, at_us FROM session_summaries "
            "ORDER BY at_us, seq"
        )
        return {
            "schema": SCHEMA,
            "memories": [
                {
                    "id": item.id,
                    "content": item.content,
                    "category": item.category,
                    "importance": item.importance,
                    "created_at": utc_iso(item.created_at),
                    "last_accessed": utc_iso(item.last_accessed),
                    "source": item.source,
                    "kind": item.kind,
                }
                for item in self.memories()
            ],
            "episodes": [
                {**vars(episode), "at": utc_iso(episode.at)} for episode in self.episodes()
            ],
            "session_summaries": [
                {
                    "thread_id": thread_id,
                    "summary": summary,
                    "key_points": json.loads(points),
                    "at": utc_iso(from_us(at_us)),
                }
                for thread_id, summary, points, at_us in summaries
            ],
        }

    def close(self) -> None:
        """Close the database (checkpointing the WAL into the file)."""
        self._db.close()

    def __enter__(self) -> TieredStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"TieredStore({str(self.path or ':memory:')!r}, vectors={self.vectors!r})"
