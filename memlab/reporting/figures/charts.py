"""Charts of a run. Every function returns a :class:`matplotlib.figure.Figure`.

Figures are built with the object API (no pyplot state, never ``plt.show()``), so they work the
same in scripts, reports and notebooks (where a returned Figure renders inline).

Each draws one run, or several overlaid (:class:`~memlab.reporting.figures.overlay.Overlay`: one
series, bar or row per run and configuration, labelled ``run: configuration``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.colors import to_hex
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from memlab.backends.registry import is_simulated, mark_simulated
from memlab.reporting.figures.overlay import Overlay
from memlab.runs.run import Run
from memlab.scoring.count_specs import STALE_HORIZON
from memlab.scoring.inference.survival import Episode, kaplan_meier
from memlab.scoring.metric_specs import metric_spec

__all__ = [
    "duplication_chart",
    "empty_chart",
    "empty_reason",
    "eviction_regret_chart",
    "fact_growth_chart",
    "injection_coverage_chart",
    "legend",
    "operating_curve_chart",
    "palette",
    "parse_failure_chart",
    "stale_survival_chart",
    "tokens_chart",
    "violation_heatmap",
]

_OK_COLOR = "#4c9a5b"
_MARKERS = ("o", "s", "^", "D", "v", "P", "X")


def _error_bars(
    ax: Axes,
    x: np.ndarray,
    y: np.ndarray,
    spans: tuple[np.ndarray, np.ndarray],
    *,
    horizontal: bool = False,
    capsize: float = 3,
    color: str = "#222222",
) -> None:
    """Error bars only (no markers or lines) at ``(x, y)``, ``spans`` below and above."""
    err = np.vstack(spans)
    ax.errorbar(
        x,
        y,
        xerr=err if horizontal else None,
        yerr=None if horizontal else err,
        fmt="none",
        ecolor=color,
        elinewidth=1,
        capsize=capsize,
    )


def _error_spans(
    summary: pd.DataFrame, lane_ids: Sequence[str], column: str, values: Sequence[float]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where a 95% interval exists for ``column``: positions, and the spans below and above.

    ``values`` are the plotted values in the order of ``lane_ids``; lanes without an interval
    (fewer than two owners, or a metric the run lacks) get no error bar.
    """
    keep, below, above = [], [], []
    if f"{column}_lo" in summary.columns:
        bounds = summary[[f"{column}_lo", f"{column}_hi"]].astype(float)
        for i, (lane_id, value) in enumerate(zip(lane_ids, values, strict=True)):
            lo, hi = bounds.loc[lane_id].to_numpy(dtype=float)
            if np.isfinite(lo) and np.isfinite(hi) and np.isfinite(value):
                keep.append(i)
                # A percentile interval may sit entirely on one side of the estimate.
                below.append(max(value - lo, 0.0))
                above.append(max(hi - value, 0.0))
    return np.array(keep, dtype=int), np.array(below), np.array(above)


def _value_text(summary: pd.DataFrame, lane_id: str, column: str, value: float) -> str:
    """``value`` formatted with its 95% interval when the run has one (for labels)."""
    spec = metric_spec(column)
    text = spec.fmt(value)
    if f"{column}_lo" in summary.columns and lane_id in summary.index:
        bounds = summary.loc[lane_id, [f"{column}_lo", f"{column}_hi"]].to_numpy(dtype=float)
        lo, hi = float(bounds[0]), float(bounds[1])
        if np.isfinite(lo) and np.isfinite(hi):
            text += " " + spec.fmt_bounds(lo, hi)
    return text


def _rate_whiskers(
    ax: Axes,
    run: Run,
    summary: pd.DataFrame,
    column: str,
    values: np.ndarray,
    suffixes: Sequence[str] | None = None,
) -> np.ndarray:
    """Horizontal 95% whiskers at ``values`` (one per lane of ``summary``, at y = 0, 1, ...)
    and tick labels naming each lane with its value, interval and ``suffixes``: the numbers sit
    in the tick labels, where no bar or whisker can cross them. Returns where each whisker
    ends on the right."""
    lanes = [str(lane) for lane in summary.index]
    y = np.arange(len(lanes))
    where, below, above = _error_spans(summary, lanes, column, list(values))
    if len(where):
        _error_bars(ax, values[where], y[where], (below, above), horizontal=True)
    ends = values.astype(float).copy()
    ends[where] += above
    extra = suffixes if suffixes is not None else [""] * len(lanes)
    ticks = [
        f"{label}\n{_value_text(summary, lane, column, value)}{more}"
        for label, lane, value, more in zip(_labels(run, lanes), lanes, values, extra, strict=True)
    ]
    ax.set_yticks(y, ticks, fontsize=7)
    return ends


def _bar_height(lanes: int) -> float:
    """Figure height (inches) of a horizontal bar chart with two-line labels per lane."""
    return max(3.0, 0.5 * lanes + 1.4)


def _plain(text: object) -> str:
    """``text`` drawn as written: a ``$`` from a prompt name or a reply is not mathtext."""
    return str(text).replace("$", r"\$")


def _labels(run: Run, lane_ids: Sequence[str]) -> list[str]:
    return [_plain(run.label(lane_id)) for lane_id in lane_ids]


_EMPTY = "memlab-empty:"


def empty_reason(fig: Figure) -> str | None:
    """Why a chart of this module drew nothing (``None`` when it drew something)."""
    label = str(fig.get_label())
    return label.removeprefix(_EMPTY) if label.startswith(_EMPTY) else None


def legend(ax: Axes, **options: Any) -> None:
    """Draw ``ax``'s legend when something on it has a label (a chart whose labelled series
    are all empty draws none: matplotlib would warn "No artists with labels found")."""
    handles, _labels = ax.get_legend_handles_labels()
    if handles:
        ax.legend(**options)


def empty_chart(fig: Figure, message: str) -> Figure:
    """``fig`` saying ``message`` instead of a chart (its label marks it empty, with why)."""
    fig.set_label(_EMPTY + message)
    ax = fig.subplots()
    ax.text(0.5, 0.5, message, ha="center", va="center", transform=ax.transAxes)
    ax.set_axis_off()
    return fig


def parse_failure_chart(run: Run) -> Figure:
    """Share of replies per lane by parse outcome: failures stacked by category.

    An error bar at the end of the failures shows the failure rate's 95% interval.
    """
    table = run.failures
    fig = Figure(figsize=(8, _bar_height(len(table))), layout="constrained")
    if table.empty:
        return empty_chart(fig, "no LLM replies in this run")
    shares = table.div(table.sum(axis=1), axis=0)
    failure_cols = [c for c in shares.columns if not str(c).startswith("ok:")]
    ok_cols = [c for c in shares.columns if str(c).startswith("ok:")]
    ax = fig.subplots()
    lanes = list(shares.index)
    y = np.arange(len(lanes))
    left = np.zeros(len(lanes))
    colors = dict(zip(failure_cols, palette(len(failure_cols)), strict=True))
    for column in failure_cols:
        values = shares[column].to_numpy()
        ax.barh(y, values, left=left, label=str(column), color=colors[column])
        left += values
    ok = shares[ok_cols].sum(axis=1).to_numpy() if ok_cols else np.zeros(len(lanes))
    ax.barh(y, ok, left=left, label="parsed ok", color=_OK_COLOR, alpha=0.35)
    summary = run.summary.reindex(lanes)
    _rate_whiskers(ax, run, summary, "parse_failure_rate", 1 - ok, [" failed"] * len(lanes))
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of LLM replies (bars: 95% interval of the failure rate)")
    ax.set_title("Parse outcome per configuration")
    legend(ax, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=7)
    return fig


def violation_heatmap(run: Run) -> Figure:
    """Schema violations: (pointer, keyword) rows x configuration columns, counts."""
    fig = Figure(figsize=(8, 4.2), layout="constrained")
    table = run.violations
    if table.empty:
        return empty_chart(fig, "no schema violations in this run")
    table = table.assign(where=table["pointer"] + "  [" + table["keyword"] + "]")
    pivot = table.pivot_table(index="where", columns="lane_id", values="count", aggfunc="sum")
    pivot = pivot.reindex(columns=[c for c in run.lanes if c in pivot.columns]).fillna(0)
    ax = fig.subplots()
    image = ax.imshow(pivot.to_numpy(), aspect="auto", cmap="Reds")
    ax.set_yticks(range(len(pivot.index)), [_plain(p) for p in pivot.index], fontsize=8)
    ax.set_xticks(
        range(len(pivot.columns)),
        _labels(run, list(pivot.columns)),
        rotation=30,
        ha="right",
        fontsize=8,
    )
    for (i, j), value in np.ndenumerate(pivot.to_numpy()):
        if value:
            ax.text(j, i, f"{int(value)}", ha="center", va="center", fontsize=8)
    fig.colorbar(image, ax=ax, label="violations")
    ax.set_title("Schema violations by JSON Pointer and keyword")
    return fig


def fact_growth_chart(run: Run) -> Figure:
    """Mean stored facts per owner after each session, one line per configuration.

    Sessions are numbered from 0, as in every table. A ``max_facts`` cap is drawn when the
    curves come within reach of it (above half of it); caps far above the data are named in
    the title instead, so the axis stays linear and fitted to the data.
    """
    fig = Figure(figsize=(8, 4.2), layout="constrained")
    sessions = run.sessions
    if sessions.empty:
        return empty_chart(fig, "no sessions in this run")
    top = float(sessions["facts"].max() or 0)
    if top == 0:
        return empty_chart(fig, "no configuration stored a fact")
    ax = fig.subplots()
    caps: set[int] = set()
    for lane_id in run.lanes:
        rows = sessions[sessions["lane_id"] == lane_id]
        if rows.empty:
            continue
        curve = rows.groupby("session_index")["facts"].mean()
        ax.plot(
            curve.index,
            curve.to_numpy(),
            marker="o",
            markersize=3,
            label=_plain(run.label(lane_id)),
        )
        caps.add(run.lanes[lane_id].max_facts)
    first = int(sessions["session_index"].min())  # a forked run starts later
    drawn = sorted(cap for cap in caps if cap <= 5 * top)
    for cap in drawn:
        ax.axhline(cap, linestyle="--", color="grey", linewidth=1)
        ax.text(first, cap, f" max_facts={cap}", va="bottom", fontsize=8, color="grey")
    ax.set_ylim(0, max([top * 1.15, *(cap * 1.08 for cap in drawn)]))
    title = "Fact growth"
    far = sorted(caps - set(drawn))
    if far:
        listed = ", ".join(str(cap) for cap in far)
        title += f"\n(max_facts {listed} not reached: the highest mean is {top:.3g})"
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("session (numbered from 0)")
    ax.set_ylabel("stored facts (mean per owner)")
    ax.set_title(title, fontsize=10)
    legend(ax, fontsize=7)
    return fig


def duplication_chart(run: Run) -> Figure:
    """Duplicate stored facts per configuration: exact, normalized, near (and embedding).

    The near and embedding duplicate rates carry error bars: their 95% bootstrap intervals.
    """
    fig = Figure(figsize=(8, 4.2), layout="constrained")
    summary = run.summary
    if summary.empty or summary["final_facts"].fillna(0).sum() == 0:
        return empty_chart(fig, "no configuration stored a fact")
    ax = fig.subplots()
    kinds = ["dup_exact", "dup_normalized", "dup_near"]
    if "dup_embedding" in summary.columns and summary["dup_embedding"].notna().any():
        kinds.append("dup_embedding")
    x = np.arange(len(summary))
    width = 0.8 / len(kinds)
    facts = summary["final_facts"].replace(0, np.nan)
    # The rates that have intervals, by the count they divide by the stored facts.
    intervals = {"dup_near": "duplicate_rate", "dup_embedding": "duplicate_rate_embedding"}
    for k, kind in enumerate(kinds):
        positions = x + (k - (len(kinds) - 1) / 2) * width
        heights = (summary[kind] / facts).fillna(0).to_numpy(dtype=float)
        ax.bar(positions, heights, width, label=kind.removeprefix("dup_"))
        if kind in intervals:
            where, below, above = _error_spans(
                summary, list(summary.index), intervals[kind], list(heights)
            )
            if len(where):
                _error_bars(ax, positions[where], heights[where], (below, above))
    ax.set_xticks(x, [_plain(v) for v in summary["label"]], rotation=30, ha="right", fontsize=8)
    ax.set_ylim(bottom=0)
    ax.set_ylabel("duplicates / stored facts (bars: 95% interval)")
    ax.set_title("Duplication among stored facts")
    legend(ax, fontsize=8)
    return fig


def operating_curve_chart(run: Run) -> Figure:
    """Recall against precision per configuration, with 95% intervals of both.

    One line per combination of the run's varying axes other than the threshold (for example
    ``max_facts``), joining its thresholds in increasing order; thin crosses show each
    point's bootstrap intervals (over owners) when the run has at least two owners.
    """
    fig = Figure(figsize=(6.5, 5), layout="constrained")
    summary = run.summary.dropna(subset=["recall", "precision"])
    if summary.empty:
        return empty_chart(fig, _why_unscored(run))
    ax = fig.subplots()
    # One line per value of the other varying axes ("max_facts=10", "[simulated] ..."; with
    # several runs overlaid, per run too: "run-a: max_facts=10").
    lines = summary.index.map(
        lambda lane_id: _curve_label(run, str(lane_id), "fact_confidence_threshold")
    )
    # Thresholds are marker shapes (named in the legend), not labels beside the points: points
    # of several lines often coincide, and the interval crosses pass through them.
    thresholds = sorted(summary["fact_confidence_threshold"].unique())
    shapes = {t: _MARKERS[i % len(_MARKERS)] for i, t in enumerate(thresholds)}
    for label, group in summary.groupby(lines, sort=False):
        group = group.sort_values("fact_confidence_threshold")
        (line,) = ax.plot(group["precision"], group["recall"], label=label)
        color = to_hex(line.get_color())
        for threshold, point in group.groupby("fact_confidence_threshold"):
            ax.plot(point["precision"], point["recall"], shapes[threshold], color=color)
        _interval_cross(ax, group, color)
    for threshold in thresholds:
        ax.plot([], [], shapes[threshold], color="grey", label=f"threshold {threshold:g}")
    ax.set_xlim(0, 1.02)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("precision")
    ax.set_ylabel("recall")
    ax.set_title("Operating curve: confidence threshold x max_facts")
    legend(ax, fontsize=7)
    return fig


def _interval_cross(ax: Axes, group: pd.DataFrame, color: str) -> None:
    """95% intervals of precision (horizontal) and recall (vertical) around each point."""
    lanes = list(group.index)
    xs, ys = group["precision"].to_numpy(float), group["recall"].to_numpy(float)
    for column, values, horizontal in (("precision", xs, True), ("recall", ys, False)):
        where, below, above = _error_spans(group, lanes, column, list(values))
        if len(where):
            _error_bars(
                ax,
                xs[where],
                ys[where],
                (below, above),
                horizontal=horizontal,
                capsize=0,
                color=color,
            )


def eviction_regret_chart(run: Run) -> Figure:
    """Share of active gold facts lost to ``max_facts`` or the threshold, per configuration.

    Shown beside the growth curves: the price of a tighter cap or a higher threshold. Bars
    carry 95% intervals; each label gives the value, its interval and the gold facts the cap
    evicted and the threshold rejected over all sessions.
    """
    summary = run.summary
    fig = Figure(figsize=(6.5, _bar_height(len(summary))), layout="constrained")
    if "eviction_regret" not in summary.columns or summary["eviction_regret"].isna().all():
        return empty_chart(fig, "no eviction regret measured (no labeled facts, or an older run)")
    ax = fig.subplots()
    lanes = list(summary.index)
    values = summary["eviction_regret"].fillna(0).to_numpy(dtype=float)
    y = np.arange(len(lanes))
    ax.barh(y, values, color="#c97c5d")
    events = run.sessions.groupby("lane_id")[["gold_evicted", "gold_below_threshold"]].sum()
    counts = [events.loc[lane] if lane in events.index else (0, 0) for lane in lanes]
    suffixes = [f"; cap {int(cap)}, thr {int(low)}" for cap, low in counts]
    ends = _rate_whiskers(ax, run, summary, "eviction_regret", values, suffixes)
    ax.invert_yaxis()
    ax.set_xlim(0, min(1.0, max(0.1, float(ends.max()) * 1.2)))
    ax.set_xlabel("active gold facts lost (bars: 95% interval)")
    ax.set_title("Eviction regret (cap: evicted, thr: below threshold)", fontsize=10)
    return fig


def stale_survival_chart(run: Run) -> Figure:
    """Kaplan-Meier survival of retracted facts in memory, per configuration.

    ``P(still held after t session ends)``, from the retracting session's end (``t = 1``) on,
    censored where a replay ended with the fact still held (``scipy.stats.ecdf``, see
    :mod:`memlab.scoring.inference.survival`); the legend gives each configuration's restricted mean
    (``stale_rmst``) with its 95% interval over owners.
    """
    fig = Figure(figsize=(8, 4.2), layout="constrained")
    episodes = _stale_episodes(run)
    if episodes.empty:
        return empty_chart(fig, "no retracted fact was held in this run")
    ax = fig.subplots()
    lanes = [lane for lane in run.lanes if lane in set(episodes["lane_id"])]
    horizon = max(STALE_HORIZON, int(episodes["sessions"].max()))
    summary = run.summary
    for color, lane_id in zip(palette(len(lanes)), lanes, strict=True):
        mine = episodes[episodes["lane_id"] == lane_id]
        pairs = zip(mine["sessions"], mine["censored"], strict=True)
        curve = kaplan_meier([Episode(int(s), bool(c)) for s, c in pairs], horizon)
        label = _plain(run.label(lane_id))
        if "stale_rmst" in summary.columns:
            spec = metric_spec("stale_rmst")
            found = summary.loc[lane_id, ["stale_rmst", "stale_rmst_lo", "stale_rmst_hi"]]
            value, lo, hi = (float(v) for v in found.to_numpy(dtype=float))
            label += f" (RMST {spec.fmt(value)} {spec.fmt_bounds(lo, hi)})"
        xs = np.arange(horizon + 1)
        ax.step(xs, np.r_[1.0, curve], where="post", color=color, label=label)
    ax.set_ylim(0, 1.05)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("session ends since the retracting session started")
    ax.set_ylabel("retracted facts still held (Kaplan-Meier)")
    ax.set_title(f"Stale survival after a retraction (RMST over {STALE_HORIZON} session ends)")
    legend(ax, fontsize=7)
    return fig


def _stale_episodes(run: Run) -> pd.DataFrame:
    """One row per (lane, owner, retracted fact): sessions survived and whether censored."""
    sessions = run.sessions
    if "stale_detail" not in sessions.columns:
        return pd.DataFrame(columns=["lane_id", "sessions", "censored"])
    rows = [
        {"lane_id": lane_id, "sessions": int(e["sessions"]), "censored": bool(e["censored"])}
        for lane_id, detail in zip(sessions["lane_id"], sessions["stale_detail"], strict=True)
        if isinstance(detail, list)
        for e in detail
    ]
    return pd.DataFrame(rows, columns=["lane_id", "sessions", "censored"])


def injection_coverage_chart(run: Run) -> Figure:
    """Share of active gold facts in the next session's injected memory, by token budget.

    One line per combination of the other varying settings (e.g. the injection policy), with
    95% intervals. When every configuration has the same budget there is no axis to draw a
    line on: one bar per configuration instead, the budget in the title.
    """
    column = "injected_gold_coverage"
    summary = run.summary
    if column not in summary.columns or summary[column].isna().all():
        fig = Figure(figsize=(6.5, 4.5), layout="constrained")
        return empty_chart(fig, "no injection audit in this run (no next session, or an older run)")
    summary = summary.dropna(subset=[column])
    if summary["max_injection_tokens"].nunique() < 2:
        return _coverage_bars(run, summary, column)
    fig = Figure(figsize=(6.5, 4.5), layout="constrained")
    ax = fig.subplots()
    for label, group in _coverage_lines(run, summary):
        group = group.sort_values("max_injection_tokens")
        xs = group["max_injection_tokens"].to_numpy(dtype=float)
        ys = group[column].to_numpy(dtype=float)
        (line,) = ax.plot(xs, ys, marker="o", label=label)
        where, below, above = _error_spans(group, list(group.index), column, list(ys))
        if len(where):
            _error_bars(ax, xs[where], ys[where], (below, above), color=to_hex(line.get_color()))
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("max_injection_tokens")
    ax.set_ylabel("active gold facts injected (bars: 95% interval)")
    ax.set_title("What reaches the agent: injected gold coverage")
    legend(ax, fontsize=7)
    return fig


def _coverage_lines(run: Run, summary: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """The lines of the coverage chart: one per combination of the varying settings other
    than the budget, with its legend label; with several runs overlaid, one per run too."""
    if isinstance(run, Overlay):
        lines = summary.index.map(
            lambda lane_id: _curve_label(run, str(lane_id), "max_injection_tokens")
        )
        return [(str(label), group) for label, group in summary.groupby(lines, sort=False)]
    keys = [k for k in run.grid.varying() if k != "max_injection_tokens"]
    groups = summary.groupby(keys) if keys else [((), summary)]
    drawn = []
    for values, group in groups:
        values = values if isinstance(values, tuple) else (values,)
        label = ", ".join(f"{k}={v}" for k, v in zip(keys, values, strict=True)) or "all"
        drawn.append((_plain(_simulated_label(run, group, label)), group))
    return drawn


def _simulated_label(run: Run, group: pd.DataFrame, label: str) -> str:
    """``label``, marked ``[simulated]`` when the group's lanes replay the simulated model."""
    simulated = all(is_simulated(run.lanes[str(lane)].backend) for lane in group.index)
    return mark_simulated(label, simulated)


def _coverage_bars(run: Run, summary: pd.DataFrame, column: str) -> Figure:
    """Injected coverage per configuration at one budget: horizontal bars with intervals."""
    fig = Figure(figsize=(6.5, _bar_height(len(summary))), layout="constrained")
    ax = fig.subplots()
    values = summary[column].to_numpy(dtype=float)
    ax.barh(np.arange(len(values)), values, color="#30638e")
    _rate_whiskers(ax, run, summary, column, values)
    ax.invert_yaxis()
    ax.set_xlim(0, 1.02)
    budget = summary["max_injection_tokens"].iloc[0]
    ax.set_xlabel("active gold facts injected (bars: 95% interval)")
    ax.set_title(f"Injected gold coverage at max_injection_tokens={budget}", fontsize=10)
    return fig


def tokens_chart(run: Run) -> Figure:
    """Mean prompt and completion tokens per LLM update, per configuration."""
    fig = Figure(figsize=(8, 4.2), layout="constrained")
    calls = run.calls
    if calls.empty:
        return empty_chart(fig, "no LLM calls in this run")
    means = calls.groupby("lane_id")[["prompt_tokens", "completion_tokens"]].mean()
    means = means.reindex([c for c in run.lanes if c in means.index])
    ax = fig.subplots()
    x = np.arange(len(means))
    ax.bar(x, means["prompt_tokens"], label="prompt")
    ax.bar(x, means["completion_tokens"], bottom=means["prompt_tokens"], label="completion")
    ax.set_xticks(x, _labels(run, list(means.index)), rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("tokens per update (mean)")
    ax.set_title("Token use per update")
    legend(ax, fontsize=8)
    return fig


def _curve_label(run: Run, lane_id: str, axis: str) -> str:
    """The line a lane's point is on: the values of the run's varying settings but ``axis``
    (the one the line runs along); in an overlay, the run's name first, as the run itself
    would label it (a line never joins two runs)."""
    if isinstance(run, Overlay):
        name, source, own = run.source(lane_id)
        return f"{_plain(name)}: {_curve_label(source, own, axis)}"
    keys = [k for k in run.grid.varying() if k != axis]
    lane = run.lanes[lane_id]
    dumped = lane.settings()
    dumped["schema_bounds"] = "on" if lane.schema_bounds else "off"  # not a dict in a legend
    label = _plain(", ".join(f"{k}={dumped[k]}" for k in keys) or "all")
    return mark_simulated(label, is_simulated(lane.backend))


def _why_unscored(run: Run) -> str:
    """Why recall and precision are undefined for every configuration: say what is true."""
    summary = run.summary
    if summary.empty:
        return "no configurations in this run"
    recall_known = summary["recall"].notna().any()
    if not recall_known:
        return "the dataset has no labeled facts (recall is undefined)"
    return "no configuration stored a fact (precision is undefined)"


def palette(n: int) -> list[str]:
    """``n`` colours, the same first ones in every chart (the base colours cycle)."""
    base = [
        "#d1495b",
        "#edae49",
        "#00798c",
        "#30638e",
        "#8d6a9f",
        "#c97c5d",
        "#66a182",
        "#2e4057",
        "#b8b8b8",
        "#e07a5f",
    ]
    return [base[i % len(base)] for i in range(n)]
