"""Run a grid of lanes over a dataset: planned up front, concurrent, cached, honestly resumed.

A sweep has three steps:

1. **plan** (:func:`~memlab.sweeps.plan.plan_sweep`): load the dataset, select owners,
   resolve every name in the grid (prompts, merge strategies, backends) into a
   :class:`~memlab.sweeps.plan.SweepPlan` of :class:`~memlab.sweeps.plan.ResolvedLane`\\ s.
   Bad input fails here, before anything is written.
2. **execute** (:mod:`memlab.sweeps.execute`): each (lane, owner) pair is one task on a bounded
   pool (4 threads by default, any ``concurrent.futures.Executor``, or a Dask cluster:
   :mod:`memlab.sweeps.executors`). A finished task's record is written to
   ``lanes/<lane>/owners/<user>.json`` atomically (by the thread that ran it, or by this
   process when a remote result arrives) with a fingerprint of everything the replay depended
   on. A resumed sweep reuses a record only when its fingerprint is unchanged and the replay
   had no backend errors; otherwise it replays and says why ("prompt text changed").
3. **collect**: metrics of every replay (scored as soon as it and the replays before it are
   done, from the replay in memory or its record), then ``manifest.json`` last, which lists
   the lanes of this sweep and the row counts and hashes of the tables;
   :func:`memlab.runs.run.load_run` refuses a run whose files disagree with it.
"""

from __future__ import annotations

import dataclasses
import logging
import platform
import shutil
import sys
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from memlab.backends.caching.cache import CacheMode
from memlab.backends.costs.spend import CostLimitError, SpendLimit
from memlab.backends.identity import file_digest
from memlab.backends.local.llama_batch import BatchOptions
from memlab.backends.registry import environment_packages, is_simulated, reads_prompts
from memlab.backends.remote.rate_limit import RateLimit, RateLimiters
from memlab.core.base.safe_names import ensure_inside
from memlab.core.jsondoc.document import utc_iso
from memlab.datasets.models import Owner
from memlab.errors import MemlabError
from memlab.grids.grid import ForkSpec, Grid
from memlab.grids.lane_backends import BackendFactory
from memlab.grids.rate_limit_spec import limits_with_override
from memlab.matching.base import FactMatcher
from memlab.matching.default_matcher import DefaultMatcher
from memlab.matching.embeddings import EmbeddingDuplicates
from memlab.matching.matchers import default_matcher
from memlab.matching.verdict_store import load_verdicts, save_verdicts
from memlab.postrun.qa_step import QAOptions, run_qa
from memlab.postrun.rescoring import matcher_record
from memlab.runs.records import CallRow, SessionRow, typed_rows
from memlab.runs.run import Run, flatten_call
from memlab.runs.rundir import RUN_FORMAT, RunError
from memlab.scoring.comparing.comparability import SIMULATED_PROMPT_NOTE
from memlab.scoring.metrics import replay_rows
from memlab.sweeps.collection import fewer_collections
from memlab.sweeps.execute import Outcome, execute, lane_status
from memlab.sweeps.executors import SweepExecutor
from memlab.sweeps.grid_check import PromptSource
from memlab.sweeps.plan import ResolvedLane, SweepPlan, plan_sweep
from memlab.sweeps.replay import OwnerReplay

__all__ = ["IncompleteSweepError", "sweep"]

Row = dict[str, Any]

logger = logging.getLogger(__name__)

_PACKAGES = ("pydantic", "fastjsonschema", "pandas")
"""Versions recorded in ``environment.json`` besides memlab's and the backends' packages."""


class IncompleteSweepError(MemlabError, RuntimeError):
    """Some replays had backend errors (a read-only cache miss, a refused connection).

    The run directory is written and marked incomplete; rerunning the sweep retries exactly
    those replays.

    Attributes:
        run: The run, with the failed calls in its tables.
        failed: ``(lane_id, user_id)`` of every incomplete replay.
    """

    def __init__(self, run: Run, failed: Sequence[tuple[str, str]], first_error: str) -> None:
        self.run = run
        self.failed = list(failed)
        super().__init__(
            f"{len(self.failed)} replay(s) in {run.path} did not finish: backend errors or "
            f"failed updates (first: "
            f"{first_error}); fix the backend or record the responses, then rerun the sweep to "
            "retry them (or allow an incomplete run: --allow-incomplete, allow_incomplete=True)"
        )


def sweep(
    dataset: str | Path,
    grid: Grid,
    *,
    runs_dir: str | Path = "runs",
    run_name: str | None = None,
    prompts: PromptSource | None = None,
    backend_factory: BackendFactory | None = None,
    cache_dir: str | Path | None = None,
    cache_mode: CacheMode = CacheMode.READ_WRITE,
    executor: SweepExecutor | None = None,
    max_workers: int = 4,
    progress: bool = True,
    matcher: FactMatcher | None = None,
    embedding_duplicates: EmbeddingDuplicates | None = None,
    resume: bool = True,
    allow_incomplete: bool = False,
    fork: ForkSpec | Mapping[str, Any] | None = None,
    max_judge_errors: float = 0.0,
    max_cost: float | None = None,
    rate_limit: RateLimit | None = None,
    local_batch: BatchOptions | int | None = None,
) -> Run:
    """Replay ``dataset`` under every lane of ``grid`` and return the :class:`Run`.

    Args:
        dataset: A bundled dataset name or a JSONL path (relative paths are looked up next to
            the grid file first).
        grid: The lanes to compare.
        runs_dir: Parent directory of run directories.
        run_name: Run directory name (default: the grid's name). An existing run directory
            is resumed: replays whose inputs are unchanged are kept (see the module docstring).
        prompts: Prompt variants the grid may name besides the built-ins and its ``prompts:``
            files: a :class:`~memlab.core.prompts.PromptRegistry`, ``{name: template}``, or
            prompt file/directory paths.
        backend_factory: Builds a backend from a lane's backend spec (default: the registry,
            :func:`memlab.backends.registry.resolve_backend`). Pass ``lambda spec: my_backend``
            to use one backend object for every lane.
        cache_dir: Response cache directory; ``None`` disables caching. The default matcher's
            verdicts are kept there too (``verdicts/``, see
            :mod:`memlab.matching.verdict_store`): read unless ``cache_mode`` is ``OFF``,
            written in ``READ_WRITE``.
        cache_mode: ``READ_WRITE``, ``READ_ONLY`` (a miss is a backend error) or ``OFF``.
        executor: Where the replays run (see :mod:`memlab.sweeps.executors`): default a
            thread pool of ``max_workers``; any ``concurrent.futures.Executor``; a Dask
            cluster as ``"dask://HOST:PORT"``, ``"dask-local:N"`` (N local worker processes)
            or a ``distributed.Client``. On Dask, ``backend_factory`` must be picklable.
        max_workers: Pool size when no executor is given.
        progress: Show progress (:class:`memlab.postrun.progress.Progress`: a bar on a terminal
            or in a notebook, sparse plain lines elsewhere).
        matcher: Gold-fact matcher for recall/precision (default
            :func:`memlab.matching.matchers.default_matcher`); its name goes to environment.json.
        embedding_duplicates: Also count near-duplicate facts by embeddings, e.g.
            ``EmbeddingDuplicates(WordLlamaEmbedder())`` (needs ``memlab[embeddings]``).
        resume: Keep unchanged replays of an existing run directory. ``False`` deletes the run
            directory first (a notebook re-executed top to bottom starts clean).
        allow_incomplete: Return a run some of whose replays had backend errors instead of
            raising :class:`IncompleteSweepError`.
        fork: ``{"run": PATH, "lane": LANE_ID, "at_session": K}`` (or a
            :class:`~memlab.grids.grid.ForkSpec`): start every lane's session ``K`` from the
            reference lane's memory after session ``K - 1``; replaces the grid's ``fork``
            (see :mod:`memlab.sweeps.fork`).
        max_judge_errors: With a ``qa:`` key: the share of answers a judge may leave without
            a verdict (see :func:`memlab.postrun.qa_step.add_qa`).
        max_cost: USD the sweep's calls may spend, priced as their backends declare
            (:mod:`memlab.backends.costs.spend`): a call that could pass it is not sent, the
            replays it stops are recorded unfinished, and the sweep raises
            :class:`~memlab.backends.costs.spend.CostLimitError` (the next sweep resumes them).
            Needs a thread pool or ``concurrent.futures`` executor (not Dask).
        rate_limit: Requests and tokens a minute the calls of each OpenAI-compatible
            endpoint and model are paced at, shared by every worker thread of the replays and
            the QA step (:mod:`memlab.backends.remote.rate_limit`); servers' ``x-ratelimit-*``
            headers can only lower it. Overrides the grid's ``rate_limit:`` key value by
            value (:mod:`memlab.grids.rate_limit_spec`). On Dask each worker process paces
            at its share: the limit divided by the workers connected when the sweep starts.
        local_batch: How many concurrent greedy calls the local model decodes together
            (a lane count or :class:`~memlab.backends.local.llama_batch.BatchOptions`;
            ``docs/local-model.md``), replacing the grid's ``local_batch:``. Scheduling
            only: lane ids, cache keys and replies stay as they are. Used by the default
            backend factory (the registry), not by a ``backend_factory`` given.

    With a ``qa:`` key in the grid, the finished run's memory is then asked the dataset's
    questions (:func:`memlab.postrun.qa_step.add_qa`, with the same cache, workers and matcher;
    ``backend_factory`` builds its backends too).
    """
    spend = _spend_limit(max_cost, executor)
    if local_batch is not None:
        grid = grid.model_copy(update={"local_batch": _batch_options(local_batch)})
    rates = RateLimiters(limits_with_override(grid.rate_limit, rate_limit))
    # The settings the QA step shares with the replays, as the one object it is passed.
    options = QAOptions(
        cache_dir=cache_dir,
        cache_mode=cache_mode,
        max_workers=max_workers,
        progress=progress,
        matcher=matcher,
        backend_factory=backend_factory,
        allow_incomplete=allow_incomplete,
        max_judge_errors=max_judge_errors,
        spend=spend,
        rates=rates,
    )
    if max_workers < 1:
        raise RunError(f"max_workers must be at least 1, got {max_workers}")
    started = datetime.now(UTC)
    plan = plan_sweep(
        dataset,
        grid,
        runs_dir=runs_dir,
        run_name=run_name,
        prompts=prompts,
        backend_factory=backend_factory,
        cache_dir=cache_dir,
        cache_mode=cache_mode,
        fork=fork,
        spend=spend,
        rates=rates,
    )
    _warn_simulated_prompts(plan)
    with plan.run_dir.lock("sweep"):  # one writer per run directory
        _prepare_run_dir(plan, Path(runs_dir), resume)
        options = dataclasses.replace(
            options,
            matcher=matcher if matcher is not None else default_matcher(),
            prompts_dir=plan.grid.base_dir,
            batch=plan.grid.local_batch,  # the QA step decodes as the replays did
        )
        try:
            run = _replay(plan, options, executor, embedding_duplicates, started)
        except IncompleteSweepError as exc:
            if spend is not None and spend.stopped:
                raise CostLimitError(spend.spent, spend.limit, len(exc.failed), "replays") from None
            raise
        if spend is not None and spend.stopped:  # allow_incomplete: stopped all the same
            unfinished = sum(len(s["incomplete"]) for s in run.manifest["status"].values())
            raise CostLimitError(spend.spent, spend.limit, unfinished, "replays")
        if plan.grid.qa is not None:
            run = run_qa(run, None, options)
        return run


def _batch_options(value: BatchOptions | int) -> BatchOptions:
    if isinstance(value, BatchOptions):
        return value
    try:
        return BatchOptions(lanes=value)
    except ValueError as exc:
        raise RunError(f"local_batch must be a lane count from 1 to 32, got {value!r}") from exc


def _unset_keys(grid: Grid) -> set[str] | None:
    """Keys added to grids later, left out of grid.yaml when unset (written as before)."""
    unset = {key for key in ("rate_limit", "local_batch") if getattr(grid, key) is None}
    return unset or None


def _spend_limit(max_cost: float | None, executor: SweepExecutor | None) -> SpendLimit | None:
    """The sweep's cost limit; Dask workers build their own backends, so it needs this
    process's threads."""
    if max_cost is None:
        return None
    if executor is not None and not isinstance(executor, Executor):
        raise RunError(
            "max_cost counts the calls made in this process; run the sweep on threads "
            "(no --executor) or without --max-cost"
        )
    try:
        return SpendLimit(max_cost)
    except ValueError as exc:
        raise RunError(str(exc)) from None


def _replay(
    plan: SweepPlan,
    options: QAOptions,
    executor: SweepExecutor | None,
    embedding_duplicates: EmbeddingDuplicates | None,
    started: datetime,
) -> Run:
    """Every replay of ``plan``, collected into the run (the matcher's new verdicts kept)."""
    matcher = options.matcher if options.matcher is not None else default_matcher()
    cache_dir, cache_mode = options.cache_dir, options.cache_mode
    keep_verdicts = cache_dir is not None and cache_mode != CacheMode.OFF
    known = load_verdicts(matcher, cache_dir) if keep_verdicts and cache_dir else 0
    rows = _Rows(plan, matcher, embedding_duplicates)
    with fewer_collections():
        outcomes = execute(plan, executor, options.max_workers, options.progress, rows.add)
        run = _collect(plan, outcomes, rows, matcher, embedding_duplicates, started)
    if keep_verdicts and cache_dir and cache_mode == CacheMode.READ_WRITE:
        _save_new_verdicts(matcher, cache_dir, known)
    if not options.allow_incomplete:
        _raise_if_incomplete(run, outcomes)
    return run


def _save_new_verdicts(matcher: FactMatcher, cache_dir: str | Path, known: int) -> None:
    """Keep the matcher's verdicts beside the response cache when this sweep added some."""
    if isinstance(matcher, DefaultMatcher) and len(matcher.decided()) > known:
        save_verdicts(matcher, cache_dir)


def _raise_if_incomplete(run: Run, outcomes: Sequence[Outcome]) -> None:
    failed = [o for o in outcomes if not o.complete]
    if failed:
        first = failed[0]
        raise IncompleteSweepError(
            run,
            [(o.lane_id, o.user_id) for o in failed],
            f"{first.lane_id} / {first.user_id}: {first.error}",
        )


def _prepare_run_dir(plan: SweepPlan, runs_dir: Path, resume: bool) -> None:
    run_path, run_dir = plan.run_path, plan.run_dir
    if not resume and run_path.exists():
        if not run_dir.grid_file.is_file() and any(run_path.iterdir()):
            raise RunError(
                f"{run_path}: refusing to delete a directory that is not a memlab run "
                "(no grid.yaml); choose another run name"
            )
        shutil.rmtree(ensure_inside(run_path, runs_dir, "run directory"))
    grid_doc = {
        # Absolute and resolved: later steps find it from any working directory.
        "dataset": str(plan.dataset_path.resolve()),
        # What comparisons check two runs replayed (memlab.runs.lane_facts).
        "dataset_sha256": _dataset_digest(plan.dataset_path),
        # A grid without rate_limit is written as before it had the key.
        "grid": plan.grid.model_dump(mode="json", exclude=_unset_keys(plan.grid)),
        "lanes": {lane.lane_id: lane.config.model_dump(mode="json") for lane in plan.lanes},
    }
    run_dir.start_sweep(
        yaml.safe_dump(grid_doc, sort_keys=False),
        {lane.lane_id: lane.describe() for lane in plan.lanes},
    )


def _warn_simulated_prompts(plan: SweepPlan) -> None:
    """Warn once when simulated lanes differ in their prompt: the simulated model answers
    from the dataset's labels, whatever the prompt says, unless its profile declares prompt
    effects (:func:`~memlab.backends.registry.reads_prompts`)."""
    prompts = {lane.prompt.sha256 for lane in plan.lanes if _ignores_prompts(lane.config.backend)}
    if len(prompts) > 1:
        logger.warning(
            "sweep %s: %s (compare prompts on a real model)", plan.name, SIMULATED_PROMPT_NOTE
        )


def _ignores_prompts(spec: str) -> bool:
    if not is_simulated(spec):
        return False
    try:
        return not reads_prompts(spec)
    except MemlabError:  # a profile that does not load: building the backend says why
        return False


def _dataset_digest(path: Path) -> str | None:
    try:
        return file_digest(path)
    except (OSError, MemlabError):
        return None


class _Rows:
    """Call rows and scored session rows of every (lane, owner, sample) replay of a plan.

    :meth:`add` scores a finished replay (in the plan's order, so the matcher is asked the
    same pairs in the same order however the replays finish); :meth:`tables` reads the record
    of any replay not added and returns the rows in the plan's order.
    """

    def __init__(
        self,
        plan: SweepPlan,
        matcher: FactMatcher,
        embedding_duplicates: EmbeddingDuplicates | None,
    ) -> None:
        self.plan = plan
        self.matcher = matcher
        self.embedding_duplicates = embedding_duplicates
        self._lanes = {lane.lane_id: lane for lane in plan.lanes}
        self._owners = {owner.user_id: owner for owner in plan.owners}
        self._scored: dict[tuple[str, str, int], tuple[list[Row], list[Row]]] = {}

    def add(self, outcome: Outcome) -> None:
        """Score one finished replay: the replay in memory, else its record."""
        lane, owner = self._lanes[outcome.lane_id], self._owners[outcome.user_id]
        key = (lane.lane_id, owner.user_id, outcome.sample)
        self._scored[key] = self._score(lane, owner, outcome.sample, outcome.replay)

    def tables(self) -> tuple[list[Row], list[Row]]:
        """Every replay's call rows and session rows, in lane, owner, sample order."""
        calls: list[Row] = []
        sessions: list[Row] = []
        for lane, owner, sample in self.plan.jobs():
            found = self._scored.pop((lane.lane_id, owner.user_id, sample), None)
            replay_calls, replay_sessions = found or self._score(lane, owner, sample, None)
            calls.extend(replay_calls)
            sessions.extend(replay_sessions)
        return calls, sessions

    def _score(
        self, lane: ResolvedLane, owner: Owner, sample: int, replay: OwnerReplay | None
    ) -> tuple[list[Row], list[Row]]:
        if replay is None:
            path = self.plan.record_path(lane, owner, sample)
            record = self.plan.run_dir.read_object(path) or {}
            fields = {k: record[k] for k in OwnerReplay.__dataclass_fields__ if k in record}
            replay = OwnerReplay(**fields)
        # With repeated samples, rows say which sample they belong to (averaged per owner later).
        tag = {"sample": sample} if self.plan.samples > 1 else {}
        calls = [{**flatten_call(c, lane.lane_id, owner.user_id), **tag} for c in replay.calls]
        if len(replay.snapshots) != len(owner.sessions):
            return calls, []  # a replay that broke off (recorded as unfinished): nothing to score
        rows = replay_rows(
            owner,
            vars(replay),
            matcher=self.matcher,
            embedding_duplicates=self.embedding_duplicates,
        )
        return calls, [{"lane_id": lane.lane_id, **row, **tag} for row in rows]


def _collect(
    plan: SweepPlan,
    outcomes: Sequence[Outcome],
    rows: _Rows,
    matcher: FactMatcher,
    embedding_duplicates: EmbeddingDuplicates | None,
    started: datetime,
) -> Run:
    """Write the run's tables, environment, summary and (last) manifest."""
    calls, sessions = rows.tables()
    calls = typed_rows(CallRow, calls, "calls")
    sessions = typed_rows(SessionRow, sessions, "sessions")
    run_path, run_dir = plan.run_path, plan.run_dir
    run_dir.write_tables({"calls.jsonl": calls, "sessions.jsonl": sessions})
    run = Run(
        path=run_path,
        grid=plan.grid,
        lanes={lane.lane_id: lane.config for lane in plan.lanes},
        _calls=pd.DataFrame(calls),
        _sessions=pd.DataFrame(sessions),
    )
    env = {
        **_environment(),
        "run_format": RUN_FORMAT,
        "started_at": utc_iso(started),
        "finished_at": utc_iso(datetime.now(UTC)),
        # Which measure produced dup_embedding: the model and the threshold.
        "embedding_duplicates": embedding_duplicates.name if embedding_duplicates else None,
        # Which matcher scored the run (a judge adds its per-prompt metrics).
        "matcher": matcher_record(matcher, run),
    }
    run_dir.write_environment(env)
    run_dir.write_summary(run.summary.to_csv())
    run.manifest = run_dir.write_manifest(
        lanes=[lane.lane_id for lane in plan.lanes],
        owners=[owner.user_id for owner in plan.owners],
        status=lane_status(plan, outcomes),
        samples=plan.samples,
    )
    logger.info(
        "sweep %s: %d lanes x %d owners -> %s",
        plan.name,
        len(plan.lanes),
        len(plan.owners),
        run_path,
    )
    return run


def _environment() -> dict[str, Any]:
    versions: dict[str, str | None] = {}
    for name in ("memlab", *environment_packages(), *_PACKAGES):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return {"python": sys.version.split()[0], "platform": platform.platform(), "packages": versions}
