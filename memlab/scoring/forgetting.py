"""Forgetting in numbers: a strategy's forgetting events by kind, and the gold facts each kind
lost (forgetting regret).

A memory strategy that forgets records each event in its replay (``forgetting`` in the owner
record): ``kind`` (``decayed``, ``merged`` or ``compressed``), ``at`` (virtual time),
``removed`` (``[{id, content}]``), ``kept`` (the merge's survivor or the compression's summary,
``{id, content}`` or ``None``) and ``session_index``.

*Forgetting regret* of a kind: the active gold facts an event of that kind lost. An event
loses gold fact ``g`` when a memory it removed states ``g`` and no memory left after it does;
"states" is the run's matcher, through :func:`memlab.scoring.operations.lost_golds` (the
definition eviction regret uses). The memory left after an event is the snapshot at the end
of its session (what the replay records; as for eviction regret, a fact learned again later
in the same session is not lost), the memories later events of that session removed, and the
event's ``kept`` memory. Only gold facts active at the event's session count (a retracted
fact is not a loss).

A lane whose strategy does not forget has no records: its counts are ``None`` (shown as not
applicable), never 0.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from memlab.datasets.models import Owner
from memlab.scoring.operations import lost_golds

__all__ = ["FORGETTING_COUNTS", "FORGETTING_KINDS", "forgetting_counts"]

FORGETTING_KINDS: tuple[str, ...] = ("decayed", "merged", "compressed")
"""The kinds of forgetting event, in the order tables list them."""

FORGETTING_COUNTS: tuple[str, ...] = (
    *(f"forget_{kind}" for kind in FORGETTING_KINDS),
    *(f"forget_{kind}_memories" for kind in FORGETTING_KINDS),
    *(f"lost_{kind}" for kind in FORGETTING_KINDS),
)
"""Per owner: events of each kind (``forget_<kind>``), the memories they removed
(``forget_<kind>_memories``) and the gold facts they lost (``lost_<kind>``)."""


def _contents(items: object) -> list[str]:
    if not isinstance(items, list):
        return []
    return [str(i.get("content", "")) for i in items if isinstance(i, Mapping)]


def _kept(event: Mapping[str, Any]) -> list[str]:
    kept = event.get("kept")
    return [str(kept.get("content", ""))] if isinstance(kept, Mapping) else []


def forgetting_counts(
    owner: Owner,
    events: Sequence[Mapping[str, Any]] | None,
    snapshots: Sequence[Mapping[str, Any]],
    covers: Callable[[str, str], bool],
) -> dict[str, int] | None:
    """The :data:`FORGETTING_COUNTS` of one owner's replay (see the module docstring).

    Args:
        owner: The owner with its labelled sessions.
        events: The replay's forgetting records in the order they happened; ``None`` for a
            strategy that does not forget (then the result is ``None``).
        snapshots: The memory after each session (index-aligned with the sessions).
        covers: The matcher's ``covers(stored, gold)``.

    Raises:
        ValueError: An event of an unknown kind or outside the owner's sessions.
    """
    if events is None:
        return None
    counts = dict.fromkeys(FORGETTING_COUNTS, 0)
    for position, event in enumerate(events):
        kind, index = str(event.get("kind")), int(event.get("session_index", -1))
        if kind not in FORGETTING_KINDS or not 0 <= index < len(snapshots):
            raise ValueError(
                f"{owner.user_id}: forgetting record {position + 1}: kind {kind!r} at session "
                f"{index}; expected one of {', '.join(FORGETTING_KINDS)} within "
                f"{len(snapshots)} sessions"
            )
        removed = _contents(event.get("removed"))
        later = [
            content
            for other in events[position + 1 :]
            if int(other.get("session_index", -1)) == index
            for content in _contents(other.get("removed"))
        ]
        left = _contents(snapshots[index].get("facts")) + later + _kept(event)
        golds = {fact.id: fact.content for fact in owner.active_gold_facts(index)}
        counts[f"forget_{kind}"] += 1
        counts[f"forget_{kind}_memories"] += len(removed)
        counts[f"lost_{kind}"] += len(lost_golds(removed, left, golds, covers))
    return counts
