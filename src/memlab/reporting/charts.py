"""Charts of a run. Every function returns a :class:`matplotlib.figure.Figure`.

Figures are built with the object API (no pyplot state, never ``plt.show()``), so they work the
same in scripts, reports and notebooks (where a returned Figure renders inline).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from memlab.backends.simulated import is_simulated
from memlab.eval.run import Run

__all__ = [
    "duplication_chart",
    "fact_growth_chart",
    "operating_curve_chart",
    "parse_failure_chart",
    "tokens_chart",
    "violation_heatmap",
]

_OK_COLOR = "#4c9a5b"


def _labels(run: Run, lane_ids: Sequence[str]) -> list[str]:
    return [run.label(lane_id) for lane_id in lane_ids]


def _empty(fig: Figure, message: str) -> Figure:
    ax = fig.subplots()
    ax.text(0.5, 0.5, message, ha="center", va="center", transform=ax.transAxes)
    ax.set_axis_off()
    return fig


def parse_failure_chart(run: Run) -> Figure:
    """Share of replies per lane by parse outcome: failures stacked by category."""
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
    for i, rate in enumerate(1 - ok):
        ax.text(min(rate, 0.82) + 0.01, i, f"{rate:.0%} failed", va="center", fontsize=8)
    ax.set_yticks(y, _labels(run, lanes))
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of LLM replies")
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
    ax.set_yticks(range(len(pivot.index)), list(pivot.index), fontsize=8)
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
            curve.index + 1, curve.to_numpy(), marker="o", markersize=3, label=run.label(lane_id)
        )
        caps.add(run.lanes[lane_id].max_facts)
    # The cap is always drawn: how far the curves stay below it is part of the story.
    for cap in sorted(caps):
        ax.axhline(cap, linestyle="--", color="grey", linewidth=1)
        ax.text(1, cap, f" max_facts={cap}", va="bottom", fontsize=8, color="grey")
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
    """Duplicate stored facts per configuration: exact, normalized, near (and embedding)."""
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
    for k, kind in enumerate(kinds):
        ax.bar(
            x + (k - (len(kinds) - 1) / 2) * width,
            (summary[kind] / facts).fillna(0),
            width,
            label=kind.removeprefix("dup_"),
        )
    ax.set_xticks(x, list(summary["label"]), rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("duplicates / stored facts")
    ax.set_title("Duplication among stored facts")
    ax.legend(fontsize=8)
    return fig


def operating_curve_chart(run: Run) -> Figure:
    """Recall against precision per configuration.

    One line per combination of the run's varying axes other than the threshold (for example
    ``max_facts``), joining its thresholds in increasing order.
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
        ax.plot(group["precision"], group["recall"], marker="o", label=label)
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
    label = ", ".join(f"{k}={dumped[k]}" for k in keys) or "all"
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
