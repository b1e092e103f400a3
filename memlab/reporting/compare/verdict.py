"""The report's first screen: what was compared, the verdict, the biggest prompt change.

The verdict's heading says what was found (:func:`headline`): better or worse on which primary
metrics, no difference larger than the MDE, no test possible with so few owners, or
inconclusive with every reason (:mod:`memlab.scoring.comparing.inconclusive`), each reason then on a
line of its own. Below it, one table per group of lanes (real, simulated) holds only the significant
differences against the group's baseline, each with its interval. A row is marked *robust* when it
is a primary metric that Holm's step-down keeps significant over the group's family and, for a rate
a judge grades, every judge of the run finds the same difference; the other significant rows are
exploratory (an interval at the run's level that excludes 0, uncorrected).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape

import pandas as pd

from memlab.reporting.compare.prompt_changes import PromptChange
from memlab.reporting.groups import lane_groups
from memlab.reporting.markdown import md_escape, md_table_head, md_table_row
from memlab.reporting.statistics import GroupComparison, StatisticsSection
from memlab.runs.run import Run
from memlab.scoring.comparing.comparison import describe
from memlab.scoring.comparing.inconclusive import Reason, inconclusive_reasons
from memlab.scoring.metric_specs import metric_spec

__all__ = [
    "FIRST_ROWS",
    "Verdict",
    "biggest_prompt_change",
    "compared_lines",
    "compared_text",
    "headline",
    "prompt_change_text",
    "verdict",
    "verdict_html",
    "verdict_markdown",
]

FIRST_ROWS = 8
"""Verdict rows the first screen shows, shared among the groups (robust ones first); the
rest of each group's rows are folded."""

SIGNIFICANT = frozenset({"better", "worse", "better (exploratory)", "worse (exploratory)"})
"""The verdicts of :func:`memlab.scoring.comparing.comparison.compare_lanes` that reject no
difference."""


@dataclass(frozen=True)
class Verdict:
    """One group's significant differences, as display strings."""

    title: str
    baseline: str
    rows: pd.DataFrame
    """configuration, metric, baseline -> value, delta [CI], owners better / worse, robust."""
    tested: int
    """Comparison rows of the group that were tests (a p-value), significant or not."""
    reasons: tuple[Reason, ...] = ()
    """Why the group's comparison cannot say whether a configuration is better."""
    table: pd.DataFrame | None = field(default=None, compare=False, repr=False)
    """The group's comparison (:func:`memlab.scoring.comparing.comparison.compare_lanes`)."""


def headline(tables: Sequence[pd.DataFrame], reasons: Sequence[Reason]) -> str:
    """What comparisons found, in a few words: ``better on recall; worse on precision
    (macro)`` (primary metrics Holm keeps significant), ``inconclusive — <reasons>``, ``no test
    possible: 2 owners`` (the only reason: too few owners for any test), ``no difference
    larger than the MDE``, or ``nothing to compare`` without any comparison."""
    if not tables:
        return "nothing to compare"
    found: dict[str, list[str]] = {"better": [], "worse": []}
    for table in tables:
        decided = table[table["significant"].astype(bool) & (table["role"] == "primary")]
        for _, row in decided.iterrows():
            if _unsettled(row, reasons):
                continue  # a reason about this very rate (unreadable verdicts) says why
            title = metric_spec(str(row["metric"])).title
            if str(row["verdict"]) in found and title not in found[str(row["verdict"])]:
                found[str(row["verdict"])].append(title)
    parts = [f"{way} on {', '.join(titles)}" for way, titles in found.items() if titles]
    shorts = list(dict.fromkeys(reason.short for reason in reasons))
    if shorts and all(reason.kind == "no test possible" for reason in reasons):
        parts.append("; ".join(shorts))
    elif shorts:
        parts.append("inconclusive — " + "; ".join(shorts))
    return "; ".join(parts) or "no difference larger than the MDE"


def _unsettled(row: pd.Series, reasons: Sequence[Reason]) -> bool:
    """Whether a reason concerns this row's metric on its lane (:meth:`Reason.concerns`: one
    about the whole comparison, such as a backend blind to the prompts compared, concerns every
    metric), so its significant verdict cannot be taken as found."""
    return any(reason.concerns(str(row["lane"]), str(row["metric"])) for reason in reasons)


def _judge_splits(robust: pd.DataFrame) -> set[tuple[str, str, str]]:
    """(run, lane, metric) whose judged verdict depends on the judge, from the QA section's
    table (:attr:`memlab.reporting.qa.qa_section.QASection.robust`)."""
    if robust.empty or "under every judge" not in robust.columns:
        return set()
    split = robust[robust["under every judge"] == "depends on the judge"]
    return set(zip(split["run"], split["configuration"], split["metric"], strict=True))


def _rows(
    found: GroupComparison,
    judge_splits: set[tuple[str, str, str]],
    reasons: Sequence[Reason] = (),
) -> pd.DataFrame:
    table = found.table
    significant = table[table["verdict"].isin(SIGNIFICANT)]
    rows = []
    for _, row in significant.iterrows():
        spec = metric_spec(str(row["metric"]))
        robust = bool(row["significant"]) and row["role"] == "primary"
        if (row["run"], row["lane"], row["metric"]) in judge_splits:
            robust = False
        unsettled = _unsettled(row, reasons)
        rows.append(
            {
                "configuration": f"{row['run']}: {row['lane']}",
                "metric": spec.title,
                "baseline -> value": f"{spec.fmt(row['baseline'])} -> {spec.fmt(row['value'])}",
                "delta [CI], p": describe(row),
                "owners better / worse": f"{row['owners_better']} / {row['owners_worse']}",
                "robust": "inconclusive" if unsettled else "robust" if robust else "exploratory",
                "_order": (not robust or unsettled, float(row["p_value"])),
            }
        )
    columns = [
        "configuration",
        "metric",
        "baseline -> value",
        "delta [CI], p",
        "owners better / worse",
        "robust",
    ]
    if not rows:
        return pd.DataFrame(columns=columns)
    frame = pd.DataFrame(rows)
    order = sorted(range(len(frame)), key=lambda i: frame["_order"].iloc[i])
    return frame.iloc[order][columns].reset_index(drop=True)


def verdict(section: StatisticsSection, robust: pd.DataFrame | None = None) -> list[Verdict]:
    """The significant rows of each group's comparisons; ``robust`` is the QA section's
    judge-robustness table (a judged difference one judge does not find is not robust)."""
    splits = _judge_splits(robust if robust is not None else pd.DataFrame())
    verdicts = []
    for found in section.comparisons:
        reasons = tuple(inconclusive_reasons(found.table, power=section.options.power))
        rows = _rows(found, splits, reasons)
        tested = int(found.table["p_value"].notna().sum())
        verdicts.append(Verdict(found.title, found.baseline, rows, tested, reasons, found.table))
    return verdicts


def compared_lines(runs: Sequence[Run], changed: Sequence[str]) -> list[str]:
    """Short lines: runs and datasets, each group's configurations and baseline, the settings
    that differ."""
    lanes = sum(len(run.lanes) for run in runs)
    datasets = ", ".join(dict.fromkeys(run.grid.dataset for run in runs))
    lines = [
        f"Compared: {lanes} configuration(s) in {len(runs)} run(s) "
        f"({', '.join(run.name for run in runs)}) on {datasets}."
    ]
    for group in lane_groups(runs):
        owners = max(
            (int(run.summary["owners"].max()) for run, _ in group.lanes if not run.summary.empty),
            default=0,
        )
        lines.append(
            f"{group.title}: {len(group.lanes)} configuration(s) on up to {owners} owner(s), "
            f"baseline {group.baseline}."
        )
    return [*lines, f"Settings that differ: {', '.join(changed) or 'none'}."]


def compared_text(runs: Sequence[Run], changed: Sequence[str]) -> str:
    """:func:`compared_lines` as one paragraph."""
    return " ".join(compared_lines(runs, changed))


def _changed_lines(change: PromptChange) -> int:
    return sum(
        1
        for line in change.diff.splitlines()
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    )


def biggest_prompt_change(changes: Sequence[PromptChange]) -> PromptChange | None:
    """The prompt change with the largest effect on a primary metric
    (:attr:`PromptChange.effect`), the one with more changed template lines on a tie
    (``None`` without any)."""
    return max(changes, key=lambda c: (c.effect, _changed_lines(c)), default=None)


def prompt_change_text(change: PromptChange) -> str:
    """The first screen's sentence on the biggest prompt change: its effect on the primary
    metrics only (every metric's delta is in the "Prompt changes" section)."""
    effect = ", ".join(f"{title} {text}" for title, text in change.primary)
    return (
        f"Biggest prompt change (by its effect on the primary metrics): {change.run}: "
        f"{change.lane} ({_changed_lines(change)} template lines changed); its effect on the "
        f"primary metrics: {effect or 'none changed'}."
    )


def _observed(table: pd.DataFrame | None) -> str:
    """The primary metrics that changed, baseline -> value, as observations."""
    if table is None or table.empty:
        return ""
    changed = table[(table["role"] == "primary") & (table["delta"].fillna(0) != 0)]
    seen = []
    for _, row in changed.iterrows():
        spec = metric_spec(str(row["metric"]))
        seen.append(
            f"{row['lane']}: {spec.title} {spec.fmt(row['baseline'])} -> {spec.fmt(row['value'])}"
        )
    return ", ".join(seen)


def _heading(verdicts: Sequence[Verdict]) -> str:
    """One clause per group (real model first), each naming its group when there are
    several: a simulated group's verdict is never read as the real model's."""
    clauses = []
    for found in verdicts:
        tables = [found.table] if found.table is not None else []
        clause = headline(tables, list(found.reasons))
        titled = len(verdicts) > 1 and found.title
        clauses.append(f"{found.title}: {clause}" if titled else clause)
    if not clauses:
        return "Verdict: " + headline([], [])
    return "Verdict: " + " · ".join(clauses)


def _nothing(found: Verdict) -> str:
    """What a group without a significant difference says."""
    no_test = [r for r in found.reasons if r.kind == "no test possible"]
    if no_test:
        seen = _observed(found.table)
        return f"{no_test[0].short}: " + (
            f"observed, not tested: {seen}" if seen else "no primary metric changed"
        )
    if found.reasons:
        return "inconclusive (the reasons above)"
    if not found.tested:
        return "no change in any primary metric"
    return f"no difference larger than the MDE in {found.tested} test(s)"


def _table(rows: pd.DataFrame) -> str:
    head = "".join(f"<th>{escape(c)}</th>" for c in rows.columns)
    body = "".join(
        f"<tr class='{escape(str(row['robust']))}'>"
        + "".join(f"<td>{escape(str(row[c]))}</td>" for c in rows.columns)
        + "</tr>"
        for _, row in rows.iterrows()
    )
    return f"<table class='verdict'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def verdict_html(verdicts: Sequence[Verdict], change: PromptChange | None) -> list[str]:
    """The first screen's verdict and prompt change as HTML fragments (text escaped)."""
    parts = [f"<h2 id='verdict'>{escape(_heading(verdicts))}</h2>"]
    reasons = list(dict.fromkeys(r.text for found in verdicts for r in found.reasons))
    if reasons:
        items = "".join(f"<li>{escape(text)}</li>" for text in reasons)
        parts.append(f"<ul class='inconclusive'>{items}</ul>")
    if not verdicts:
        parts.append("<p>Nothing to compare: one configuration per group.</p>")
    first = FIRST_ROWS // max(1, len(verdicts))
    for found in verdicts:
        group = f"{found.title}: " if found.title else ""
        where = f"{escape(group)}against {escape(found.baseline)}"
        if found.rows.empty:
            parts.append(
                f"<p><b>{where}</b>: {escape(_nothing(found))} (see Statistics for the "
                "intervals and the smallest detectable effects).</p>"
            )
            continue
        parts.append(f"<p class='caption'><b>{where}</b> ({len(found.rows)} of {found.tested} "
                     "tests significant; robust: primary metric, Holm-corrected)</p>")  # fmt: skip
        parts.append(_table(found.rows.head(first)))
        rest = found.rows.iloc[first:]
        if not rest.empty:
            parts.append(
                f"<details><summary>{len(rest)} more significant difference(s)</summary>"
                f"{_table(rest)}</details>"
            )
    if change is not None:
        parts.append(
            f"<p>{escape(prompt_change_text(change))} "
            "<a href='#prompt-changes'>The diff, every metric's delta and every other prompt "
            "change</a>.</p>"
        )
    return parts


def verdict_markdown(verdicts: Sequence[Verdict], change: PromptChange | None) -> list[str]:
    """The verdict and the biggest prompt change as Markdown lines (every row shown)."""
    lines = [f"## {md_escape(_heading(verdicts))}", ""]
    reasons = list(dict.fromkeys(r.text for found in verdicts for r in found.reasons))
    lines += [*(f"- {md_escape(text)}" for text in reasons), *([""] if reasons else [])]
    if not verdicts:
        lines += ["Nothing to compare: one configuration per group.", ""]
    for found in verdicts:
        group = f"{found.title}: " if found.title else ""
        where = md_escape(f"{group}against {found.baseline}")
        if found.rows.empty:
            lines += [f"{where}: {md_escape(_nothing(found))}.", ""]
            continue
        lines += [f"{where} ({len(found.rows)} of {found.tested} tests significant)", ""]
        lines += md_table_head(list(found.rows.columns))
        lines += [md_table_row([md_escape(str(v)) for v in row]) for row in found.rows.values]
        lines.append("")
    if change is not None:
        lines += [md_escape(prompt_change_text(change)), ""]
    return lines
