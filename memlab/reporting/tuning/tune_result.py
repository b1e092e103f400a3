"""The outcome of :func:`memlab.reporting.tuning.tune.tune`: the split, every candidate's
scores, the winner, the held-out verdicts, the train-vs-test gaps, the overfitting flag and
the search's cost, as text (:meth:`TuneResult.lines`) and as ``tune.json``
(:meth:`TuneResult.as_json`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memlab.core.prompt_template import PromptVariant
from memlab.reporting.compare.prompt_ab import ABResult
from memlab.reporting.tuning.tune_evolve import EvolvedPrompt, evolution_lines, evolution_record
from memlab.reporting.tuning.tune_report import COST_COLUMNS, Overfit, cost_text
from memlab.reporting.tuning.tune_spec import Objective, OwnerSplit
from memlab.scoring.metric_specs import metric_spec

__all__ = ["COST_COLUMNS", "TuneResult"]


@dataclass
class TuneResult:
    """The outcome of :func:`tune`.

    Attributes:
        path: The tune directory.
        split: The owners of each part.
        objective: What the search improved.
        start: The starting configuration's searched settings (prompt by its label).
        best: The winner's.
        trials: One row per candidate: number, settings, train and validation metrics.
        heldout: The paired comparison of start and winner on the test owners.
        train: Primary metrics of start and winner on the train owners (``{"start": ...}``).
        cost: :data:`COST_COLUMNS` summed over the search's replays and reflection calls.
        evolved: The prompts evolution kept (empty without ``tune.evolve``).
        reflector: The reflection model's spec (``None`` without ``tune.evolve``).
        overfit: The overfitting flag (:func:`memlab.reporting.tuning.tune_report.overfit`),
            or None.
        prompts: The candidate prompts by label, the starting prompt first (empty: the search
            varies none).
        reflection_cost: :data:`COST_COLUMNS` of the reflection calls, part of ``cost``
            (``None`` without ``tune.evolve``).
    """

    path: Path
    split: OwnerSplit
    objective: Objective
    start: dict[str, Any]
    best: dict[str, Any]
    trials: list[dict[str, Any]]
    heldout: ABResult = field(repr=False)
    train: dict[str, dict[str, float]]
    cost: dict[str, float]
    evolved: list[EvolvedPrompt] = field(default_factory=list)
    reflector: str | None = None
    prompts: dict[str, PromptVariant] = field(default_factory=dict, repr=False)
    overfit: Overfit | None = None
    reflection_cost: dict[str, float] | None = None

    @property
    def templates(self) -> dict[str, str]:
        """The candidate prompts' templates by label, the starting prompt's included."""
        return {label: variant.template for label, variant in self.prompts.items()}

    def verdict(self, metric: str) -> str:
        """The held-out verdict's outcome for ``metric`` (``better``, ``no difference``...)."""
        return next(v.outcome for v in self.heldout.verdicts if v.metric == metric)

    def gaps(self) -> list[tuple[str, float, float, float]]:
        """Per primary metric: the winner on train, on test, and train minus test."""
        test = self.heldout.candidate.summary.iloc[0]
        rows = []
        for metric, value in self.train["best"].items():
            if metric in test and not math.isnan(float(test[metric])):
                rows.append((metric, value, float(test[metric]), value - float(test[metric])))
        return rows

    def lines(self) -> list[str]:
        """The search as text: split, candidates, winner, gaps, cost, then the verdicts."""
        out = [self.split.text(), _objective_text(self.objective), ""]
        out.append(f"{len(self.trials)} candidates (train / validation {self.objective.metric}):")
        for row in self.trials:
            mark = " <- best" if row["params"] == self.best else ""
            out.append(
                f"  #{row['number']:<3} {_params_text(row['params'])}: "
                f"{_fmt(self.objective.metric, row['train'])} / "
                f"{_fmt(self.objective.metric, row['validation'])}"
                f"{'' if row['feasible'] else ' (over a limit)'}{mark}"
            )
        out += evolution_lines(self.evolved, self.prompts, self.reflector)
        out += ["", f"start: {_params_text(self.start)}", f"best:  {_params_text(self.best)}", ""]
        out.append("train-vs-test gap of the best candidate (train -> held-out test):")
        for metric, train, test, gap in self.gaps():
            spec = metric_spec(metric)
            out.append(f"  {spec.title}: {spec.fmt(train)} -> {spec.fmt(test)} "
                       f"(gap {spec.fmt_delta(gap)})")  # fmt: skip
        if self.overfit is not None:
            out.append(self.overfit.text())
        out += ["", "search cost: " + cost_text(self.cost), *self.cost_parts(), ""]
        out.append("held-out test, start -> best:")
        return out + self.heldout.lines()

    def cost_parts(self) -> list[str]:
        """With evolution, the cost's two lines: the replays and the reflection calls."""
        if self.reflection_cost is None:
            return []
        replays = {k: v - self.reflection_cost.get(k, 0.0) for k, v in self.cost.items()}
        return [f"  replays: {cost_text(replays)}",
                f"  reflection: {cost_text(self.reflection_cost)}"]  # fmt: skip

    def as_json(self) -> dict[str, Any]:
        """What ``tune.json`` keeps (with evolution: each candidate prompt's hash, file and
        parent, and the reflector)."""
        found = {
            "split": {
                "seed": self.split.seed,
                "train": list(self.split.train),
                "validation": list(self.split.validation),
                "test": list(self.split.test),
            },
            "objective": self.objective.model_dump(),
            "start": self.start,
            "best": self.best,
            "trials": self.trials,
            "train": self.train,
            "gaps": {m: {"train": a, "test": b, "gap": g} for m, a, b, g in self.gaps()},
            "heldout": {v.metric: v.outcome for v in self.heldout.verdicts},
            "cost": self.cost,
            "overfit": None if self.overfit is None else self.overfit.as_json(),
        }
        if self.reflector is not None:
            found["evolution"] = evolution_record(self.evolved, self.prompts, self.reflector)
            found["reflection_cost"] = self.reflection_cost
        return found


def _fmt(metric: str, values: Mapping[str, float]) -> str:
    value = values.get(metric, math.nan)
    return "-" if math.isnan(value) else metric_spec(metric).fmt(value)


def _params_text(params: Mapping[str, Any]) -> str:
    return ", ".join(
        f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in params.items()
    )


def _objective_text(objective: Objective) -> str:
    way = "maximise" if objective.higher_is_better else "minimise"
    limits = "".join(f", {m} <= {v:g}" for m, v in objective.max.items())
    return f"objective: {way} {objective.metric} on train{limits}; best chosen on validation"
