"""Echoes of the prompt in a run, in words: how many replies copied the prompt's own text.

The counting is :mod:`memlab.core.jsondoc.echo` (which text is an echo) and the ``echo_rate`` metric
(:data:`memlab.scoring.metric_specs.METRIC_SPECS`: replies with an echo / replies); this
module reads them back for the places a user looks: ``memlab run``'s summary, the report, a
prompt trial, and any verdict that has to say why a prompt comparison cannot be trusted
(:func:`echo_share`, :func:`echo_reason`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from memlab.runs.run import Run
from memlab.runs.rundir import RunError

__all__ = [
    "ECHO_NOTE",
    "echo_examples",
    "echo_lines",
    "echo_notes",
    "echo_reason",
    "echo_share",
]

ECHO_NOTE = (
    "the model copies the prompt's own text, its example or instructions, instead of facts "
    "from the conversation; echoes are not counted as stored facts, and a prompt comparison on "
    "these replies measures the copying, not the prompts"
)
"""What replies that echo the prompt mean for the numbers."""


def echo_share(run: Run, lane_id: str) -> float:
    """The share of ``lane_id``'s replies that echo the prompt: its ``echo_rate`` (0 to 1).

    NaN when the lane has no reply (nothing to judge) or no such lane. Runs recorded before
    echoes were counted read 0.
    """
    summary = run.summary
    if "echo_rate" not in summary.columns or lane_id not in summary.index:
        return math.nan
    value = summary.loc[lane_id, "echo_rate"]
    return float(value) if isinstance(value, int | float) else math.nan


def echo_examples(run: Run, lane_id: str, limit: int = 2) -> list[tuple[str, int]]:
    """The texts ``lane_id``'s replies echoed most often, with how often (first sample)."""
    seen: Counter[str] = Counter()
    for user in run.owner_ids:
        try:
            record = run.dir.read_owner_record(lane_id, user)
        except RunError:  # an owner this lane did not replay
            continue
        for call in record.get("calls", []):
            applied = call.get("applied") if isinstance(call, dict) else None
            for entry in (applied or {}).get("echoed", []) or []:
                if isinstance(entry, dict) and isinstance(entry.get("content"), str):
                    seen[entry["content"]] += 1
    return seen.most_common(limit)


def echo_reason(run: Run, lane_id: str) -> str | None:
    """One line naming the echo when some of ``lane_id``'s replies echo the prompt, e.g.
    ``12 of 12 replies (100.0%) echo the prompt: "Prefers dark mode in every editor" (×36)``;
    ``None`` when none do."""
    share = echo_share(run, lane_id)
    if math.isnan(share) or share <= 0:
        return None
    calls = run.calls
    lane = calls[(calls["lane_id"] == lane_id) & calls["reply"].notna()]
    echoing = lane["n_echoed"].fillna(0).gt(0).sum() if "n_echoed" in lane.columns else 0
    examples = ", ".join(f'"{text}" (×{n})' for text, n in echo_examples(run, lane_id))
    return f"{int(echoing)} of {len(lane)} replies ({share:.1%}) echo the prompt" + (
        f": {examples}" if examples else ""
    )


def echo_lines(run: Run) -> list[str]:
    """One line per lane whose replies echo the prompt (none when no lane does), then
    :data:`ECHO_NOTE` once."""
    lines = [
        f"{run.label(lane_id)}: {reason}"
        for lane_id in run.lanes
        if (reason := echo_reason(run, lane_id)) is not None
    ]
    return [*lines, f"  ({ECHO_NOTE})"] if lines else []


def echo_notes(runs: Sequence[Run]) -> list[str]:
    """One sentence for a report's introduction when some lane of ``runs`` has replies that
    echo the prompt (naming each such lane and what it echoed); none otherwise."""
    found = [
        f"{' '.join(part for part in (run.name, run.label(lane_id)) if part)}: {reason}"
        for run in runs
        for lane_id in run.lanes
        if (reason := echo_reason(run, lane_id)) is not None
    ]
    if not found:
        return []
    return [f"Replies echo the prompt's own text. {'; '.join(found)}. In words: {ECHO_NOTE}."]
