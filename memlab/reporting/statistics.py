"""The reports' statistics section: rates with intervals, paired comparisons, detectable effects.

Built once per report by :func:`statistics_section` and rendered by :func:`section_markdown`
and :func:`section_html`. Real and simulated lanes are compared apart
(:mod:`memlab.reporting.groups`): every configuration is compared with its group's baseline
(the group's first lane) on the owners both have; the primary metrics form one Holm family per
group, the other rates are exploratory (:mod:`memlab.scoring.comparing.comparison`). Rows that can
show nothing (no change, or no test possible with so few owners) are kept apart from the informative
ones, so a reader sees the tests first.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape

import pandas as pd

from memlab.reporting.groups import (
    GROUP_TITLES,
    LaneGroup,
    check_report,
    group_name,
    lane_groups,
)
from memlab.reporting.markdown import md_escape, md_table_head, md_table_row
from memlab.runs.run import Run
from memlab.scoring.comparing.comparison import Lane, compare_lanes, comparison_text
from memlab.scoring.comparing.inconclusive import Reason, inconclusive_reasons, shown_verdicts
from memlab.scoring.inference.estimators import estimator
from memlab.scoring.inference.paired_tests import min_detectable_effect
from memlab.scoring.inference.stats import StatOptions, bootstrap
from memlab.scoring.metric_model import MetricSpec
from memlab.scoring.metric_specs import interval_specs, primary_metrics
from memlab.scoring.metrics import owner_counts

__all__ = [
    "GroupComparison",
    "StatisticsSection",
    "compared_metrics",
    "group_pairs",
    "html_table",
    "md_table",
    "section_html",
    "section_markdown",
    "stacked",
    "statistics_section",
    "titled_tables_html",
    "titled_tables_markdown",
]


@dataclass(frozen=True)
class GroupComparison:
    """One group's lanes against the group's baseline."""

    title: str
    """The group's heading ("" when the report has one group)."""
    baseline: str
    table: pd.DataFrame
    """:func:`memlab.scoring.comparing.comparison.compare_lanes` rows (those not applicable left
    out)."""
    reasons: tuple[Reason, ...] = ()
    """Why the comparison cannot say whether a configuration is better
    (:func:`memlab.scoring.comparing.inconclusive.inconclusive_reasons`)."""

    @property
    def informative(self) -> pd.Series:
        """Rows that are tests with something to show: a p-value, and a finite MDE."""
        if self.table.empty:
            return pd.Series(dtype=bool)
        tested = self.table["p_value"].notna()
        return tested & ~self.table["mde"].map(lambda v: math.isinf(float(v)))

    def text(self, rows: pd.Series | None = None) -> pd.DataFrame:
        """:func:`memlab.scoring.comparing.comparison.comparison_text` of ``rows`` (default:
        all), the verdict of a metric one of :attr:`reasons` concerns read ``inconclusive:
        <short reasons>`` (:func:`memlab.scoring.comparing.inconclusive.inconclusive_text`), as
        in ``memlab compare``'s tables; the stored comparison keeps the raw verdict."""
        chosen = self.table if rows is None else self.table[rows]
        text = comparison_text(chosen)
        if not text.empty:
            text["verdict"] = shown_verdicts(chosen, list(text["verdict"]), self.reasons)
        return text


@dataclass(frozen=True)
class StatisticsSection:
    """What the statistics section shows (display strings, ready to render)."""

    options: StatOptions
    intro: str
    intervals: pd.DataFrame
    """run, group, configuration, owners, then one ``value [lo, hi]`` column per rate
    title."""
    comparisons: list[GroupComparison]
    """Per group of lanes (real, simulated), the comparisons with its baseline."""
    notes: list[str] = field(default_factory=list)
    banners: list[str] = field(default_factory=list)
    """What a mixed comparison mixes (another matcher, owner set...), for the report's top."""


def _rates(runs: Sequence[Run]) -> list[MetricSpec]:
    present = set().union(*(set(run.summary.columns) for run in runs))
    return [spec for spec in interval_specs() if spec.column in present]


def compared_metrics(runs: Sequence[Run]) -> list[str]:
    """The rates the report compares (every rate with an interval some run has)."""
    return [spec.column for spec in _rates(runs)]


def group_pairs(group: LaneGroup) -> tuple[list[tuple[Lane, Lane]], list[Lane]]:
    """The group's ``(baseline, lane)`` pairs the report compares (one Holm family), and the
    lanes left out because they share no owners with the baseline."""
    lanes = [Lane(run, lane_id) for run, lane_id in group.lanes]
    base, others = lanes[0], lanes[1:]
    pairs = [(base, lane) for lane in others if _shares_owners(base, lane)]
    return pairs, [lane for lane in others if (base, lane) not in pairs]


def _interval_rows(runs: Sequence[Run], rates: Sequence[MetricSpec]) -> pd.DataFrame:
    rows = []
    for run in runs:
        for lane_id, row in run.summary.iterrows():
            cells = {
                "run": run.name,
                "group": group_name(run, str(lane_id)),
                "configuration": str(row["label"]),
                "owners": _whole(row.get("owners")),
            }
            for spec in rates:
                value = row.get(spec.column, math.nan)
                lo, hi = row.get(f"{spec.column}_lo", math.nan), row.get(f"{spec.column}_hi")
                text = spec.fmt(value)
                if text != "-" and not pd.isna(lo) and not pd.isna(hi):
                    text += " " + spec.fmt_bounds(float(lo), float(hi))
                cells[spec.title] = text
            rows.append(cells)
    return pd.DataFrame(rows)


def _whole(value: object) -> str:
    if not isinstance(value, int | float) or math.isnan(value):
        return "-"
    return f"{value:g}"


def _shares_owners(base: Lane, cand: Lane) -> bool:
    def owners(lane: Lane) -> set[str]:
        sessions = lane.run.sessions
        if sessions.empty or "lane_id" not in sessions:
            return set()
        mine = sessions.loc[sessions["lane_id"] == lane.lane_id, "user_id"]
        return set(mine.to_numpy(dtype=object))  # not boxed one by one

    return bool(owners(base) & owners(cand))


def _single_lane_mde(lane: Lane, rates: Sequence[MetricSpec], options: StatOptions) -> str:
    """MDE of a future comparison with one lane's spread, when the report compares nothing."""
    counts = owner_counts(lane.run.calls, lane.run.sessions, prices=lane.run.prices)
    if counts.empty:
        return ""
    mine = counts[counts.index.get_level_values("lane_id") == lane.lane_id]
    parts = []
    owners = len(mine)
    for spec in rates:
        if not all(c in mine.columns for c in spec.sources):
            continue
        found = bootstrap(estimator(spec, mine), options)
        # Two independent configurations with this spread: the delta's variance doubles.
        value = float(
            min_detectable_effect(
                [found.se * math.sqrt(2)], found.owners, alpha=options.alpha, power=options.power
            )[0]
        )
        if math.isinf(value) and found.owners == owners:
            return (
                f"With {owners} owner(s) no paired test can reach p <= {options.alpha:g}: "
                "compare on more owners."
            )
        if not math.isnan(value) and not math.isinf(value):
            parts.append(f"{spec.title} {spec.fmt_delta(value).lstrip('+')}")
    if not parts:
        return ""
    return (
        f"Minimum detectable effect with these {owners} owners (80% power, alpha "
        f"{options.alpha:g} for one metric, a second configuration with the same spread): "
        + ", ".join(parts)
        + ". Pairing on owners usually makes it smaller."
    )


def _group_comparisons(
    group: LaneGroup,
    titled: bool,
    runs: Sequence[Run],
    notes: list[str],
    banners: list[str],
    allow_mixed: bool,
) -> GroupComparison | None:
    """The group's lanes against its first lane (notes collect what is left out, banners
    what a mixed comparison mixes; lanes measured differently are refused unless
    ``allow_mixed``, :func:`memlab.scoring.comparing.comparison.compare_lanes`)."""
    pairs, apart = group_pairs(group)
    notes += [
        f"{lane.run.name}: {lane.label} shares no owners with {group.baseline}: not compared."
        for lane in apart
    ]
    names = compared_metrics(runs)
    if not pairs or not names:
        return None
    options = runs[0].stats
    table = compare_lanes(
        pairs, metrics=names, primary=runs[0].primary, options=options, allow_mixed=allow_mixed
    )
    banners += [b for b in table.attrs.get("banners", []) if b not in banners]
    unused = table["verdict"] == "not applicable"
    notes += [
        f"{title}: undefined for every configuration compared (nothing to measure it on)."
        for title in dict.fromkeys(table.loc[unused, "title"])
        if (table.loc[table["title"] == title, "verdict"] == "not applicable").all()
    ]
    title = group.title if titled else ""
    kept = table[~unused].reset_index(drop=True)
    reasons = tuple(inconclusive_reasons(kept, power=options.power))
    return GroupComparison(title, group.baseline, kept, reasons)


def statistics_section(runs: Sequence[Run], *, allow_mixed: bool = False) -> StatisticsSection:
    """Intervals of every lane's rates and each lane against its group's baseline lane
    (lanes measured differently are refused unless ``allow_mixed``)."""
    options = runs[0].stats
    rates = _rates(runs)
    primary = runs[0].primary
    notes: list[str] = []
    banners = check_report(runs, allow_mixed=allow_mixed)
    groups = lane_groups(runs)
    comparisons = [
        found
        for group in groups
        if (found := _group_comparisons(group, len(groups) > 1, runs, notes, banners, allow_mixed))
        is not None
    ]
    lanes = [Lane(run, lane_id) for run in runs for lane_id in run.lanes]
    if len(lanes) == 1:
        notes.append(_single_lane_mde(lanes[0], rates, options))
    owners = [run.summary["owners"].min() for run in runs if not run.summary.empty]
    if owners and pd.notna(min(owners)) and float(min(owners)) < 2:
        notes.append("Intervals need at least 2 owners: runs with fewer show none.")
    tests = sum(int(found.table["p_holm"].notna().sum()) for found in comparisons)
    # The family as tested here: primary metrics the runs lack (QA accuracy without QA) drop out.
    names = [spec.column for spec in rates]
    family = ", ".join(m for m in primary_metrics(primary) if m in names) or "none measured"
    apart = "the baseline"
    if len(groups) > 1:
        apart = "its group's baseline (real and simulated lanes apart, one Holm family each)"
    intro = (
        f"Intervals: {options.level:.0%}, bootstrap over owners ({options.resamples} resamples; "
        "owners are resampled with all their sessions; owners a rate cannot vary with, such as "
        "owners without gold facts for recall, are left out of its n). Comparisons: each "
        f"configuration against {apart} on the owners both have; delta = configuration - "
        "baseline with a paired-bootstrap interval. Primary metrics "
        f"({family}) decide: a delta is significant when a paired sign-flip permutation test "
        "and the bootstrap interval both reject no difference, Holm's step-down over the "
        f"{tests} primary tests below keeping the family-wise error at {options.alpha:g}; each "
        "primary verdict, its interval and its MDE use the level of the Holm step that decided "
        "it (shown beside the interval), so a significant delta's interval excludes 0 and no "
        "other's does. Rows with the same counts on both sides are 'no change', not tests. "
        f"Other rates are exploratory, with {options.level:.0%} intervals. Precision verdicts "
        "use the macro average (the mean of owners' precision), so owners that store more "
        "facts do not weigh more; pooled (micro) precision is shown as exploratory. The "
        "minimum detectable effect (MDE) is the smallest true delta the procedure detects with "
        f"{options.power:.0%} power given the owners and the spread observed."
    )
    return StatisticsSection(
        options=options,
        intro=intro,
        intervals=_interval_rows(runs, rates),
        comparisons=comparisons,
        notes=[note for note in notes if note],
        banners=banners,
    )


# Columns whose text comes from run names and configuration values (data, not our numbers).
_DATA_COLUMNS = frozenset({"run", "configuration", "category", "judge", "judges"})


def md_table(frame: pd.DataFrame) -> list[str]:
    """A table of display strings as Markdown lines (run names and configurations escaped)."""
    lines = md_table_head([str(c) for c in frame.columns])
    for _, row in frame.iterrows():
        cells = [md_escape(row[c]) if c in _DATA_COLUMNS else str(row[c]) for c in frame.columns]
        lines.append(md_table_row(cells))
    return lines


def stacked(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """The non-empty frames of several runs one under the other, gaps shown as ``-``."""
    kept = [f for f in frames if not f.empty]
    return pd.concat(kept, ignore_index=True).fillna("-") if kept else pd.DataFrame()


def titled_tables_markdown(tables: Sequence[tuple[str, pd.DataFrame]]) -> list[str]:
    """Each non-empty table under its ``###`` title, as Markdown lines."""
    lines: list[str] = []
    for title, table in tables:
        if not table.empty:
            lines += ["", f"### {title}", "", *md_table(table)]
    return lines


def titled_tables_html(tables: Sequence[tuple[str, pd.DataFrame]]) -> list[str]:
    """Each non-empty table under its ``<h3>`` title, as HTML parts."""
    parts: list[str] = []
    for title, table in tables:
        if not table.empty:
            parts += [f"<h3>{escape(title)}</h3>", html_table(table)]
    return parts


def _split_rows(found: GroupComparison) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The group's comparison rows as text: informative ones, and the rest."""
    informative = found.informative
    return found.text(informative), found.text(~informative)


def _rest_title(count: int) -> str:
    return (
        f"{count} more row(s) with nothing to show: no change, or no test possible with so "
        "few owners (MDE none)"
    )


def section_markdown(section: StatisticsSection) -> list[str]:
    """The section as Markdown lines."""
    lines = ["## Statistics", "", section.intro, "", "### Rates with intervals", ""]
    lines += md_table(section.intervals.drop(columns="group", errors="ignore"))
    for found in section.comparisons:
        shown, rest = _split_rows(found)
        group = f"{found.title}: " if found.title else ""
        lines += ["", f"### {md_escape(group)}against {md_escape(found.baseline)}", ""]
        lines += md_table(shown) if not shown.empty else ["No comparison has a test to show."]
        if not rest.empty:
            lines += ["", _rest_title(len(rest)), "", *md_table(rest)]
    if section.notes:
        lines += ["", *(f"{md_escape(note)}  " for note in section.notes)]
    return [*lines, ""]


def html_table(frame: pd.DataFrame) -> str:
    """A table of display strings as HTML (every cell escaped)."""
    head = "".join(f"<th>{escape(str(c))}</th>" for c in frame.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(str(row[c]))}</td>" for c in frame.columns) + "</tr>"
        for _, row in frame.iterrows()
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _intervals_html(intervals: pd.DataFrame) -> list[str]:
    """One table per group with a column per configuration (rates down the side), so that
    twenty rates fit the page's width."""
    if intervals.empty or "group" not in intervals.columns:
        return [html_table(intervals)]
    groups = list(dict.fromkeys(intervals["group"]))
    parts = []
    for name in groups:
        mine = intervals[intervals["group"] == name]
        columns = [
            f"{run}: {lane}" for run, lane in zip(mine["run"], mine["configuration"], strict=True)
        ]
        table = mine.drop(columns=["run", "group", "configuration"]).T
        table.columns = pd.Index(columns)
        table.insert(0, "rate", table.index)
        if len(groups) > 1:
            parts.append(f"<p class='caption'><b>{escape(GROUP_TITLES[name])}</b></p>")
        parts.append(html_table(table))
    return parts


def section_html(section: StatisticsSection) -> list[str]:
    """The section as HTML fragments (every text escaped); rows with nothing to show are
    folded under the informative ones."""
    parts = [
        f"<details><summary>How the statistics are computed</summary>"
        f"<p class='muted'>{escape(section.intro)}</p></details>",
        "<h3>Rates with intervals</h3>",
        *_intervals_html(section.intervals),
    ]
    for found in section.comparisons:
        shown, rest = _split_rows(found)
        group = f"{found.title}: " if found.title else ""
        parts.append(f"<h3>{escape(group)}against {escape(found.baseline)}</h3>")
        parts.append(
            html_table(shown) if not shown.empty else "<p>No comparison has a test to show.</p>"
        )
        if not rest.empty:
            parts.append(
                f"<details><summary>{escape(_rest_title(len(rest)))}</summary>"
                f"{html_table(rest)}</details>"
            )
    parts += [f"<p class='muted'>{escape(note)}</p>" for note in section.notes]
    return parts
