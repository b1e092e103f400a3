"""The tiered memory seen as a memory document.

The view is what the replay snapshots, so every write-side metric, the injection audit and
memory QA read a tiered lane as they read a DeerFlow lane:

- ``facts``: the long-term semantic memories, oldest first, each with its importance as its
  ``confidence`` (importance decays while a memory is not recalled, so the injection's
  confidence order is the seed's importance order);
- ``user.topOfMind``: the latest session summary and its key points (the short-term memory);
- ``history.recentMonths``: the latest interactions (episodic memory), one line each, the
  input and output cut to 200 characters as the seed's prompt cuts them.

The injection (:func:`memlab.core.pipeline.injection.render_injection` with ``history_last``, as
:attr:`memlab.grids.lane.LaneConfig.history_last` says for a tiered lane) then assembles
the seed's context in the seed's order within the lane's budget: summary, semantic memories
in the lane's policy order while they fit, then the recent episodes, cut at the end; the
injection audit records which memories made it in and which the budget dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from memlab.core.jsondoc.document import MemoryDocument, create_empty_memory, utc_iso

__all__ = ["EPISODE_CHARS", "document_view"]

EPISODE_CHARS = 200
"""Characters of an episode's input and output shown in the view (the seed's cut)."""


def _cut(text: str) -> str:
    return text if len(text) <= EPISODE_CHARS else text[:EPISODE_CHARS] + "..."


def document_view(
    memories: Sequence[Any],
    summary: tuple[str, list[str]] | None,
    episodes: Sequence[Any],
    now: datetime,
) -> MemoryDocument:
    """The memory document of a tiered store's contents (see the module docstring).

    Args:
        memories: The store's semantic memories (``MemoryItem``), oldest first.
        summary: The latest session summary and its key points, if any.
        episodes: The episodes to show (``Episode``), oldest first.
        now: The virtual time of the view.
    """
    document = create_empty_memory(now)
    stamp = utc_iso(now)
    if summary is not None:
        text, points = summary
        lines = [text.strip()] if text.strip() else []
        lines += [f"- {p}" for p in points if p.strip()]
        document["user"]["topOfMind"] = {"summary": "\n".join(lines), "updatedAt": stamp}
    if episodes:
        shown = "\n".join(f"{_cut(e.input)} -> {_cut(e.output)}" for e in episodes)
        document["history"]["recentMonths"] = {"summary": shown, "updatedAt": stamp}
    document["facts"] = [
        {
            "id": m.id,
            "content": m.content,
            "category": m.category,
            "confidence": round(float(m.importance), 6),
            "createdAt": utc_iso(m.created_at),
            "source": m.source,
        }
        for m in memories
    ]
    return document
