"""Run a grid of lanes over a dataset: planned up front, concurrent, cached, honestly resumed.

A sweep has three steps:

1. **plan** (:func:`plan_sweep`): load the dataset, select owners, resolve every name in the
   grid (prompts, merge strategies, backends) into :class:`~memlab.eval.plan.ResolvedLane`\\ s.
   Bad input fails here, before anything is written.
2. **execute** (:mod:`memlab.eval.execute`): each (lane, owner) pair is one task on a bounded
   pool (4 threads by default, any ``concurrent.futures.Executor``, or a Dask cluster:
   :mod:`memlab.eval.executors`). A finished task's record is written to
   ``lanes/<lane>/owners/<user>.json`` atomically (by the thread that ran it, or by this
   process when a remote result arrives) with a fingerprint of everything the replay depended
   on. A resumed sweep reuses a record only when its fingerprint is unchanged and the replay
   had no backend errors; otherwise it replays and says why ("prompt text changed").
3. **collect**: metrics from the records, then ``manifest.json`` last, which lists the lanes
   of this sweep and the row counts and hashes of the tables; :func:`memlab.eval.run.load_run`
   refuses a run whose files disagree with it.
"""

from __future__ import annotations

import functools
import itertools
import json
import logging
import platform
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from memlab.backends.cache import CacheMode
from memlab.core.atomic import atomic_write_text
from memlab.core.document import utc_iso
from memlab.core.safe_names import ensure_inside, safe_component
from memlab.datasets.loader import load_dataset
from memlab.datasets.models import Owner
from memlab.errors import MemlabError
from memlab.eval.embeddings import EmbeddingDuplicates
from memlab.eval.execute import Outcome, execute, lane_status, read_record
from memlab.eval.executors import SweepExecutor
from memlab.eval.fork import load_fork
from memlab.eval.grid import ForkSpec, Grid, LaneConfig
from memlab.eval.matchers import default_matcher
from memlab.eval.matching import FactMatcher
from memlab.eval.metrics import replay_rows
from memlab.eval.plan import (
    BackendFactory,
    LaneBackends,
    PromptSource,
    ResolvedLane,
    dataset_path,
    prompt_registry,
    registry_backend,
    resolve_lanes,
)
from memlab.eval.records import CallRow, SessionRow, typed_rows
from memlab.eval.replay import OwnerReplay
from memlab.eval.rescore import matcher_record
from memlab.eval.run import (
    RUN_FORMAT,
    Run,
    RunError,
    flatten_call,
    owned_path,
    record_path,
    write_jsonl,
    write_manifest,
)

__all__ = ["IncompleteSweepError", "SweepPlan", "plan_sweep", "sweep"]

logger = logging.getLogger(__name__)

_PACKAGES = ("memlab", "openai", "llama-cpp-python", "pydantic", "jsonschema", "pandas")


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


@dataclass
class SweepPlan:
    """Everything a sweep will do, resolved before it starts.

    Attributes:
        grid: The sweep definition.
        dataset_path: The dataset file.
        owners: The selected owners (sessions cut to ``max_sessions``).
        lanes: The resolved lanes, in grid order.
        run_path: The run directory.
        backends: The backends by spec (shared by the lanes).
        predecessors: For a lane of this sweep, the description of an earlier lane in the run
            directory with the same grid point (to say why a replay was redone).
    """

    grid: Grid
    dataset_path: Path
    owners: list[Owner]
    lanes: list[ResolvedLane]
    run_path: Path
    backends: LaneBackends
    predecessors: dict[str, dict[str, Any]] = field(default_factory=dict)

    def record_path(self, lane: ResolvedLane, owner: Owner, sample: int = 0) -> Path:
        """Where the replay of ``owner`` under ``lane`` (repeated sample ``sample``) is kept."""
        return record_path(self.run_path, lane.lane_id, owner.user_id, sample)


def plan_sweep(
    dataset: str | Path,
    grid: Grid,
    *,
    runs_dir: str | Path = "runs",
    run_name: str | None = None,
    prompts: PromptSource | None = None,
    backend_factory: BackendFactory | None = None,
    cache_dir: str | Path | None = None,
    cache_mode: CacheMode = CacheMode.READ_WRITE,
    fork: ForkSpec | Mapping[str, Any] | None = None,
) -> SweepPlan:
    """Resolve a sweep without running it (see :func:`sweep` for the arguments).

    Raises:
        GridError: An unknown or invalid name in the grid, located by key and line; a fork
            whose reference run, lane or session does not fit.
        UnsafeNameError: A run name or user id that cannot be a file name.
        DatasetError: The dataset is invalid.
    """
    if fork is not None:
        grid = grid.model_copy(update={"fork": ForkSpec.model_validate(fork)})
    data_file = dataset_path(grid, dataset)
    owners = _select_owners(load_dataset(data_file), grid)
    name = safe_component(run_name or grid.name, "run name")
    runs_root = Path(runs_dir)
    run_path = ensure_inside(runs_root / name, runs_root, "run directory")
    backends = LaneBackends(
        backend_factory or functools.partial(registry_backend, dataset=data_file),
        Path(cache_dir) if cache_dir is not None else None,
        cache_mode,
    )
    fork_start = load_fork(grid, owners)
    if fork_start is not None:  # recorded resolved, as the dataset is, for later readers
        resolved = fork_start.spec.model_copy(update={"run": str(fork_start.run_path.resolve())})
        grid = grid.model_copy(update={"fork": resolved})
    lanes = resolve_lanes(grid, prompt_registry(grid, prompts), backends, fork_start)
    plan = SweepPlan(grid, data_file, owners, lanes, run_path, backends)
    plan.predecessors = _predecessors(run_path, lanes)
    return plan


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
        cache_dir: Response cache directory; ``None`` disables caching.
        cache_mode: ``READ_WRITE``, ``READ_ONLY`` (a miss is a backend error) or ``OFF``.
        executor: Where the replays run (see :mod:`memlab.eval.executors`): default a
            thread pool of ``max_workers``; any ``concurrent.futures.Executor``; a Dask
            cluster as ``"dask://HOST:PORT"``, ``"dask-local:N"`` (N local worker processes)
            or a ``distributed.Client``. On Dask, ``backend_factory`` must be picklable.
        max_workers: Pool size when no executor is given.
        progress: Show a tqdm progress bar (terminal or notebook).
        matcher: Gold-fact matcher for recall/precision (default
            :func:`memlab.eval.matchers.default_matcher`); its name goes to environment.json.
        embedding_duplicates: Also count near-duplicate facts by embeddings, e.g.
            ``EmbeddingDuplicates(WordLlamaEmbedder())`` (needs ``memlab[embeddings]``).
        resume: Keep unchanged replays of an existing run directory. ``False`` deletes the run
            directory first (a notebook re-executed top to bottom starts clean).
        allow_incomplete: Return a run some of whose replays had backend errors instead of
            raising :class:`IncompleteSweepError`.
        fork: ``{"run": PATH, "lane": LANE_ID, "at_session": K}`` (or a
            :class:`~memlab.eval.grid.ForkSpec`): start every lane's session ``K`` from the
            reference lane's memory after session ``K - 1``; replaces the grid's ``fork``
            (see :mod:`memlab.eval.fork`).
    """
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
    )
    _prepare_run_dir(plan, Path(runs_dir), resume)
    outcomes = execute(plan, executor, max_workers, progress)
    matcher = matcher if matcher is not None else default_matcher()
    run = _collect(plan, outcomes, matcher, embedding_duplicates, started)
    if not allow_incomplete:
        _raise_if_incomplete(run, outcomes)
    return run


def _raise_if_incomplete(run: Run, outcomes: Sequence[Outcome]) -> None:
    failed = [o for o in outcomes if not o.complete]
    if failed:
        first = failed[0]
        raise IncompleteSweepError(
            run,
            [(o.lane_id, o.user_id) for o in failed],
            f"{first.lane_id} / {first.user_id}: {first.error}",
        )


def _select_owners(owners: Sequence[Owner], grid: Grid) -> list[Owner]:
    selected = [o for o in owners if grid.owners is None or o.user_id in grid.owners]
    if grid.owners is not None:
        missing = set(grid.owners) - {o.user_id for o in selected}
        if missing:
            raise grid.error("owners", f"unknown owners: {sorted(missing)}")
    if grid.max_owners:
        selected = selected[: grid.max_owners]
    if not selected:  # a run of no owners would be "complete" with no results
        raise grid.error("owners", "the grid selects no owners of the dataset")
    if grid.max_sessions:
        selected = [
            o.model_copy(update={"sessions": o.sessions[: grid.max_sessions]}) for o in selected
        ]
    return selected


def _predecessors(run_path: Path, lanes: Sequence[ResolvedLane]) -> dict[str, dict[str, Any]]:
    """For each new lane, the closest earlier lane of the run directory, by lane id.

    Candidates are the lanes of the previous sweep's manifest (all described lanes when it
    stopped early) that this sweep does not keep; the closest differs from the new lane's grid
    point in the fewest settings. Its identity says why the new lane's replays were redone.
    """
    current = {lane.lane_id for lane in lanes}
    previous = read_record(run_path / "manifest.json", run_path) or {}
    listed = set(previous.get("lanes", [])) if previous else None
    candidates: list[tuple[float, dict[str, Any], LaneConfig]] = []
    for config_file in run_path.glob("lanes/*/config.json"):
        described = read_record(config_file, run_path)
        lane_id = (described or {}).get("lane_id")
        if not described or lane_id in current or (listed is not None and lane_id not in listed):
            continue
        try:
            config = LaneConfig.model_validate(described["config"])
            mtime = config_file.stat().st_mtime
        except (OSError, ValueError, KeyError):
            continue  # another format: nothing to explain with
        candidates.append((mtime, described, config))
    found: dict[str, dict[str, Any]] = {}
    for lane in lanes:
        new = lane.config.model_dump(mode="json")
        scored = [
            (sum(new[k] != old.model_dump(mode="json")[k] for k in new), -mtime, i)
            for i, (mtime, _, old) in enumerate(candidates)
        ]
        if scored:
            found[lane.lane_id] = candidates[min(scored)[2]][1]
    return found


def _prepare_run_dir(plan: SweepPlan, runs_dir: Path, resume: bool) -> None:
    run_path = plan.run_path
    if not resume and run_path.exists():
        if not (run_path / "grid.yaml").is_file() and any(run_path.iterdir()):
            raise RunError(
                f"{run_path}: refusing to delete a directory that is not a memlab run "
                "(no grid.yaml); choose another run name"
            )
        shutil.rmtree(ensure_inside(run_path, runs_dir, "run directory"))
    try:
        run_path.mkdir(parents=True, exist_ok=True)
        # Until this sweep finishes, the directory is not a finished run.
        (run_path / "manifest.json").unlink(missing_ok=True)
    except OSError as exc:
        raise RunError(f"{run_path}: cannot create the run directory: {exc}") from exc
    grid_doc = {
        "dataset": str(plan.dataset_path),
        "grid": plan.grid.model_dump(mode="json"),
        "lanes": {lane.lane_id: lane.config.model_dump(mode="json") for lane in plan.lanes},
    }
    atomic_write_text(run_path / "grid.yaml", yaml.safe_dump(grid_doc, sort_keys=False))
    for lane in plan.lanes:
        atomic_write_text(
            owned_path(run_path / "lanes" / lane.lane_id / "config.json", run_path),
            json.dumps(lane.describe(), indent=2, ensure_ascii=False),
        )


def _score(
    plan: SweepPlan,
    matcher: FactMatcher,
    embedding_duplicates: EmbeddingDuplicates | None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Call rows and scored session rows of every (lane, owner) record of the plan."""
    calls: list[dict[str, Any]] = []
    sessions: list[dict[str, Any]] = []
    # With repeated samples, rows say which sample they belong to (averaged per owner later).
    repeated = plan.grid.samples > 1
    for lane in plan.lanes:
        for owner, sample in itertools.product(plan.owners, range(plan.grid.samples)):
            record = read_record(plan.record_path(lane, owner, sample), plan.run_path) or {}
            fields = {k: record[k] for k in OwnerReplay.__dataclass_fields__ if k in record}
            replay = OwnerReplay(**fields)
            tag = {"sample": sample} if repeated else {}
            calls.extend(
                {**flatten_call(c, lane.lane_id, owner.user_id), **tag} for c in replay.calls
            )
            if len(replay.snapshots) != len(owner.sessions):
                continue  # a replay that broke off (recorded as unfinished): nothing to score
            rows = replay_rows(
                owner, vars(replay), matcher=matcher, embedding_duplicates=embedding_duplicates
            )
            sessions.extend({"lane_id": lane.lane_id, **row, **tag} for row in rows)
    return calls, sessions


def _collect(
    plan: SweepPlan,
    outcomes: Sequence[Outcome],
    matcher: FactMatcher,
    embedding_duplicates: EmbeddingDuplicates | None,
    started: datetime,
) -> Run:
    """Write the run's tables, environment, summary and (last) manifest."""
    calls, sessions = _score(plan, matcher, embedding_duplicates)
    calls = typed_rows(CallRow, calls, "calls")
    sessions = typed_rows(SessionRow, sessions, "sessions")
    run_path = plan.run_path
    write_jsonl(run_path / "calls.jsonl", calls)
    write_jsonl(run_path / "sessions.jsonl", sessions)
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
    atomic_write_text(run_path / "environment.json", json.dumps(env, indent=2))
    atomic_write_text(run_path / "summary.csv", run.summary.to_csv())
    run.manifest = write_manifest(
        run_path,
        lanes=[lane.lane_id for lane in plan.lanes],
        owners=[owner.user_id for owner in plan.owners],
        status=lane_status(plan, outcomes),
        samples=plan.grid.samples,
    )
    logger.info(
        "sweep %s: %d lanes x %d owners -> %s",
        plan.grid.name,
        len(plan.lanes),
        len(plan.owners),
        run_path,
    )
    return run


def _environment() -> dict[str, Any]:
    versions: dict[str, str | None] = {}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return {"python": sys.version.split()[0], "platform": platform.platform(), "packages": versions}
