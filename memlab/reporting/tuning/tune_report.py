"""What a search's result says beyond its verdicts: the overfitting flag and the report.

**Overfitting.** The winner of a search is *overfit* when, on the objective's metric, it
differs from the starting configuration, its gain over the start on the train owners is
positive, the held-out verdict is not ``better``, and the train gain exceeds the upper end of
the held-out interval of the gain (the paired interval of ``memlab ab``; when no held-out owner
changed, the held-out gain itself, zero). Gains are signed in the objective's direction (a drop
of a rate to minimise is a gain). Such a winner's train score came from the training owners,
not from the configuration: the held-out owners rule out a gain as large. :func:`overfit`
applies the rule; :class:`Overfit` states it.

**The report** (:func:`report_markdown`, written as ``tune-report.md`` in the tune directory):
the search's summary as ``memlab tune`` prints it, the search's cost (with evolution, the
replays' and the reflection calls' apart), then per candidate its
settings, its train and validation scores, its cost, and a unified diff of its prompt against
the starting prompt.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from memlab.reporting.compare.prompt_ab import ABResult
from memlab.reporting.tuning.tune_spec import Objective
from memlab.scoring.metric_specs import metric_spec

__all__ = [
    "COST_COLUMNS",
    "TUNE_REPORT",
    "Overfit",
    "SearchResult",
    "cost_text",
    "overfit",
    "prompt_diff",
    "report_markdown",
]

COST_COLUMNS = ("llm_calls", "cache_hits", "prompt_tokens", "completion_tokens", "cost_usd")
"""What a search's cost adds up over its candidates' replays and its reflection calls."""

TUNE_REPORT = Path("tune-report.md")
"""The report's file in the tune directory."""


@dataclass(frozen=True)
class Overfit:
    """A winner better on train than the held-out owners allow (see the module docstring).

    Attributes:
        metric: The objective's metric.
        train_gain: The winner's gain over the start on the train owners (objective's sign).
        heldout_high: The upper end of the held-out interval of the same gain.
        verdict: The held-out verdict of the metric (never ``better``).
    """

    metric: str
    train_gain: float
    heldout_high: float
    verdict: str

    def text(self) -> str:
        """``overfit: better on train by +12.0 pts (recall), no gain on held-out owners (...)``
        (gains in the objective's direction: a drop of a rate to minimise is a positive
        gain)."""
        spec = metric_spec(self.metric)
        way = "" if spec.higher_is_better else ", lower is better"
        return (
            f"overfit: better on train by {spec.fmt_delta(self.train_gain)} "
            f"({spec.title}{way}), no gain on held-out owners (held-out verdict "
            f"{self.verdict}; its interval allows at most {spec.fmt_delta(self.heldout_high)})"
        )

    def as_json(self) -> dict[str, float | str]:
        """What ``tune.json`` keeps under ``overfit``."""
        return {
            "metric": self.metric,
            "train_gain": self.train_gain,
            "heldout_high": self.heldout_high,
            "verdict": self.verdict,
        }


def _heldout_high(heldout: ABResult, metric: str, higher_is_better: bool) -> float:
    """The upper end of the held-out gain's interval (objective's sign); NaN when unknown."""
    table = heldout.table
    rows = table[(table["metric"] == metric) & (table["role"] == "primary")]
    if rows.empty:
        return math.nan
    row = rows.iloc[0]
    bound = float(row["delta_hi"] if higher_is_better else row["delta_lo"])
    if math.isnan(bound):  # no interval (no owner changed): the difference itself
        bound = float(row["delta"])
    return bound if higher_is_better else -bound


def overfit(
    objective: Objective,
    train: Mapping[str, Mapping[str, float]],
    heldout: ABResult,
    changed: bool,
) -> Overfit | None:
    """The overfitting flag of a search (see the module docstring), or None.

    Args:
        objective: What the search improved.
        train: Primary metrics of ``start`` and ``best`` on the train owners.
        heldout: The paired comparison of start and winner on the held-out owners.
        changed: Whether the winner differs from the starting configuration.
    """
    metric = objective.metric
    start, best = train.get("start", {}), train.get("best", {})
    if not changed or metric not in start or metric not in best:
        return None
    sign = 1.0 if objective.higher_is_better else -1.0
    gain = sign * (float(best[metric]) - float(start[metric]))
    verdict = next((v.outcome for v in heldout.verdicts if v.metric == metric), "")
    high = _heldout_high(heldout, metric, objective.higher_is_better)
    if math.isnan(gain) or gain <= 0 or verdict in ("better", "") or math.isnan(high):
        return None
    return Overfit(metric, gain, high, verdict) if gain > high else None


class SearchResult(Protocol):
    """What the report reads of a search's result
    (:class:`memlab.reporting.tuning.tune.TuneResult`)."""

    path: Path
    objective: Objective
    start: dict[str, Any]
    best: dict[str, Any]
    trials: list[dict[str, Any]]
    cost: dict[str, float]

    @property
    def templates(self) -> dict[str, str]: ...

    def cost_parts(self) -> list[str]: ...

    def lines(self) -> list[str]: ...


def prompt_diff(start: str, start_label: str, text: str, label: str) -> list[str]:
    """The unified diff of the prompt ``text`` against the starting prompt (empty: equal)."""
    return list(
        difflib.unified_diff(start.splitlines(), text.splitlines(), start_label, label, lineterm="")
    )


def _settings(params: Mapping[str, Any]) -> str:
    return ", ".join(f"`{k}` = {v:g}" if isinstance(v, float) else f"`{k}` = {v}"
                     for k, v in params.items()) or "the starting configuration"  # fmt: skip


def _scores(row: Mapping[str, Any], metrics: Sequence[str]) -> list[str]:
    out = ["| metric | train | validation |", "|---|---|---|"]
    for metric in metrics:
        spec = metric_spec(metric)
        train, valid = row["train"].get(metric, math.nan), row["validation"].get(metric, math.nan)
        out.append(f"| {spec.title} | {spec.fmt(train)} | {spec.fmt(valid)} |")
    return out


def cost_text(cost: Mapping[str, Any]) -> str:
    """``338 calls (0 from the cache), 574900 prompt + 49031 completion tokens, $0.0000``
    (an absent or undefined count is 0)."""

    def number(key: str) -> float:
        value = cost.get(key)
        return float(value) if isinstance(value, int | float) and not math.isnan(value) else 0.0

    return (
        f"{number('llm_calls'):.0f} calls ({number('cache_hits'):.0f} from the cache), "
        f"{number('prompt_tokens'):.0f} prompt + {number('completion_tokens'):.0f} completion "
        f"tokens, ${number('cost_usd'):.4f}"
    )


def _candidate(result: SearchResult, row: Mapping[str, Any], metrics: Sequence[str]) -> list[str]:
    params = row["params"]
    marks = [m for m, same in (("start", result.start), ("best", result.best)) if params == same]
    title = f"### #{row['number']}" + (f" ({', '.join(marks)})" if marks else "")
    out = [title, "", f"Settings: {_settings(params)}.", ""]
    out += _scores(row, metrics)
    feasible = "" if row["feasible"] else " Over a limit of the objective: never the winner."
    out += ["", f"Cost: {cost_text(row['cost'])}.{feasible}", ""]
    start_label = str(result.start.get("prompt", ""))
    label = str(params.get("prompt", start_label))
    if not result.templates or label == start_label:
        return [*out, "Prompt: the starting prompt.", ""]
    diff = prompt_diff(result.templates[start_label], start_label, result.templates[label], label)
    if not diff:
        return [*out, f"Prompt: `{label}`, the same text as the starting prompt.", ""]
    return [*out, f"Prompt `{label}` against the starting prompt `{start_label}`:", "",
            "```diff", *diff, "```", ""]  # fmt: skip


def report_markdown(result: SearchResult) -> str:
    """The search as Markdown (see the module docstring)."""
    metrics = [result.objective.metric]
    for row in result.trials:  # a metric no candidate has (QA without QA) is left out
        metrics += [m for m, v in row["train"].items() if m not in metrics and not math.isnan(v)]
    out = [f"# Search {result.path.name}", "", "```", *result.lines(), "```", ""]
    out += ["## Search cost", "", f"{len(result.trials)} candidates: {cost_text(result.cost)}.", ""]
    parts = [f"- {line.strip()}" for line in result.cost_parts()]
    out += [*parts, ""] if parts else []
    out += ["## Candidates", ""]
    for row in result.trials:
        out += _candidate(result, row, metrics)
    return "\n".join(out).rstrip("\n") + "\n"
