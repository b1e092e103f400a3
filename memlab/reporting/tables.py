"""Comparison tables shared by the HTML and Markdown reports and the gate."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from html import escape
from typing import Any

import pandas as pd

from memlab.core.jsondoc.similarity import (
    NEAR_DUPLICATE_THRESHOLD,
    near_duplicate_score,
    normalize_text,
)
from memlab.datasets.loader import load_dataset
from memlab.memory.designs import DEFAULT_DESIGN
from memlab.reporting.groups import GROUP_TITLES, group_name
from memlab.reporting.markdown import md_escape, md_table_head, md_table_row
from memlab.runs.run import Run
from memlab.scoring.metric_model import MetricSpec
from memlab.scoring.metric_specs import metric_spec, report_specs

__all__ = [
    "MEMORY_METRICS",
    "OPERATION_METRICS",
    "Metric",
    "by_group",
    "compare_table",
    "config_table",
    "fact_diff",
    "memory_table",
    "metric_cells",
    "metric_table_html",
    "metric_table_markdown",
    "metrics_in",
    "operations_table",
    "worst_failures",
]

logger = logging.getLogger(__name__)


Metric = MetricSpec
"""A headline metric (the name reports have used; see :class:`MetricSpec`)."""

OPERATION_METRICS: tuple[str, ...] = (
    "op_add_precision",
    "op_add_recall",
    "op_add_f1",
    "op_adds_correct",
    "op_adds_missed",
    "op_adds_redundant",
    "op_adds_spurious",
    "op_remove_precision",
    "op_remove_recall",
    "op_remove_f1",
    "op_removals_correct",
    "op_removals_missed",
    "op_wrong_removals",
)
"""The report's operations table (see :mod:`memlab.scoring.operations`)."""

MEMORY_METRICS: tuple[str, ...] = (
    "stale_rmst",
    "eviction_regret",
    "injected_gold_coverage",
    "injection_tokens_mean",
    "injection_dropped",
)
"""The report's table of stale facts, eviction regret and what reaches the agent."""


def metrics_in(table: pd.DataFrame, specs: Sequence[MetricSpec] | None = None) -> list[MetricSpec]:
    """The metrics of ``specs`` (default: the report's metric table) that ``table`` (a
    summary or :func:`compare_table`) has."""
    specs = report_specs() if specs is None else specs
    return [metric for metric in specs if metric.column in table.columns]


def _rows(runs: Sequence[Run]) -> pd.DataFrame:
    frames = []
    for run in runs:
        summary = run.summary.reset_index()
        summary.insert(0, "run", run.name)
        summary.insert(1, "group", [group_name(run, str(lane)) for lane in run.summary.index])
        frames.append(summary)
    if not frames:
        return pd.DataFrame()
    rows = pd.concat(frames, ignore_index=True)
    rows["label"] = _disambiguated(rows["label"], rows["prompt"], rows["prompt_sha256"])
    return rows


def _disambiguated(labels: pd.Series, prompts: pd.Series, shas: pd.Series) -> list[str]:
    """Labels, with the prompt's short hash added where one prompt name has several texts."""
    texts: dict[str, set[str]] = {}
    for prompt, sha in zip(prompts, shas, strict=True):
        texts.setdefault(str(prompt), set()).add(str(sha))
    return [
        f"{label} [{prompt} {sha}]" if len(texts[str(prompt)]) > 1 else str(label)
        for label, prompt, sha in zip(labels, prompts, shas, strict=True)
    ]


def config_table(runs: Sequence[Run]) -> tuple[pd.DataFrame, list[str]]:
    """Every lane's config side by side (with each prompt's short content hash), and the
    config fields that differ between lanes."""
    rows = []
    for run in runs:
        for lane_id, lane in run.lanes.items():
            rows.append(
                {
                    "run": run.name,
                    "lane": run.label(lane_id),
                    **lane.model_dump(mode="json"),
                    "prompt_sha256": run.prompt_sha(lane_id),
                }
            )
    table = pd.DataFrame(rows)
    if "memory" in table.columns:  # the lane dumps leave out the default memory design
        table["memory"] = table["memory"].fillna(DEFAULT_DESIGN)
    if not table.empty:
        table["lane"] = _disambiguated(table["lane"], table["prompt"], table["prompt_sha256"])
    fields = [c for c in table.columns if c not in {"run", "lane"}]
    changed = [c for c in fields if table[c].astype(str).nunique() > 1]
    return table, changed


def compare_table(runs: Sequence[Run], specs: Sequence[MetricSpec] | None = None) -> pd.DataFrame:
    """Headline metrics per (run, lane) with deltas against each group's baseline.

    Real and simulated lanes are apart (``group``, :mod:`memlab.reporting.groups`): deltas
    are against the first row of the row's group and the best value is the best of its
    group, so the simulated model is never ranked against a real one.

    Columns: ``run``, ``group`` (``real`` or ``simulated``), ``lane``, then for each metric of
    ``specs`` (default: the report's metric table) that the runs have, its value,
    ``<col>_delta`` and ``<col>_best`` (True where the value is the best of its group).
    """
    rows = _rows(runs)
    if rows.empty:
        return rows
    out = rows[["run", "group", "label"]].rename(columns={"label": "lane"}).copy()
    groups = rows["group"]
    for metric in report_specs() if specs is None else specs:
        if metric.column not in rows.columns:
            continue
        values = pd.to_numeric(rows[metric.column], errors="coerce")
        out[metric.column] = values
        baseline = values.groupby(groups).transform(lambda part: part.iloc[0])
        out[f"{metric.column}_delta"] = values - baseline
        out[f"{metric.column}_best"] = (
            values.groupby(groups)
            .transform(lambda part, metric=metric: _best(part, metric))
            .astype(bool)
        )
    return out


def _best(values: pd.Series, metric: MetricSpec) -> pd.Series:
    """Where ``values`` (one group's) hold the best value; none when every row ties."""
    valid = values.dropna()
    if not metric.ranked or valid.nunique() <= 1:
        return pd.Series(False, index=values.index)
    best = valid.max() if metric.higher_is_better else valid.min()
    found: pd.Series = values == best
    return found


def metric_cells(
    table: pd.DataFrame, specs: Sequence[MetricSpec], *, markdown: bool
) -> list[list[str]]:
    """Display cells of one group of a :func:`compare_table`: values, deltas against the
    first row (HTML spans or Markdown text) and the best value's star, one list per row."""
    rows = []
    for i in range(len(table)):
        cells = []
        for metric in specs:
            value = table[metric.column].iloc[i]
            text = metric.fmt(value)
            delta = table[f"{metric.column}_delta"].iloc[i]
            if i > 0 and pd.notna(delta) and delta != 0:
                # Rates change in points (+6.2 pts), as in every other table.
                shown = metric.fmt_delta(float(delta))
                text += f" ({shown})" if markdown else f' <span class="delta">{shown}</span>'
            if bool(table[f"{metric.column}_best"].iloc[i]) and len(table) > 1:
                text = f"**{text}** ★" if markdown else f"{text} ★"
            cells.append(text)
        rows.append(cells)
    return rows


def by_group(table: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """A :func:`compare_table` split into its groups (real first), each with a fresh index;
    the title is "" when the table has one group."""
    if "group" not in table.columns or table.empty:
        return [("", table.reset_index(drop=True))]
    names = list(dict.fromkeys(table["group"]))
    return [
        (GROUP_TITLES.get(name, name) if len(names) > 1 else "", part.reset_index(drop=True))
        for name, part in ((n, table[table["group"] == n]) for n in names)
    ]


def metric_table_html(
    table: pd.DataFrame, specs: Sequence[MetricSpec], *, mark_best: bool = False
) -> str:
    """HTML tables of :func:`metric_cells`, one per group: run, configuration, one column
    per metric.

    ``mark_best`` also highlights the best cell of each column (the star is always there).
    """
    head = "<th>run</th><th>configuration</th>" + "".join(
        f"<th>{escape(spec.title)}</th>" for spec in specs
    )
    tables = []
    for title, part in by_group(table):
        body = []
        for i, cells in enumerate(metric_cells(part, specs, markdown=False)):
            tds = [
                f"<td>{escape(str(part['run'].iloc[i]))}</td>",
                f"<td>{escape(str(part['lane'].iloc[i]))}</td>",
            ]
            for spec, text in zip(specs, cells, strict=True):
                best = mark_best and bool(part[f"{spec.column}_best"].iloc[i]) and len(part) > 1
                # text holds only formatted numbers and our own span markup.
                tds.append(f"<td class='num{' best' if best else ''}'>{text}</td>")
            body.append("<tr>" + "".join(tds) + "</tr>")
        caption = f"<caption>{escape(title)}</caption>" if title else ""
        tables.append(
            f"<table>{caption}<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
        )
    return "\n".join(tables)


def metric_table_markdown(table: pd.DataFrame, specs: Sequence[MetricSpec]) -> list[str]:
    """The Markdown lines of :func:`metric_table_html`'s tables."""
    lines: list[str] = []
    for title, part in by_group(table):
        if title:
            lines += ([""] if lines else []) + [f"**{title}**", ""]
        lines += md_table_head(["run", "configuration", *(spec.title for spec in specs)])
        for i, cells in enumerate(metric_cells(part, specs, markdown=True)):
            run, lane = md_escape(str(part["run"].iloc[i])), md_escape(str(part["lane"].iloc[i]))
            lines.append(md_table_row([run, lane, *cells]))
    return lines


def operations_table(runs: Sequence[Run]) -> pd.DataFrame:
    """:func:`compare_table` of the operation metrics (:data:`OPERATION_METRICS`)."""
    return compare_table(runs, [metric_spec(column) for column in OPERATION_METRICS])


def memory_table(runs: Sequence[Run]) -> pd.DataFrame:
    """:func:`compare_table` of stale survival, eviction regret and the injection audit."""
    return compare_table(runs, [metric_spec(column) for column in MEMORY_METRICS])


_FAILURE_COLUMNS = [
    "run",
    "lane",
    "user_id",
    "session_index",
    "parse_category",
    "error",
    "reply",
    "conversation",
]


def worst_failures(
    runs: Sequence[Run], per_lane: int = 3, conversation_chars: int = 1500
) -> pd.DataFrame:
    """Failed parses with their raw replies, most violations first, ``per_lane`` per lane.

    The ``conversation`` column holds the end of the session's dataset messages (at most
    ``conversation_chars`` characters) when the run's dataset file is still readable, else "".
    """
    frames = []
    for run in runs:
        calls = run.calls
        if calls.empty or "parse_ok" not in calls:
            continue
        failed = calls[calls["reply"].notna() & ~calls["parse_ok"].astype(bool)].copy()
        if failed.empty:
            continue
        failed["run"] = run.name
        failed["lane"] = [run.label(x) for x in failed["lane_id"]]
        failed = failed.sort_values(["lane_id", "n_violations"], ascending=[True, False])
        # One entry per distinct reply of a lane (a retried update repeats it), and the
        # error without the category the table shows beside it ("truncated: truncated: ...").
        failed = failed.drop_duplicates(["lane_id", "reply"])
        failed = failed.groupby("lane_id").head(per_lane)
        failed["error"] = [
            _without_prefix(str(error), f"{category}: ")
            for error, category in zip(failed["error"], failed["parse_category"], strict=True)
        ]
        texts = _conversations(run, conversation_chars)
        failed["conversation"] = [
            texts.get((str(user), str(thread)), "")
            for user, thread in zip(failed["user_id"], failed["thread_id"], strict=True)
        ]
        frames.append(failed)
    if not frames:
        return pd.DataFrame(columns=_FAILURE_COLUMNS)
    return pd.concat(frames, ignore_index=True)[_FAILURE_COLUMNS]


def _without_prefix(text: str, prefix: str) -> str:
    return text[len(prefix) :] if text.startswith(prefix) else text


_SPEAKER = {"human": "User", "ai": "Assistant"}


def _conversations(run: Run, limit: int) -> dict[tuple[str, str], str]:
    """``(user_id, thread_id)`` -> the session's human and AI text, cut to its last ``limit``."""
    path = run.dataset_path
    if path is None:
        return {}
    try:
        owners = load_dataset(path)
    except (OSError, ValueError) as exc:
        logger.warning("%s: cannot read the run's dataset %s: %s", run.path, path, exc)
        return {}
    out: dict[tuple[str, str], str] = {}
    for owner in owners:
        for session in owner.sessions:
            lines = [
                f"{_SPEAKER[m.role]}: {m.text}"
                for m in session.messages
                if m.role in _SPEAKER and not m.tool_calls
            ]
            text = "\n".join(lines)
            if len(text) > limit:
                text = "..." + text[-limit:]
            out[(owner.user_id, session.thread_id)] = text
    return out


def fact_diff(
    a: Run, lane_a: str, b: Run, lane_b: str, near_threshold: float = NEAR_DUPLICATE_THRESHOLD
) -> pd.DataFrame:
    """Fact-level diff of two lanes' final memories, per owner.

    Each row is a fact with ``side`` = ``only_a``, ``only_b`` or ``near`` (a pair of facts,
    one on each side, whose texts differ but are near-duplicates).
    """
    facts_a, facts_b = a.final_facts(lane_a), b.final_facts(lane_b)
    owners = sorted(set(_column(facts_a, "user_id")) | set(_column(facts_b, "user_id")))
    by_a, by_b = _contents_by_owner(facts_a), _contents_by_owner(facts_b)
    rows: list[dict[str, Any]] = []
    for owner in owners:
        texts_a, texts_b = by_a.get(owner, []), by_b.get(owner, [])
        norm_b = {normalize_text(t) for t in texts_b}
        norm_a = {normalize_text(t) for t in texts_a}
        rest_a = [t for t in texts_a if normalize_text(t) not in norm_b]
        rest_b = [t for t in texts_b if normalize_text(t) not in norm_a]
        paired_b: set[int] = set()
        for text in rest_a:
            match = next(
                (
                    j
                    for j, other in enumerate(rest_b)
                    if j not in paired_b and near_duplicate_score(text, other) >= near_threshold
                ),
                None,
            )
            if match is None:
                rows.append({"user_id": owner, "side": "only_a", "fact_a": text, "fact_b": ""})
            else:
                paired_b.add(match)
                rows.append(
                    {"user_id": owner, "side": "near", "fact_a": text, "fact_b": rest_b[match]}
                )
        for j, text in enumerate(rest_b):
            if j not in paired_b:
                rows.append({"user_id": owner, "side": "only_b", "fact_a": "", "fact_b": text})
    return pd.DataFrame(rows, columns=["user_id", "side", "fact_a", "fact_b"])


def _contents_by_owner(facts: pd.DataFrame) -> dict[Any, list[str]]:
    """Each owner's fact texts in table order, in one pass (a mask per owner was quadratic)."""
    grouped: dict[Any, list[str]] = {}
    if facts.empty:
        return grouped
    pairs = zip(_column(facts, "user_id"), _column(facts, "content"), strict=True)
    for owner, content in pairs:
        grouped.setdefault(owner, []).append(str(content))
    return grouped


def _column(frame: pd.DataFrame, name: str) -> Any:
    """The values of ``frame[name]`` as Python objects (none when the column is missing):
    iterating a column of pandas' string type boxes each value one by one."""
    return frame[name].to_numpy(dtype=object) if name in frame.columns else []
