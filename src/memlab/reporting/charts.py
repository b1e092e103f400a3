"""Charts of a run. Every function returns a :class:`matplotlib.figure.Figure`.

Figures are built with the object API (no pyplot state, never ``plt.show()``), so they work the
same in scripts, reports and notebooks (where a returned Figure renders inline).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.colors import to_hex
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from memlab.backends.registry import is_simulated
from memlab.scoring.metric_specs import STALE_HORIZON, metric_spec
from memlab.scoring.survival import Episode, kaplan_meier
from memlab.sweeps.run import Run

__all__ = [
    "duplication_chart",
    "eviction_regret_chart",
    "fact_growth_chart",
    "injection_coverage_chart",
    "operating_curve_chart",
    "parse_failure_chart",
    "stale_survival_chart",
    "tokens_chart",
    "violation_heatmap",
]

_OK_COLOR = "#4c9a5b"


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


def _plain(text: object) -> str:
    """``text`` drawn as written: a ``$`` from a prompt name or a reply is not mathtext."""
    return str(text).replace("$", r"\$")


def _labels(run: Run, lane_ids: Sequence[str]) -> list[str]:
    return [_plain(run.label(lane_id)) for lane_id in lane_ids]


def _empty(fig: Figure, message: str) -> Figure:
    ax = fig.subplots()
    ax.text(0.5, 0.5, message, ha="center", va="center", transform=ax.transAxes)
    ax.set_axis_off()
    return fig


def parse_failure_chart(run: Run) -> Figure:
    """Share of replies per lane by parse outcome: failures stacked by category.

    An error bar at the end of the failures shows the failure rate's 95% interval.
    """
    fig = Figure(figsize=(8, 4.2), layout="constrained")
    table = run.failures
    if table.empty:
        return _empty(fig, "no LLM replies in this run")
    shares = table.div(table.sum(axis=1), axis=0)
    failure_cols = [c for c in shares.columns if not str(c).startswith("ok:")]
    ok_cols = [c for c in shares.columns if str(c).startswith("ok:")]
    ax = fig.subplots()
    lanes = list(shares.index)
    y = np.arange(len(lanes))
    left = np.zeros(len(lanes))
    colors = dict(zip(failure_cols, _palette(len(failure_cols)), strict=True))
    for column in failure_cols:
        values = shares[column].to_numpy()
        ax.barh(y, values, left=left, label=str(column), color=colors[column])
        left += values
    ok = shares[ok_cols].sum(axis=1).to_numpy() if ok_cols else np.zeros(len(lanes))
    ax.barh(y, ok, left=left, label="parsed ok", color=_OK_COLOR, alpha=0.35)
    rates = 1 - ok
    where, below, above = _error_spans(run.summary, lanes, "parse_failure_rate", list(rates))
    if len(where):
        _error_bars(ax, rates[where], y[where], (below, above), horizontal=True)
    for i, rate in enumerate(rates):
        ax.text(min(rate, 0.82) + 0.01, i, f"{rate:.0%} failed", va="center", fontsize=8)
    ax.set_yticks(y, _labels(run, lanes))
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of LLM replies (bars: 95% interval of the failure rate)")
    ax.set_title("Parse outcome per configuration")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=7)
    return fig


def violation_heatmap(run: Run) -> Figure:
    """Schema violations: (pointer, keyword) rows x configuration columns, counts."""
    fig = Figure(figsize=(8, 4.2), layout="constrained")
    table = run.violations
    if table.empty:
        return _empty(fig, "no schema violations in this run")
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
    """Mean stored facts per owner after each session, one line per configuration."""
    fig = Figure(figsize=(8, 4.2), layout="constrained")
    sessions = run.sessions
    if sessions.empty:
        return _empty(fig, "no sessions in this run")
    ax = fig.subplots()
    caps: set[int] = set()
    for lane_id in run.lanes:
        rows = sessions[sessions["lane_id"] == lane_id]
        if rows.empty:
            continue
        curve = rows.groupby("session_index")["facts"].mean()
        ax.plot(
            curve.index + 1,
            curve.to_numpy(),
            marker="o",
            markersize=3,
            label=_plain(run.label(lane_id)),
        )
        caps.add(run.lanes[lane_id].max_facts)
    # The cap is always drawn: how far the curves stay below it is part of the story.
    first = int(sessions["session_index"].min()) + 1  # a forked run starts later
    for cap in sorted(caps):
        ax.axhline(cap, linestyle="--", color="grey", linewidth=1)
        ax.text(first, cap, f" max_facts={cap}", va="bottom", fontsize=8, color="grey")
    ax.set_ylim(bottom=0)
    top = float(sessions["facts"].max() or 0)
    if top == 0:
        ax.text(0.5, 0.5, "no configuration stored a fact", ha="center", transform=ax.transAxes)
    if caps and top * 5 < min(caps):
        # Far below the cap: a symlog axis keeps both the curves and the cap line readable.
        ax.set_yscale("symlog", linthresh=10)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("session")
    ax.set_ylabel("stored facts (mean per owner)")
    ax.set_title("Fact growth")
    ax.legend(fontsize=7)
    return fig


def duplication_chart(run: Run) -> Figure:
    """Duplicate stored facts per configuration: exact, normalized, near (and embedding).

    The near and embedding duplicate rates carry error bars: their 95% bootstrap intervals.
    """
    fig = Figure(figsize=(8, 4.2), layout="constrained")
    summary = run.summary
    if summary.empty or summary["final_facts"].fillna(0).sum() == 0:
        return _empty(fig, "no configuration stored a fact")
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
    ax.set_ylabel("duplicates / stored facts (bars: 95% interval)")
    ax.set_title("Duplication among stored facts")
    ax.legend(fontsize=8)
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
        return _empty(fig, _why_unscored(run))
    ax = fig.subplots()
    keys = [k for k in run.grid.varying() if k != "fact_confidence_threshold"]
    # One line per value of the other varying axes ("max_facts=10", "[simulated] ...").
    lines = summary.index.map(lambda lane_id: _curve_label(run, str(lane_id), keys))
    for label, group in summary.groupby(lines, sort=False):
        group = group.sort_values("fact_confidence_threshold")
        (line,) = ax.plot(group["precision"], group["recall"], marker="o", label=label)
        _interval_cross(ax, group, to_hex(line.get_color()))
        for _, row in group.iterrows():
            ax.annotate(
                f"t={row['fact_confidence_threshold']:g}",
                (row["precision"], row["recall"]),
                textcoords="offset points",
                xytext=(4, 4),
                fontsize=7,
            )
    ax.set_xlim(0, 1.02)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("precision")
    ax.set_ylabel("recall")
    ax.set_title("Operating curve: confidence threshold x max_facts")
    ax.legend(fontsize=7)
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
    carry 95% intervals; the labels count the gold facts the cap evicted and the threshold
    rejected over all sessions.
    """
    fig = Figure(figsize=(6.5, 4.2), layout="constrained")
    summary = run.summary
    if "eviction_regret" not in summary.columns or summary["eviction_regret"].isna().all():
        return _empty(fig, "no eviction regret measured (no labeled facts, or an older run)")
    ax = fig.subplots()
    lanes = list(summary.index)
    values = summary["eviction_regret"].fillna(0).to_numpy(dtype=float)
    x = np.arange(len(lanes))
    ax.bar(x, values, color="#c97c5d")
    where, below, above = _error_spans(summary, lanes, "eviction_regret", list(values))
    if len(where):
        _error_bars(ax, x[where], values[where], (below, above))
    events = run.sessions.groupby("lane_id")[["gold_evicted", "gold_below_threshold"]].sum()
    for i, lane_id in enumerate(lanes):
        cap, low = events.loc[lane_id] if lane_id in events.index else (0, 0)
        ax.text(i, values[i], f"{values[i]:.0%}\ncap {int(cap)}, thr {int(low)}",
                ha="center", va="bottom", fontsize=7)  # fmt: skip
    ax.set_xticks(x, _labels(run, lanes), rotation=30, ha="right", fontsize=8)
    ax.set_ylim(0, max(1.0, float(values.max()) * 1.2))
    ax.set_ylabel("active gold lost to cap or threshold (bars: 95% interval)")
    ax.set_title("Eviction regret")
    return fig


def stale_survival_chart(run: Run) -> Figure:
    """Kaplan-Meier survival of retracted facts in memory, per configuration.

    ``P(still held after t session ends)``, from the retracting session's end (``t = 1``) on,
    censored where a replay ended with the fact still held (``scipy.stats.ecdf``, see
    :mod:`memlab.scoring.survival`); the legend gives each configuration's restricted mean
    (``stale_rmst``) with its 95% interval over owners.
    """
    fig = Figure(figsize=(8, 4.2), layout="constrained")
    episodes = _stale_episodes(run)
    if episodes.empty:
        return _empty(fig, "no retracted fact was held in this run")
    ax = fig.subplots()
    lanes = [lane for lane in run.lanes if lane in set(episodes["lane_id"])]
    horizon = max(STALE_HORIZON, int(episodes["sessions"].max()))
    summary = run.summary
    for color, lane_id in zip(_palette(len(lanes)), lanes, strict=True):
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
    ax.legend(fontsize=7)
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
    95% intervals.
    """
    fig = Figure(figsize=(6.5, 4.5), layout="constrained")
    column = "injected_gold_coverage"
    summary = run.summary
    if column not in summary.columns or summary[column].isna().all():
        return _empty(fig, "no injection audit in this run (no next session, or an older run)")
    summary = summary.dropna(subset=[column])
    ax = fig.subplots()
    keys = [k for k in run.grid.varying() if k != "max_injection_tokens"]
    groups = summary.groupby(keys) if keys else [((), summary)]
    for values, group in groups:
        values = values if isinstance(values, tuple) else (values,)
        label = ", ".join(f"{k}={v}" for k, v in zip(keys, values, strict=True)) or "all"
        group = group.sort_values("max_injection_tokens")
        xs = group["max_injection_tokens"].to_numpy(dtype=float)
        ys = group[column].to_numpy(dtype=float)
        (line,) = ax.plot(xs, ys, marker="o", label=_plain(label))
        where, below, above = _error_spans(group, list(group.index), column, list(ys))
        if len(where):
            _error_bars(ax, xs[where], ys[where], (below, above), color=to_hex(line.get_color()))
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("max_injection_tokens")
    ax.set_ylabel("active gold facts injected (bars: 95% interval)")
    ax.set_title("What reaches the agent: injected gold coverage")
    ax.legend(fontsize=7)
    return fig


def tokens_chart(run: Run) -> Figure:
    """Mean prompt and completion tokens per LLM update, per configuration."""
    fig = Figure(figsize=(8, 4.2), layout="constrained")
    calls = run.calls
    if calls.empty:
        return _empty(fig, "no LLM calls in this run")
    means = calls.groupby("lane_id")[["prompt_tokens", "completion_tokens"]].mean()
    means = means.reindex([c for c in run.lanes if c in means.index])
    ax = fig.subplots()
    x = np.arange(len(means))
    ax.bar(x, means["prompt_tokens"], label="prompt")
    ax.bar(x, means["completion_tokens"], bottom=means["prompt_tokens"], label="completion")
    ax.set_xticks(x, _labels(run, list(means.index)), rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("tokens per update (mean)")
    ax.set_title("Token use per update")
    ax.legend(fontsize=8)
    return fig


def _curve_label(run: Run, lane_id: str, keys: list[str]) -> str:
    lane = run.lanes[lane_id]
    dumped = lane.model_dump(mode="json")
    dumped["schema_bounds"] = "on" if lane.schema_bounds else "off"  # not a dict in a legend
    label = _plain(", ".join(f"{k}={dumped[k]}" for k in keys) or "all")
    return f"[simulated] {label}" if is_simulated(lane.backend) else label


def _why_unscored(run: Run) -> str:
    """Why recall and precision are undefined for every configuration: say what is true."""
    summary = run.summary
    if summary.empty:
        return "no configurations in this run"
    recall_known = summary["recall"].notna().any()
    if not recall_known:
        return "the dataset has no labeled facts (recall is undefined)"
    return "no configuration stored a fact (precision is undefined)"


def _palette(n: int) -> list[str]:
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
