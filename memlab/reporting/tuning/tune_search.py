"""What every candidate of a search shares, and how a candidate is scored.

A :class:`Search` holds the grid, the ``tune:`` spec, the owner split, the candidate prompts and
the budgets; :meth:`Search.replay` replays a candidate's settings as a one-lane run on some
owners (through :func:`memlab.sweep`, so cached and content-addressed like any lane) and counts
what it spent. :func:`owner_metrics` reads a run's metrics over some owners, :func:`signed_score`
turns them into the signed objective (higher is better; :data:`INFEASIBLE` when a limit is
passed) and :func:`owner_scores` gives each owner's. :func:`memlab.reporting.tuning.tune.tune`
runs the search.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memlab.backends.costs.spend import CostLimitError
from memlab.core.prompt_template import PromptVariant
from memlab.grids.grid import Grid
from memlab.reporting.compare.trial import sweep_prompt
from memlab.reporting.tuning.tune_budget import CallBudget, sent_before, sent_by
from memlab.reporting.tuning.tune_evolve import EvolvedPrompt
from memlab.reporting.tuning.tune_reflect import Reflection
from memlab.reporting.tuning.tune_result import COST_COLUMNS
from memlab.reporting.tuning.tune_space import ANSWER_PROMPT, answer_prompts, place, start_value
from memlab.reporting.tuning.tune_spec import Objective, OwnerSplit, TuneSpec
from memlab.runs.run import Run
from memlab.scoring.inference.stats import StatOptions
from memlab.scoring.metrics import summarize
from memlab.sweeps.driver import sweep

__all__ = ["INFEASIBLE", "Search", "as_number", "owner_metrics", "owner_scores", "signed_score"]

INFEASIBLE = -2.0  # below any signed rate: a candidate over a limit never wins


@dataclass
class Search:
    """What every candidate's replay shares."""

    grid: Grid
    spec: TuneSpec
    split: OwnerSplit
    prompts: dict[str, PromptVariant]
    path: Path
    sweep_options: dict[str, Any]
    max_cost: float | None
    spent: float = 0.0
    """USD the search's replays spent (the finished candidates' before a resume)."""
    evolved: list[EvolvedPrompt] = field(default_factory=list)
    evolution_cost: dict[str, float] = field(
        default_factory=lambda: dict.fromkeys(COST_COLUMNS, 0.0)
    )
    """:data:`COST_COLUMNS` of the evolution's replays (this call's)."""
    reflection: Reflection | None = None
    """The evolution's reflection model, its calls counted (this call's)."""
    calls: CallBudget | None = None
    """The calls and tokens sent to the model, within their budgets."""

    def settings(self, params: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str] | None]:
        """The lane settings of a candidate and the prompt it needs besides the built-ins."""
        settings = {**self.grid.base, **{k: v for k, v in params.items() if k != "prompt"}}
        extra = None
        if "prompt" in params:
            replayed, extra = sweep_prompt(self.prompts[params["prompt"]])
            settings["prompt"] = replayed.name
        return settings, extra

    def replay(
        self, params: Mapping[str, Any], owners: Sequence[str], where: Path, name: str
    ) -> Run:
        """``params`` replayed on ``owners`` as the one-lane run ``where/name``."""
        settings, extra = self.settings(params)
        settings, qa = place(self.grid, settings, params)
        data = self.grid.model_dump(mode="json", exclude_none=True)
        data.update(name=name, owners=list(owners), base=settings, axes={})
        if qa is not None:
            data["qa"] = qa
        if "prompt" in params:  # the candidate's prompt is passed in, named as replayed
            data["prompts"] = []
        data.pop("max_owners", None)
        grid = Grid.from_mapping(data, self.grid.source, base_dir=self.grid.base_dir)
        left = None if self.max_cost is None else self.max_cost - self.spent
        if left is not None and left <= 0:
            raise CostLimitError(self.spent, self.max_cost or 0.0, 1, f"replays ({name})")
        before = None
        if self.calls is not None:
            self.calls.check(f"the replay {name}")
            before = sent_before(where / name, owners)
        run = sweep(
            grid.dataset, grid, runs_dir=where, prompts=extra, max_cost=left, **self.sweep_options
        )
        self.spent += as_number(owner_metrics(run, owners, ["cost_usd"])["cost_usd"])
        if self.calls is not None:
            self.calls.add(sent_by(run.calls, owners), before)
        return run

    def start(self) -> dict[str, Any]:
        """The starting configuration's searched settings."""
        params: dict[str, Any] = {}
        for name in self.spec.ranges():
            params[name] = start_value(self.grid.lanes()[0], name)
        if self.prompts:
            params["prompt"] = next(iter(self.prompts))
        answers = answer_prompts(self.grid, self.spec)
        if answers:
            params[ANSWER_PROMPT] = answers[0]
        return params


def as_number(value: Any) -> float:
    """A count or price as a number (0 when absent: a backend without a declared price)."""
    try:
        found = float(value)
    except (TypeError, ValueError):
        return 0.0
    return 0.0 if math.isnan(found) else found


def owner_metrics(run: Run, owners: Sequence[str], columns: Sequence[str]) -> dict[str, float]:
    """``columns`` of ``run``'s one lane over ``owners`` (no intervals: a point estimate)."""
    keep = set(owners)
    calls, sessions = run.calls, run.sessions
    summary = summarize(
        calls[calls["user_id"].isin(keep)] if not calls.empty else calls,
        sessions[sessions["user_id"].isin(keep)],
        prices=run.prices,
        options=StatOptions(resamples=0),
    )
    if summary.empty:
        return dict.fromkeys(columns, math.nan)
    row = summary.iloc[0]
    return {c: float(row[c]) if c in row and row[c] is not None else math.nan for c in columns}


def signed_score(values: Mapping[str, float], objective: Objective) -> tuple[float, bool]:
    """The signed objective (higher is better) and whether every limit holds."""
    value = values[objective.metric]
    over = [m for m, top in objective.max.items() if not values.get(m, math.nan) <= top]
    if math.isnan(value) or over:
        return INFEASIBLE, False
    return (value if objective.higher_is_better else -value), True


def owner_scores(
    run: Run, owners: Sequence[str], objective: Objective, columns: Sequence[str]
) -> dict[str, float]:
    """Each owner's signed objective (0 where undefined); every owner's is the infeasible
    score when the owners together pass a limit."""
    _, feasible = signed_score(owner_metrics(run, owners, columns), objective)
    out = {}
    for owner in owners:
        value = owner_metrics(run, [owner], [objective.metric])[objective.metric]
        signed = value if objective.higher_is_better else -value
        out[owner] = INFEASIBLE if not feasible else (0.0 if math.isnan(signed) else signed)
    return out
