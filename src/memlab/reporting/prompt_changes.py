"""The "Prompt changes" section of a report: for each lane whose prompt text differs from the
baseline lane's, the unified diff of the two templates next to the lane's metric deltas."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

import pandas as pd

from memlab.core.prompts import PromptVariant, template_diff
from memlab.reporting.markdown import md_code_block, md_escape
from memlab.reporting.tables import metrics_in
from memlab.sweeps.run import Run, RunError

__all__ = [
    "PromptChange",
    "diff_html",
    "prompt_changes",
    "prompt_changes_html",
    "prompt_changes_markdown",
]


@dataclass(frozen=True)
class PromptChange:
    """One lane whose prompt differs from the baseline's.

    Attributes:
        run: The lane's run name.
        lane: The lane's label (as in the metrics table).
        diff: Unified diff from the baseline template to this lane's.
        deltas: ``(metric title, signed delta as text)`` of the metrics that changed against
            the baseline, in table order.
    """

    run: str
    lane: str
    diff: str
    deltas: list[tuple[str, str]]


def _variant(run: Run, lane_id: str) -> PromptVariant | None:
    try:
        info = run.lane_info(lane_id).get("prompt") or {}
    except RunError:
        return None
    if "template" not in info:
        return None
    return PromptVariant(str(info.get("name", "?")), str(info["template"]))


def prompt_changes(runs: Sequence[Run], metrics: pd.DataFrame) -> list[PromptChange]:
    """Lanes whose template differs from the baseline lane's (the first lane of the first run).

    ``metrics`` is :func:`~memlab.reporting.tables.compare_table` of the same runs (row order
    = runs' lanes in order).
    """
    lanes = [(run, lane_id) for run in runs for lane_id in run.lanes]
    if len(lanes) < 2:
        return []
    baseline = _variant(*lanes[0])
    if baseline is None:
        return []
    changes = []
    for row, (run, lane_id) in enumerate(lanes):
        variant = _variant(run, lane_id)
        if row == 0 or variant is None or variant.sha256 == baseline.sha256:
            continue
        deltas = []
        for metric in metrics_in(metrics):
            delta = metrics[f"{metric.column}_delta"].iloc[row]
            if pd.notna(delta) and delta != 0:
                text = metric.fmt(abs(delta))
                deltas.append((metric.title, ("-" if delta < 0 else "+") + text))
        changes.append(
            PromptChange(
                run.name, str(metrics["lane"].iloc[row]), template_diff(baseline, variant), deltas
            )
        )
    return changes


_DIFF_CLASSES = (("+++", ""), ("---", ""), ("@@", "hunk"), ("+", "add"), ("-", "del"))


def diff_html(diff: str) -> str:
    """A unified diff as a ``<pre>`` whose added, removed and hunk lines are coloured."""
    lines = []
    for line in diff.splitlines():
        css = next((css for prefix, css in _DIFF_CLASSES if line.startswith(prefix)), "")
        text = escape(line) or " "
        lines.append(f"<span class='{css}'>{text}</span>" if css else text)
    return "<pre class='diff'>" + "\n".join(lines) + "</pre>"


def prompt_changes_html(changes: Sequence[PromptChange]) -> list[str]:
    """The section as HTML parts under its heading (every template line escaped)."""
    parts = []
    for change in changes:
        deltas = ", ".join(f"{escape(title)} {text}" for title, text in change.deltas)
        parts.append(
            f"<h3>{escape(change.run)}: {escape(change.lane)}</h3>"
            f"<p>Against the baseline: {deltas or 'no metric changed'}</p>" + diff_html(change.diff)
        )
    return parts


def prompt_changes_markdown(changes: Sequence[PromptChange]) -> list[str]:
    """The section as Markdown lines (diffs in fenced blocks that their text cannot close)."""
    if not changes:
        return []
    lines = ["## Prompt changes", ""]
    for change in changes:
        deltas = ", ".join(f"{title} {text}" for title, text in change.deltas)
        lines += [
            f"### {md_escape(change.run)}: {md_escape(change.lane)}",
            "",
            f"Against the baseline: {md_escape(deltas or 'no metric changed')}",
            "",
            *md_code_block(change.diff, info="diff"),
            "",
        ]
    return lines
