"""Search prompts and settings on some owners, then prove the winner on owners it never saw.

:func:`tune` reads a one-lane grid with a ``tune:`` key (:mod:`memlab.reporting.tuning.tune_spec`),
splits its owners (seeded) into train, validation and a held-out test set, and searches the
space with Optuna. Every candidate is an ordinary lane replayed by :func:`memlab.sweep` on the
train and validation owners (cached and content-addressed like any lane; its run lies in the
tune directory's ``trials/``). The sampler sees the train score; the winner is the feasible
candidate best on validation. The starting configuration, and each candidate prompt at the
starting settings, are tried first. What every candidate's replay shares, and how a candidate
is scored, are :mod:`memlab.reporting.tuning.tune_search`'s.

With ``tune.evolve``, GEPA first evolves the starting update prompt from the failure records
of its replays on the train owners (:mod:`memlab.reporting.tuning.tune_evolve`); the prompts
it keeps join the candidates (tried first at the starting settings, like listed prompts),
each with its parent, and its replays lie in ``evolve/``. The reflection model's calls go
through the same response cache and count in the search's cost and budgets
(:mod:`memlab.reporting.tuning.tune_reflect`).

The winner and the starting configuration are then replayed on the held-out owners and
compared paired (:func:`memlab.reporting.compare.prompt_ab.judge_ab`: one verdict per primary
metric, with every inconclusive reason). The result states the split, the train-vs-test gap per
metric and what the search cost.

Layout of ``RUNS_DIR/NAME/``: ``study.db`` (the Optuna study, SQLite: a rerun resumes it and
``optuna-dashboard sqlite:///RUNS_DIR/NAME/study.db`` shows it), ``trials/trial-NNN/`` (one
run per candidate), ``heldout-start/`` and ``heldout-best/`` (the proof),
``tune-report.md`` (:mod:`memlab.reporting.tuning.tune_report`) and ``tune.json`` (the result,
written last).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlab.backends.caching.cache import CacheMode
from memlab.core.base.safe_names import safe_component
from memlab.core.pipeline.llm import Backend
from memlab.core.prompt_template import PromptVariant
from memlab.core.prompts import PromptRegistry, resolve_prompt
from memlab.datasets.loader import load_dataset
from memlab.errors import MemlabError
from memlab.grids.grid import Grid
from memlab.grids.owners import select_owners
from memlab.matching.base import FactMatcher
from memlab.matching.matchers import default_matcher
from memlab.reporting.compare.prompt_ab import judge_ab
from memlab.reporting.compare.trial import sweep_prompt
from memlab.reporting.tuning.tune_budget import (
    SENT,
    CallBudget,
    Clock,
    TimeBudget,
    TimeLimitError,
)
from memlab.reporting.tuning.tune_evolve import (
    TuneAdapter,
    evolve,
    prompt_label,
    reflector,
    write_prompts,
)
from memlab.reporting.tuning.tune_reflect import Reflection
from memlab.reporting.tuning.tune_report import (
    TUNE_REPORT,
    overfit,
    report_markdown,
)
from memlab.reporting.tuning.tune_result import COST_COLUMNS, TuneResult
from memlab.reporting.tuning.tune_search import (
    INFEASIBLE,
    Search,
    as_number,
    owner_metrics,
    owner_scores,
    signed_score,
)
from memlab.reporting.tuning.tune_space import (
    ANSWER_PROMPT,
    answer_prompts,
    check_space,
    start_value,
)
from memlab.reporting.tuning.tune_spec import (
    NUMERIC_SETTINGS,
    Evolve,
    Objective,
    TuneSpec,
    load_tune,
    split_owners,
)
from memlab.runs.run import Run
from memlab.runs.rundir import TUNE_RESULT, TUNE_STUDY, TUNE_TRIALS, RunDir
from memlab.scoring.metric_specs import primary_metrics
from memlab.sweeps.grid_check import dataset_path

if TYPE_CHECKING:
    import optuna

__all__ = ["COST_COLUMNS", "TuneError", "TuneResult", "tune"]


logger = logging.getLogger(__name__)


class TuneError(MemlabError, ValueError):
    """A search cannot start or resume as asked.

    Attributes:
        path: The tune directory.
        problem: What is wrong and how to fix it.
    """

    def __init__(self, path: Path, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}")


def _evolve(
    search: Search, columns: Sequence[str], matcher: FactMatcher | None,
    stand_in: Backend | None, budget: TimeBudget, wanted: int,
) -> None:  # fmt: skip
    """Evolve the starting prompt (``tune.evolve``); the prompts kept join the candidates.
    ``stand_in`` answers for the reflect backend; a refused reflection call stops as the time
    or cost budget stops a candidate."""
    options = search.spec.evolve
    assert options is not None
    objective = search.spec.objective
    where = search.path / "evolve"
    search.reflection = Reflection(
        stand_in or reflector(options.reflect_backend), options.reflect_backend,
        cache_dir=search.sweep_options["cache_dir"], cache_mode=search.sweep_options["cache_mode"],
        ledger=search, max_cost=search.max_cost, time=budget,
        stop=TimeLimitError(search.path, budget.max_time or 0.0, 0, wanted), calls=search.calls,
    )  # fmt: skip

    def evaluate(variant: PromptVariant, owners: Sequence[str]) -> tuple[Run, dict[str, float]]:
        label = prompt_label(variant)
        alone = replace(search, prompts={label: variant})
        digest = hashlib.sha256("\n".join(owners).encode("utf-8")).hexdigest()[:8]
        name = f"eval-{variant.sha256[:8]}-{digest}"
        run = alone.replay({**search.start(), "prompt": label}, owners, where, name)
        search.spent = alone.spent
        for column, value in owner_metrics(run, owners, COST_COLUMNS).items():
            search.evolution_cost[column] += as_number(value)
        return run, owner_scores(run, owners, objective, columns)

    start_label = next(iter(search.prompts))
    start = search.prompts[start_label]
    adapter = TuneAdapter(
        evaluate, matcher or default_matcher(), objective.metric, start.template.endswith("\n")
    )
    kept = evolve(
        start, search.split.train, search.split.validation, adapter,
        options, where / "gepa", reflect=search.reflection, seed=search.spec.seed,
        start_label=start_label,
    )  # fmt: skip
    known = {v.sha256 for v in search.prompts.values()}
    for prompt in kept:
        if prompt.variant.sha256 not in known:
            known.add(prompt.variant.sha256)
            search.prompts[prompt.label] = prompt.variant
            search.evolved.append(prompt)


def _suggest(trial: optuna.Trial, search: Search) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for name, span in search.spec.ranges().items():
        if NUMERIC_SETTINGS[name] is int:
            step = int(span.step) if span.step else 1
            params[name] = trial.suggest_int(
                name, int(span.low), int(span.high), step=step, log=span.log
            )
        else:
            params[name] = trial.suggest_float(
                name, span.low, span.high, step=span.step, log=span.log
            )
    if search.prompts:
        params["prompt"] = trial.suggest_categorical("prompt", list(search.prompts))
    answers = answer_prompts(search.grid, search.spec)
    if answers:
        params[ANSWER_PROMPT] = trial.suggest_categorical(ANSWER_PROMPT, answers)
    return params


def _objective(search: Search, columns: Sequence[str]) -> Any:
    """The function Optuna calls: replay the candidate on train + validation, score train."""
    owners = [*search.split.train, *search.split.validation]

    def evaluate(trial: optuna.Trial) -> float:
        params = _suggest(trial, search)
        run = search.replay(params, owners, search.path / TUNE_TRIALS, f"trial-{trial.number:03d}")
        train = owner_metrics(run, search.split.train, columns)
        validation = owner_metrics(run, search.split.validation or search.split.train, columns)
        cost = owner_metrics(run, owners, COST_COLUMNS)
        trial.set_user_attr(SENT, search.calls.last if search.calls else {})
        for key, value in (("train", train), ("validation", validation), ("cost", cost)):
            trial.set_user_attr(key, value)
        score, feasible = signed_score(train, search.spec.objective)
        trial.set_user_attr("feasible", feasible)
        return score

    return evaluate


def _optuna(path: Path) -> Any:
    """The optuna module, or how to install it."""
    try:
        import optuna
    except ImportError:
        raise TuneError(path, "the search needs Optuna: pip install 'memlab[tune]'") from None
    return optuna


def _budget(search: Search) -> Any:
    """Stop the search once its replays have spent ``max_cost``."""

    def check(study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
        del trial
        if search.max_cost is not None and search.spent >= search.max_cost:
            study.stop()

    return check


def _spec_key(spec: TuneSpec) -> dict[str, Any]:
    """The spec as the study records it (without ``evolve`` when absent, as before it was
    a key: a study made then resumes)."""
    # the budgets are not the space: a rerun may give them other values
    found = spec.model_dump(mode="json", exclude={"max_time", "max_calls", "max_total_tokens"})
    if found.get("evolve") is None:
        found.pop("evolve", None)
    return found


def _study(search: Search) -> optuna.Study:
    """The study in the tune directory: created, or loaded to resume when its space is the
    same."""
    library = _optuna(search.path)
    run_dir = RunDir(search.path)
    run_dir.make_dir(search.path, "tune directory")
    digest = hashlib.sha256(
        json.dumps([_spec_key(search.spec), search.split.train], sort_keys=True)
        .encode("utf-8")
    ).hexdigest()[:16]  # fmt: skip
    storage = f"sqlite:///{run_dir.owned(run_dir.file(TUNE_STUDY), 'study')}"
    sampler = library.samplers.TPESampler(seed=search.spec.seed)
    study: optuna.Study = library.create_study(
        study_name="tune", storage=storage, direction="maximize", sampler=sampler,
        load_if_exists=True,
    )  # fmt: skip
    known = study.user_attrs.get("spec")
    if known is not None and known != digest:
        raise TuneError(
            search.path,
            "holds a search of another space, objective or split: choose another --name "
            "(or delete the directory to start over)",
        )
    if not study.trials:
        study.set_user_attr("spec", digest)
        start = search.start()
        study.enqueue_trial(start)
        for label in list(search.prompts)[1:]:  # each candidate prompt at the start settings
            study.enqueue_trial({**start, "prompt": label})
        for label in answer_prompts(search.grid, search.spec)[1:]:  # and each answer prompt
            study.enqueue_trial({**start, ANSWER_PROMPT: label})
    return study


def _resolve_prompts(grid: Grid, spec: TuneSpec) -> dict[str, PromptVariant]:
    """The candidate prompts by label, the starting prompt first."""
    if not spec.prompts() and spec.evolve is None:
        return {}
    registry = PromptRegistry()
    for source in grid.prompts:
        registry.load_path(grid.base_dir / source, replace=True)

    def resolved(text: str) -> PromptVariant:
        beside = grid.base_dir / text
        return resolve_prompt(beside if beside.is_file() else text, registry, name=text)

    start_label = str(grid.base.get("prompt", "default"))
    found = {start_label: resolved(start_label)}
    seen = {found[start_label].sha256}
    for label in spec.prompts():
        variant = resolved(label)
        if variant.sha256 not in seen:
            seen.add(variant.sha256)
            found[label] = variant
    return found


def _check_start(grid: Grid, spec: TuneSpec) -> None:
    check_space(grid, spec)
    lane = grid.lanes()[0]
    for name, span in spec.ranges().items():
        value = start_value(lane, name)
        if value not in span:
            raise grid.error(
                f"tune.space.{name}",
                f"the starting value {value} (base) is outside {span.low:g}..{span.high:g}: "
                "widen the range or change base",
            )


def _rows(study: optuna.Study) -> list[dict[str, Any]]:
    optuna = _optuna(Path())
    done = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    return [
        {
            "number": t.number,
            "params": dict(t.params),
            "train": t.user_attrs["train"],
            "validation": t.user_attrs["validation"],
            "feasible": t.user_attrs["feasible"],
            "cost": t.user_attrs["cost"],
        }
        for t in done
    ]


def _best(rows: Sequence[Mapping[str, Any]], objective: Objective) -> Mapping[str, Any]:
    """The feasible candidate best on validation (then on train, then the earliest)."""

    def key(row: Mapping[str, Any]) -> tuple[float, float, int]:
        valid, _ = signed_score(row["validation"], objective)
        train, ok = signed_score(row["train"], objective)
        return (valid if ok else INFEASIBLE, train, -int(row["number"]))

    return max(rows, key=key)


def tune(
    grid: str | Path,
    *,
    runs_dir: str | Path = "runs",
    name: str | None = None,
    max_trials: int | None = None,
    max_cost: float | None = None,
    cache_dir: str | Path | None = None,
    cache_mode: CacheMode = CacheMode.READ_WRITE,
    max_workers: int = 4,
    progress: bool = False,
    matcher: FactMatcher | None = None,
    reflect_backend: str | None = None,
    reflector: Backend | None = None,
    max_time: float | None = None,
    clock: Clock | None = None,
    max_calls: int | None = None,
    max_total_tokens: int | None = None,
) -> TuneResult:
    """Search the ``tune:`` space of the grid file ``grid`` and prove the winner held out.

    Args:
        grid: A one-lane grid file with a ``tune:`` key (:mod:`memlab.reporting.tuning.tune_spec`).
        runs_dir, name: The tune directory is ``runs_dir/NAME`` (default: the grid's name);
            an existing one is resumed (finished candidates kept, the study continued).
        max_trials: Candidates in all, resumed ones included (default: the grid's
            ``tune.max_trials``).
        max_cost: USD each replay step may spend (as :func:`memlab.sweep`'s ``max_cost``).
        cache_dir, cache_mode, max_workers, progress, matcher: As for :func:`memlab.sweep`.
        reflect_backend: Evolve the update prompt with this reflection backend (overrides
            ``tune.evolve.reflect_backend``; turns evolution on with its defaults).
        reflector: The reflection backend itself (an instrument for tests: a
            :class:`memlab.simulation.reflector.SimulatedReflector` that records what it was
            sent); it stands in for the reflect backend, its calls cached and counted as its.
        max_time: Seconds after which no candidate starts (default: the grid's
            ``tune.max_time``; none); ``clock`` measures them (default: the wall clock).
        max_calls, max_total_tokens: Calls, and their prompt + completion tokens, sent to the
            model (replies from the cache not counted) after which no candidate, replay or
            reflection call starts (default: the grid's ``tune.max_calls`` and
            ``tune.max_total_tokens``; none). The finished candidates' count on a rerun.

    Raises:
        GridError: An invalid grid or ``tune:`` key, naming the file, line and key.
        TuneError: The directory holds a search of another space.
        CostLimitError: A replay stopped at ``max_cost`` (rerun to resume).
        EvolveError: Evolution asked for without GEPA installed, or a reflector that cannot be
            built.
        TimeLimitError: ``max_time`` passed before the last candidate or a reflection call
            (rerun to resume).
        CallLimitError: ``max_calls`` or ``max_total_tokens`` used up before the last candidate,
            a replay or a reflection call (rerun with a larger budget to resume).
    """
    start_grid, spec = load_tune(grid)
    if reflect_backend is not None:
        evolving = spec.evolve or Evolve.model_validate({"reflect_backend": reflect_backend})
        spec = spec.model_copy(update={"evolve": evolving.model_copy(
            update={"reflect_backend": reflect_backend})})  # fmt: skip
    budget = TimeBudget(spec.max_time if max_time is None else max_time, clock)
    _check_start(start_grid, spec)
    data_file = dataset_path(start_grid)
    owners = [o.user_id for o in select_owners(load_dataset(data_file), start_grid)]
    split = split_owners(owners, spec.split, start_grid.source)
    where = Path(runs_dir) / safe_component(name or start_grid.name, "tune name")
    search = Search(
        start_grid,
        spec,
        split,
        _resolve_prompts(start_grid, spec),
        where,
        {
            "cache_dir": cache_dir,
            "cache_mode": cache_mode,
            "max_workers": max_workers,
            "progress": progress,
            "matcher": matcher,
        },
        max_cost,
    )
    wanted = max_trials or spec.max_trials
    search.calls = CallBudget(
        where, wanted, spec.max_calls if max_calls is None else max_calls,
        spec.max_total_tokens if max_total_tokens is None else max_total_tokens,
    )  # fmt: skip
    columns = list(dict.fromkeys([*primary_metrics(start_grid.primary), *spec.objective.max]))
    with RunDir(where).lock("tune"):
        if spec.evolve is not None:
            RunDir(where).make_dir(where, "tune directory")
            _evolve(search, columns, matcher, reflector, budget, wanted)
            write_prompts(search.evolved, where / "evolve" / "prompts")
        study = _study(search)
        done = _rows(study)
        search.spent += sum(as_number(r["cost"].get("cost_usd")) for r in done)
        numbers = {r["number"] for r in done}
        search.calls.resume([t.user_attrs for t in study.trials if t.number in numbers])
        todo = wanted - len(done)
        if todo > 0 and not budget.spent() and not search.calls.spent():
            stops = [_budget(search), budget.stop_when_spent, search.calls.stop_when_spent]
            study.optimize(_objective(search, columns), n_trials=todo, catch=(), callbacks=stops)
        finished = len(_rows(study))
        if budget.ran_out and budget.max_time is not None and finished < wanted:
            raise TimeLimitError(where, budget.max_time, finished, wanted)
        search.calls.done = finished
        if finished < wanted:
            search.calls.check("the next candidate")
        return _prove(search, study, columns)


def _prove(search: Search, study: optuna.Study, columns: Sequence[str]) -> TuneResult:
    """Start and winner replayed on the held-out owners, compared paired; ``tune.json``."""
    rows = _rows(study)
    start = search.start()
    best = dict(_best(rows, search.spec.objective)["params"])
    runs = [search.replay(p, search.split.test, search.path, f"heldout-{side}")
            for side, p in (("start", start), ("best", best))]  # fmt: skip
    variants = [_variant(search, p) for p in (start, best)]
    heldout = judge_ab(runs[0], runs[1], *variants, tolerance=search.spec.tolerance)
    train = {
        side: {m: v for m, v in _train_of(rows, p).items() if m in columns}
        for side, p in (("start", start), ("best", best))
    }
    cost = {c: sum(as_number(r["cost"].get(c)) for r in rows) for c in COST_COLUMNS}
    reflection = None if search.reflection is None else dict(search.reflection.cost)
    for column in COST_COLUMNS:
        cost[column] += search.evolution_cost[column] + (reflection or {}).get(column, 0.0)
    result = TuneResult(
        search.path, search.split, search.spec.objective, start, best, rows, heldout, train, cost,
        search.evolved, search.spec.evolve.reflect_backend if search.spec.evolve else None,
        dict(search.prompts), overfit(search.spec.objective, train, heldout, best != start),
        reflection,
    )  # fmt: skip
    run_dir = RunDir(search.path)
    run_dir.write_text(run_dir.file(TUNE_REPORT), report_markdown(result))
    run_dir.write_json(run_dir.file(TUNE_RESULT), result.as_json())
    return result


def _train_of(rows: Sequence[Mapping[str, Any]], params: Mapping[str, Any]) -> dict[str, float]:
    """The train metrics of the candidate ``params`` (empty when it never finished)."""
    return next((dict(r["train"]) for r in rows if r["params"] == params), {})


def _variant(search: Search, params: Mapping[str, Any]) -> PromptVariant:
    """The prompt a side replays (the grid's when the search varies none)."""
    if "prompt" in params:
        return sweep_prompt(search.prompts[params["prompt"]])[0]
    return resolve_prompt(str(search.grid.base.get("prompt", "default")))
