"""The interface between a replay and a memory design, and DeerFlow's design behind it.

A replay (:mod:`memlab.sweeps.replay`) drives a :class:`MemoryStrategy` on its virtual clock:

- :meth:`~MemoryStrategy.process`: one update the queue hands over (a thread's filtered
  messages so far);
- :meth:`~MemoryStrategy.end_session`: the session's conversation is over (its context
  window closes);
- :meth:`~MemoryStrategy.advance`: virtual time has passed (forgetting runs);
- :meth:`~MemoryStrategy.snapshot`: the memory as a :class:`MemoryDocument`, the view every
  write-side metric, the injection audit and memory QA read;
- :meth:`~MemoryStrategy.close`: release what the strategy holds.

Each step returns a :class:`Step`: the call records it made (one row each in the call
table), whether memory was saved, and the forgetting events it caused. Every update the
replay hands over (``process``, and ``end_session`` when it returns a step) yields exactly one
*primary* record (:func:`is_primary`; a composite design's session end answers one update per
part that folds, :attr:`Step.updates`); further records are the design's other LLM calls,
marked by their ``call`` kind. A replay whose primary records are fewer than its updates
lost one and is not finished.

:class:`DeerFlowStrategy` is the pipeline as it always ran: one :class:`MemoryUpdater` call per
update into an in-memory store, nothing at session end, no forgetting. Its records carry no
``call`` key, so they are byte for byte those of replays recorded before strategies existed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from memlab.core.jsondoc.document import MemoryDocument
from memlab.core.pipeline.queue import ConversationContext
from memlab.core.pipeline.storage import InMemoryStorage
from memlab.core.pipeline.updater import MemoryUpdater

__all__ = [
    "PRIMARY_CALLS",
    "DeerFlowStrategy",
    "MemoryStrategy",
    "Step",
    "asked_model",
    "call_kind",
    "is_primary",
    "is_queued_update",
]

PRIMARY_CALLS = frozenset({"update", "summary", "procedures"})
"""Call kinds of the one record each handed-over update yields: DeerFlow's ``update`` (its
records name no kind), the tiered memory's working-memory ``summary`` step and the
procedural memory's session-end ``procedures`` call."""


def call_kind(record: Mapping[str, Any]) -> str:
    """The kind of LLM call a record is (``update`` when it names none: DeerFlow's)."""
    kind = record.get("call")
    return kind if isinstance(kind, str) else "update"


def is_primary(record: Mapping[str, Any]) -> bool:
    """True for the one record of a handed-over update (see :data:`PRIMARY_CALLS`)."""
    return call_kind(record) in PRIMARY_CALLS


def is_queued_update(record: Mapping[str, Any]) -> bool:
    """True for the primary record of an update the queue handed over, the unit the debounce
    saves: not a session end's fold, which the replay marks ``session_end``."""
    return is_primary(record) and record.get("session_end") is not True


def asked_model(skipped: object) -> bool:
    """True when a record with this ``skipped`` value asked a model (live, cached or
    simulated): ``skipped`` names why no call was made (a DeerFlow update with nothing to
    send, a tiered update kept in working memory); a call table reads a missing one as NaN."""
    return not isinstance(skipped, str)


@dataclass
class Step:
    """What one step of a strategy did.

    Attributes:
        records: Call records, the primary one (if any) first.
        saved: True when the memory changed and was saved.
        forgetting: Forgetting events (JSON records: kind, at, removed, kept).
        updates: The updates the step answers, one primary record each: 1, except a
            composite design's session end, where each part that folds answers one (the
            procedural design over tiered facts: the tiered fold and the procedures call).
    """

    records: list[dict[str, Any]] = field(default_factory=list)
    saved: bool = False
    forgetting: list[dict[str, Any]] = field(default_factory=list)
    updates: int = 1


class MemoryStrategy(Protocol):
    """A memory design a replay drives (see the module docstring)."""

    @property
    def primary_call(self) -> str | None:
        """The ``call`` kind of this design's primary records (``None``: no key, DeerFlow)."""

    def process(self, context: ConversationContext) -> Step:
        """Handle one update the queue hands over; never raises for an LLM failure."""

    def end_session(self, thread_id: str) -> Step | None:
        """The conversation ``thread_id`` is over; ``None`` when there is nothing to do."""

    def advance(self, now: datetime) -> Step | None:
        """Virtual time is now ``now``; ``None`` when time changes nothing."""

    def snapshot(self) -> MemoryDocument:
        """The memory as a document that no later step changes; callers only read it."""

    def close(self) -> None:
        """Release what the strategy holds (files, connections)."""


class DeerFlowStrategy:
    """DeerFlow's design: one LLM update per handed-over update into one document.

    Args:
        updater: The lane's updater (:func:`memlab.sweeps.plan.build_updater`).
        storage: The store the updater writes (the replay's in-memory store).
    """

    primary_call: str | None = None

    def __init__(self, updater: MemoryUpdater, storage: InMemoryStorage) -> None:
        self.updater = updater
        self.storage = storage

    def process(self, context: ConversationContext) -> Step:
        result = self.updater.run_update(context.messages, context.thread_id)
        return Step([result.to_record()], result.saved)

    def end_session(self, thread_id: str) -> Step | None:
        return None  # the document is updated per queued update only

    def advance(self, now: datetime) -> Step | None:
        return None  # DeerFlow's memory does not forget

    def snapshot(self) -> MemoryDocument:
        # The store's own document, not a copy: it keeps a new one at every update.
        return self.storage.view()

    def close(self) -> None:
        return None
