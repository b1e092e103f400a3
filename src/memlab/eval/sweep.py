"""Run a grid of lane configs over a dataset: concurrent, cached, resumable.

Each (lane, owner) pair is one task. Tasks run on a bounded pool (4 threads by default, or any
``concurrent.futures.Executor`` you pass). A finished task writes
``lanes/<lane>/owners/<user>.json`` atomically; rerunning the same sweep into the same run
directory skips finished tasks and replays the others, whose finished LLM calls then come from
the response cache.
"""

from __future__ import annotations

import hashlib
import json
import logging
import platform
import shutil
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from memlab.backends.base import Backend
from memlab.backends.cache import CachedBackend, CacheMode
from memlab.backends.registry import resolve_backend
from memlab.backends.simulated import dataset_options, is_simulated
from memlab.core.atomic import atomic_write_text
from memlab.core.document import utc_iso
from memlab.datasets.loader import load_dataset
from memlab.datasets.models import Owner
from memlab.datasets.registry import resolve_dataset
from memlab.eval.embeddings import EmbeddingDuplicates
from memlab.eval.grid import Grid, LaneConfig
from memlab.eval.matching import FactMatcher
from memlab.eval.metrics import session_rows
from memlab.eval.replay import OwnerReplay, replay_owner
from memlab.eval.run import Run, flatten_call, write_jsonl

__all__ = ["BackendFactory", "sweep"]

logger = logging.getLogger(__name__)

BackendFactory = Callable[[str], Backend]
"""Builds the backend for a lane's backend spec (e.g. ``"local:smollm2"``)."""

_PACKAGES = ("memlab", "openai", "llama-cpp-python", "pydantic", "jsonschema", "pandas")


def _environment() -> dict[str, Any]:
    versions: dict[str, str | None] = {}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return {"python": sys.version.split()[0], "platform": platform.platform(), "packages": versions}


def _fingerprint(owner: Owner, grid: Grid) -> str:
    """What a finished replay depends on besides the lane config: the owner's data as selected
    and the replay mode. A resumed sweep reuses a replay only when this is unchanged."""
    payload = json.dumps(
        {"owner": owner.model_dump(mode="json"), "replay_mode": grid.replay_mode},
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def _stored_fingerprint(path: Path) -> str | None:
    try:
        value = json.loads(path.read_text(encoding="utf-8")).get("fingerprint")
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, str) else None


def _select_owners(owners: Sequence[Owner], grid: Grid) -> list[Owner]:
    selected = [o for o in owners if grid.owners is None or o.user_id in grid.owners]
    if grid.owners is not None:
        missing = set(grid.owners) - {o.user_id for o in selected}
        if missing:
            raise ValueError(f"grid {grid.name!r} names unknown owners: {sorted(missing)}")
    if grid.max_owners:
        selected = selected[: grid.max_owners]
    if grid.max_sessions:
        selected = [
            o.model_copy(update={"sessions": o.sessions[: grid.max_sessions]}) for o in selected
        ]
    return selected


class _Backends:
    """One backend per spec, built on first use and shared by all lanes (thread-safe)."""

    def __init__(
        self,
        factory: BackendFactory,
        cache_dir: Path | None,
        cache_mode: CacheMode,
    ) -> None:
        self._factory = factory
        self._cache_dir = cache_dir
        self._cache_mode = cache_mode
        self._built: dict[str, Backend] = {}
        self._lock = threading.Lock()

    def get(self, spec: str) -> Backend:
        with self._lock:
            if spec not in self._built:
                backend = self._factory(spec)
                # The simulated model answers instantly and deterministically: never cached.
                if (
                    self._cache_dir is not None
                    and self._cache_mode is not CacheMode.OFF
                    and not is_simulated(spec)
                ):
                    backend = CachedBackend(backend, self._cache_dir, mode=self._cache_mode)
                self._built[spec] = backend
            return self._built[spec]


def _registry_factory(dataset: Path) -> BackendFactory:
    """The backend registry, giving specs that replay the dataset (``sim:``) its path."""
    return lambda spec: resolve_backend(spec, **dataset_options(spec, dataset))


def sweep(
    dataset: str | Path,
    grid: Grid,
    *,
    runs_dir: str | Path = "runs",
    run_name: str | None = None,
    backend_factory: BackendFactory | None = None,
    cache_dir: str | Path | None = None,
    cache_mode: CacheMode = CacheMode.READ_WRITE,
    executor: Executor | None = None,
    max_workers: int = 4,
    progress: bool = True,
    matcher: FactMatcher | None = None,
    embedding_duplicates: EmbeddingDuplicates | None = None,
    resume: bool = True,
) -> Run:
    """Replay ``dataset`` under every lane of ``grid`` and return the :class:`Run`.

    Args:
        dataset: A bundled dataset name or a JSONL path.
        grid: The lanes to compare.
        runs_dir: Parent directory of run directories.
        run_name: Run directory name (default: the grid's name). An existing run directory
            with the same lanes is resumed: finished (lane, owner) tasks are kept.
        backend_factory: Builds a backend from a lane's backend spec (default: the registry,
            :func:`memlab.backends.registry.resolve_backend`). Pass ``lambda spec: my_backend``
            to use one backend object for every lane.
        cache_dir: Response cache directory; ``None`` disables caching.
        cache_mode: ``READ_WRITE``, ``READ_ONLY`` (a miss is an error) or ``OFF``.
        executor: Any executor; default a thread pool of ``max_workers``.
        max_workers: Pool size when no executor is given.
        progress: Show a tqdm progress bar (terminal or notebook).
        matcher: Gold-fact matcher for recall/precision (default lexical).
        embedding_duplicates: Also count near-duplicate facts by embeddings, e.g.
            ``EmbeddingDuplicates(WordLlamaEmbedder())`` (needs ``memlab[embeddings]``).
        resume: Keep finished (lane, owner) replays of an existing run directory. ``False``
            deletes the run directory first (a notebook re-executed top to bottom starts clean).
    """
    path = resolve_dataset(dataset)
    owners = _select_owners(load_dataset(path), grid)
    lanes = grid.lanes()
    run_path = Path(runs_dir) / (run_name or grid.name)
    if not resume and run_path.exists():
        shutil.rmtree(run_path)
    run_path.mkdir(parents=True, exist_ok=True)
    started = datetime.now(UTC)
    grid_doc = {
        "dataset": str(path),
        "grid": grid.model_dump(mode="json"),
        "lanes": {lane.lane_id: lane.model_dump(mode="json") for lane in lanes},
    }
    atomic_write_text(run_path / "grid.yaml", yaml.safe_dump(grid_doc, sort_keys=False))
    backends = _Backends(
        backend_factory or _registry_factory(path),
        Path(cache_dir) if cache_dir is not None else None,
        cache_mode,
    )

    def task(lane: LaneConfig, owner: Owner) -> None:
        lane_dir = run_path / "lanes" / lane.lane_id
        done = lane_dir / "owners" / f"{owner.user_id}.json"
        fingerprint = _fingerprint(owner, grid)
        if done.exists() and _stored_fingerprint(done) == fingerprint:
            return  # finished earlier with the same data and replay settings
        replay = replay_owner(
            owner,
            lane,
            backend=backends.get(lane.backend),
            store_path=lane_dir / "stores" / f"{owner.user_id}.json",
            replay_mode=grid.replay_mode,
        )
        record = {"fingerprint": fingerprint, **vars(replay)}
        atomic_write_text(done, json.dumps(record, ensure_ascii=False))

    for lane in lanes:
        atomic_write_text(
            run_path / "lanes" / lane.lane_id / "config.json",
            json.dumps(lane.model_dump(mode="json"), indent=2),
        )
    jobs = [(lane, owner) for lane in lanes for owner in owners]
    own_pool = executor is None
    pool = executor or ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="memlab")
    try:
        futures: list[Future[None]] = [pool.submit(task, lane, owner) for lane, owner in jobs]
        # Imported here: tqdm.auto warns at import time in a notebook without ipywidgets.
        from tqdm.auto import tqdm

        bar = tqdm(
            total=len(futures), desc=f"sweep {grid.name}", unit="replay", disable=not progress
        )
        try:
            for future in futures:
                future.result()
                bar.update(1)
        finally:
            bar.close()
    finally:
        if own_pool:
            pool.shutdown(wait=True, cancel_futures=True)

    calls, sessions = _collect(run_path, lanes, owners, matcher, embedding_duplicates)
    write_jsonl(run_path / "calls.jsonl", calls)
    write_jsonl(run_path / "sessions.jsonl", sessions)
    env = {
        **_environment(),
        "started_at": utc_iso(started),
        "finished_at": utc_iso(datetime.now(UTC)),
        # Which measure produced dup_embedding: the model and the threshold.
        "embedding_duplicates": embedding_duplicates.name if embedding_duplicates else None,
    }
    atomic_write_text(run_path / "environment.json", json.dumps(env, indent=2))
    run = Run(
        path=run_path,
        grid=grid,
        lanes={lane.lane_id: lane for lane in lanes},
        _calls=pd.DataFrame(calls),
        _sessions=pd.DataFrame(sessions),
    )
    atomic_write_text(run_path / "summary.csv", run.summary.to_csv())
    logger.info(
        "sweep %s: %d lanes x %d owners -> %s", grid.name, len(lanes), len(owners), run_path
    )
    return run


def _collect(
    run_path: Path,
    lanes: Sequence[LaneConfig],
    owners: Sequence[Owner],
    matcher: FactMatcher | None,
    embedding_duplicates: EmbeddingDuplicates | None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    calls: list[dict[str, Any]] = []
    sessions: list[dict[str, Any]] = []
    for lane in lanes:
        for owner in owners:
            path = run_path / "lanes" / lane.lane_id / "owners" / f"{owner.user_id}.json"
            record = json.loads(path.read_text(encoding="utf-8"))
            record.pop("fingerprint", None)
            replay = OwnerReplay(**record)
            calls.extend(flatten_call(c, lane.lane_id, owner.user_id) for c in replay.calls)
            for row in session_rows(
                owner,
                replay.snapshots,
                replay.calls,
                replay.agent_runs,
                matcher=matcher,
                embedding_duplicates=embedding_duplicates,
            ):
                sessions.append({"lane_id": lane.lane_id, **row})
    return calls, sessions
