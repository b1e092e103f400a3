"""The records of the tiered memory: semantic memories, episodes, forgetting rules and events.

:mod:`memlab.memory.storage.store` keeps them in SQLite and :mod:`memlab.memory.storage.forgetting`
decides what to forget; both share these frozen types. Every time is a timezone-aware UTC datetime
on the replay's virtual clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from memlab.core.jsondoc.document import utc_iso
from memlab.core.pipeline.storage import StorageError

__all__ = [
    "CorruptStoreError",
    "Episode",
    "EventKind",
    "ForgettingEvent",
    "ForgettingRules",
    "MemoryItem",
    "MemoryKind",
]

MemoryKind = Literal["fact", "summary"]
EventKind = Literal["decayed", "merged", "compressed"]


class CorruptStoreError(StorageError):
    """The file is not a readable tiered memory database; it was left untouched.

    Attributes:
        path: The database file.
        detail: What SQLite (or the schema check) reported.
    """

    def __init__(self, path: Path, detail: str) -> None:
        self.detail = detail
        super().__init__(
            f"tiered memory database {path} is unreadable ({detail}); it was left as it is. "
            "Move it away (a new run starts an empty database) or restore it from a copy.",
            path=path,
        )


@dataclass(frozen=True)
class MemoryItem:
    """One long-term semantic memory.

    Attributes:
        id: Unique within its store.
        content: The remembered text.
        category: The fact category it was written with (a summary takes its items' commonest).
        importance: 0..1; decays while the item is not accessed.
        created_at: When it was written (virtual clock, UTC).
        last_accessed: When recall last returned it (``created_at`` until then).
        source: The thread id that produced it, or ``"compressed"`` for a summary.
        kind: ``fact`` or ``summary`` (written by compression).
    """

    id: str
    content: str
    category: str
    importance: float
    created_at: datetime
    last_accessed: datetime
    source: str
    kind: MemoryKind = "fact"


@dataclass(frozen=True)
class Episode:
    """One recorded interaction: what came in, what went out, how it ended."""

    id: str
    at: datetime
    thread_id: str
    input: str
    output: str
    outcome: str


@dataclass(frozen=True)
class ForgettingRules:
    """The thresholds of forgetting (the seed's values by default)."""

    decay_per_day: float = 0.05
    """Share of importance lost per idle day: ``importance *= (1 - decay) ** days``."""
    delete_below: float = 0.1
    """An item whose importance falls below this is deleted."""
    merge_above: float = 0.9
    """Cosine similarity above which two items merge (the longer content stays)."""
    compress_after_days: float = 30
    """Age in days after which an item may be compressed into a summary."""
    compress_min: int = 10
    """How many such items there must be before they are compressed."""


@dataclass(frozen=True)
class ForgettingEvent:
    """One thing forgetting did: an item decayed away, a pair merged, old items compressed.

    Attributes:
        kind: ``decayed`` (one item deleted below the threshold), ``merged`` (one item dropped
            for a near-duplicate) or ``compressed`` (items replaced by one summary).
        at: The virtual time of the forgetting pass.
        removed: The items that left the store, as they were when they left.
        kept: ``merged``: the survivor; ``compressed``: the new summary item; else ``None``.
    """

    kind: EventKind
    at: datetime
    removed: tuple[MemoryItem, ...]
    kept: MemoryItem | None

    def to_record(self) -> dict[str, Any]:
        """The event as JSON: kind, at (ISO), removed ``[{id, content}]``, kept or ``None``."""
        kept = None if self.kept is None else {"id": self.kept.id, "content": self.kept.content}
        return {
            "kind": self.kind,
            "at": utc_iso(self.at),
            "removed": [{"id": item.id, "content": item.content} for item in self.removed],
            "kept": kept,
        }
