"""The "Prompt changes" section of a report: each prompt edit as a unified diff of the two
templates next to the metric deltas, compared like with like.

A lane whose prompt differs from an earlier lane's is diffed against an earlier lane that
differs from it *only* in the prompt (:func:`memlab.scoring.comparing.comparability.differences`),
the nearest earlier version of the same prompt first: successive versions of one prompt file (by
content hash) are each diffed against their predecessor. A lane with no such partner is shown
against the nearest earlier version of its prompt (else the nearest earlier lane), and the section
names what else differs, so an output-mode or threshold change is never credited to the prompt. A
lane whose prompt appeared before, or is shown like with like elsewhere, is no edit of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape

import pandas as pd

from memlab.core.prompt_template import PromptVariant
from memlab.core.prompts import template_diff
from memlab.reporting.markdown import md_code_block, md_escape
from memlab.reporting.tables import metrics_in
from memlab.runs.run import Run, RunError
from memlab.scoring.comparing.comparability import SIMULATED_PROMPT_NOTE, LaneFacts, differences
from memlab.scoring.metric_model import MetricSpec
from memlab.scoring.metric_specs import metric_spec, primary_metrics

__all__ = [
    "PromptChange",
    "diff_html",
    "prompt_changes",
    "prompt_changes_html",
    "prompt_changes_markdown",
]


@dataclass(frozen=True)
class PromptChange:
    """One prompt edit: a lane against the lane it is compared with.

    Attributes:
        run: The lane's run name.
        lane: The lane's label (as in the metrics table).
        diff: Unified diff from the other lane's template to this lane's.
        deltas: ``(metric title, signed delta as text)`` of the metrics that changed against
            the other lane, in table order.
        baseline: The other lane, ``run: label``.
        also: What else differs between the two lanes, this lane's value first
            (``setting output_mode: json_schema vs free``); empty when only the prompt does.
        note: What the comparison cannot show ("" when nothing): the simulated model ignores
            prompt text.
        primary: ``(metric title, signed delta as text)`` of the primary metrics (the runs'
            Holm family, :func:`~memlab.scoring.metric_specs.primary_metrics`) that changed.
        effect: The largest absolute change of a primary metric (0 when none changed): how
            the report ranks prompt changes.
    """

    run: str
    lane: str
    diff: str
    deltas: list[tuple[str, str]]
    baseline: str = ""
    also: list[str] = field(default_factory=list)
    note: str = ""
    primary: list[tuple[str, str]] = field(default_factory=list)
    effect: float = 0.0


def _variant(run: Run, lane_id: str) -> PromptVariant | None:
    try:
        info = run.lane_info(lane_id).get("prompt") or {}
    except RunError:
        return None
    if "template" not in info:
        return None
    return PromptVariant(str(info.get("name", "?")), str(info["template"]))


@dataclass(frozen=True)
class _Lane:
    index: int
    run: Run
    facts: LaneFacts
    variant: PromptVariant


def _edits(lane: _Lane, earlier: Sequence[_Lane]) -> list[_Lane]:
    """Earlier lanes with another prompt: the nearest earlier version of the same prompt
    first, then the others, nearest first."""
    edits = [other for other in earlier if other.variant.sha256 != lane.variant.sha256]
    return sorted(edits, key=lambda o: (o.variant.name != lane.variant.name, lane.index - o.index))


def _other_differences(a: LaneFacts, b: LaneFacts) -> list[str]:
    return [str(d) for d in differences(a, b) if d.what != "prompt"]


def _pairs(lanes: Sequence[_Lane]) -> list[tuple[_Lane, _Lane, list[str]]]:
    """``(other, lane, what else differs)`` of each prompt edit to show."""
    clean: dict[int, _Lane] = {}
    for position, lane in enumerate(lanes):
        for other in _edits(lane, lanes[:position]):
            if not _other_differences(other.facts, lane.facts):
                clean[position] = other
                break
    clean_prompts = {lanes[position].variant.sha256 for position in clean}
    pairs: list[tuple[_Lane, _Lane, list[str]]] = []
    shown: set[tuple[str, str]] = set()
    for position, lane in enumerate(lanes):
        earlier = lanes[:position]
        if position in clean:
            pairs.append((clean[position], lane, []))
            continue
        edits = _edits(lane, earlier)
        seen = any(o.variant.sha256 == lane.variant.sha256 for o in earlier)
        # Not an edit of its own: the same prompt is shown like with like, or appeared before.
        if not edits or seen or lane.variant.sha256 in clean_prompts:
            continue
        other = edits[0]
        if (other.variant.sha256, lane.variant.sha256) not in shown:
            shown.add((other.variant.sha256, lane.variant.sha256))
            pairs.append((other, lane, _other_differences(other.facts, lane.facts)))
    return pairs


def prompt_changes(runs: Sequence[Run], metrics: pd.DataFrame) -> list[PromptChange]:
    """The prompt edits among the runs' lanes (see the module docstring).

    ``metrics`` is :func:`~memlab.reporting.tables.compare_table` of the same runs (row order
    = runs' lanes in order). The primary metrics are the first run's (its grid's
    ``primary:``, else those the metric specs declare), as in the report's comparisons.
    """
    primary = [metric_spec(name) for name in primary_metrics(runs[0].primary if runs else None)]
    lanes: list[_Lane] = []
    every = [(run, lane_id) for run in runs for lane_id in run.lanes]
    for index, (owner_run, lane_id) in enumerate(every):
        variant = _variant(owner_run, lane_id)
        if variant is not None:
            lanes.append(_Lane(index, owner_run, owner_run.lane_facts(lane_id), variant))
    return [
        PromptChange(
            lane.run.name,
            str(metrics["lane"].iloc[lane.index]),
            template_diff(other.variant, lane.variant),
            _deltas(metrics, other.index, lane.index),
            baseline=other.facts.name,
            also=also,
            note=SIMULATED_PROMPT_NOTE if lane.facts.simulated and other.facts.simulated else "",
            primary=_deltas(metrics, other.index, lane.index, primary),
            effect=_effect(metrics, other.index, lane.index, primary),
        )
        for other, lane, also in _pairs(lanes)
    ]


def _deltas(
    metrics: pd.DataFrame, base: int, row: int, specs: Sequence[MetricSpec] | None = None
) -> list[tuple[str, str]]:
    """The metrics of ``specs`` (default: the report's table) that changed, as text."""
    deltas = []
    for metric in metrics_in(metrics, specs):
        delta = metrics[metric.column].iloc[row] - metrics[metric.column].iloc[base]
        if pd.notna(delta) and delta != 0:
            deltas.append((metric.title, metric.fmt_delta(float(delta))))
    return deltas


def _effect(metrics: pd.DataFrame, base: int, row: int, specs: Sequence[MetricSpec]) -> float:
    """The largest absolute change among the metrics of ``specs`` (0 when none changed)."""
    changes = [
        abs(float(metrics[metric.column].iloc[row] - metrics[metric.column].iloc[base]))
        for metric in metrics_in(metrics, specs)
    ]
    return max((c for c in changes if c == c), default=0.0)  # c == c: not NaN


def _against(change: PromptChange) -> str:
    """``Against <lane>: <deltas>`` and what else differs, in words."""
    deltas = ", ".join(f"{title} {text}" for title, text in change.deltas)
    text = f"Against {change.baseline or 'the baseline'}: {deltas or 'no metric changed'}"
    if change.also:
        text += (
            f". Not only the prompt differs (this lane vs {change.baseline or 'the baseline'}): "
            + "; ".join(change.also)
            + " (the deltas mix these in)"
        )
    if change.note:
        text += f". Note: {change.note}"
    return text + "."


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
        parts.append(
            f"<h3>{escape(change.run)}: {escape(change.lane)}</h3>"
            f"<p>{escape(_against(change))}</p>" + diff_html(change.diff)
        )
    return parts


def prompt_changes_markdown(changes: Sequence[PromptChange]) -> list[str]:
    """The section as Markdown lines (diffs in fenced blocks that their text cannot close)."""
    if not changes:
        return []
    lines = ["## Prompt changes", ""]
    for change in changes:
        lines += [
            f"### {md_escape(change.run)}: {md_escape(change.lane)}",
            "",
            md_escape(_against(change)),
            "",
            *md_code_block(change.diff, info="diff"),
            "",
        ]
    return lines
