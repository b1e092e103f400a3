"""The execute step of a sweep: run every (lane, owner, sample) replay and record it.

:func:`execute` takes a :class:`~memlab.sweeps.driver.SweepPlan` and runs each replay as one task
on a bounded pool: a thread pool by default, any ``concurrent.futures.Executor``, or a Dask
cluster (:mod:`memlab.sweeps.executors`). For every replay it first *prepares* a job: the
fingerprint of everything the replay depends on (the lane's identity, the owner's data, the
sample, :data:`RECORD_FORMAT`). An owner record an earlier sweep wrote with the same
fingerprint and no backend errors is reused; otherwise the replay runs and the outcome says
why ("prompt text changed", "owner data changed", "new").

A finished replay's record goes to ``lanes/<lane>/owners/<user>.json`` atomically, written by
the thread that ran it, or by this process when a remote result comes back (with the cache
entries and the store file the worker could not write). :func:`lane_status` sums the outcomes
per lane for the run's manifest.

The outcomes are handed to an optional ``consume`` callback in the plan's order, each as soon
as it and every replay before it are done, by the worker thread that finished it (or by this
process for a remote replay): the sweep scores a replay then, from the replay in memory
(:attr:`Outcome.replay`), instead of reading its record back after the last replay.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from memlab.backends.caching.cache import CachedBackend
from memlab.core.base.jsontext import canonical_hash
from memlab.core.base.redact import REDACTED, redact_text, redacted_json
from memlab.core.jsondoc.document import parse_utc
from memlab.core.pipeline.storage import JsonFileStorage, StorageError
from memlab.core.pipeline.updater import UNFINISHED_STAGES
from memlab.datasets.models import Owner
from memlab.memory.designs import scratch_files
from memlab.memory.strategy import is_primary
from memlab.postrun.progress import Progress
from memlab.runs.rundir import RunError, record_problem
from memlab.sweeps.executors import (
    DaskPool,
    DaskSpec,
    ExecutorError,
    SweepExecutor,
    batch_size,
    dask_client,
    is_dask_client,
    parse_executor,
)
from memlab.sweeps.plan import ResolvedLane, SweepPlan, identity_changes
from memlab.sweeps.remote import RemoteResult
from memlab.sweeps.replay import OwnerReplay, replay_owner

__all__ = ["RECORD_FORMAT", "Outcome", "execute", "kept_record", "lane_status", "unfinished"]

logger = logging.getLogger(__name__)

RECORD_FORMAT = 3
"""Version of what an owner record holds (2: call records keep the merge's fact bookkeeping;
3: the count of updates the queue handed over). Part of every record's fingerprint, so
records of an older layout are replayed, not reused."""


@dataclass(frozen=True)
class Outcome:
    """What became of one replay: reused or replayed (and why), complete or not.

    ``replay`` is the replay itself while it waits to be consumed, when this process wrote its
    record and the record needed no redaction (so the record reads back as this replay);
    otherwise ``None``, and the record on disk is what counts.
    """

    lane_id: str
    user_id: str
    sample: int
    replayed: bool
    reason: str
    complete: bool
    error: str = ""
    replay: OwnerReplay | None = field(default=None, compare=False, repr=False)


def _owner_sha(owner: Owner) -> str:
    # Questions are asked after a replay and never change it.
    return canonical_hash(owner.model_dump(mode="json", exclude={"questions"}))


@dataclass(frozen=True)
class _Job:
    """A replay to run: its inputs and what its record will say."""

    lane: ResolvedLane
    owner: Owner
    sample: int
    fingerprint: str
    owner_sha: str
    reason: str


def _prepare(plan: SweepPlan, lane: ResolvedLane, owner: Owner, sample: int) -> _Job | Outcome:
    """The replay to run, or the outcome of reusing the record an earlier sweep wrote."""
    owner_sha = _owner_sha(owner)
    fingerprint = canonical_hash(
        {
            "lane": lane.identity_hash,
            "owner": owner_sha,
            "sample": sample,
            "record_format": RECORD_FORMAT,
        }
    )
    old = plan.run_dir.read_object(plan.record_path(lane, owner, sample))
    done = (
        old is not None
        and old.get("fingerprint") == fingerprint
        and old.get("complete") is True
        and record_problem(old) is None
    )
    if done:
        return Outcome(lane.lane_id, owner.user_id, sample, False, "unchanged", True)
    reason = _why_replay(plan, lane, owner, sample, old, owner_sha)
    return _Job(lane, owner, sample, fingerprint, owner_sha, reason)


def kept_record(plan: SweepPlan, lane: ResolvedLane, owner: Owner, sample: int) -> bool:
    """Whether a sweep of ``plan`` would keep the replay's record (and not replay it)."""
    return isinstance(_prepare(plan, lane, owner, sample), Outcome)


def _store_path(plan: SweepPlan, job: _Job) -> Path:
    """The replay's store file, checked: inside the run, no link on the way, and no directory
    where the replay removes its scratch stores (the JSON file, the tiered database)."""
    run_dir = plan.run_dir
    path = run_dir.owned(run_dir.store(job.lane.lane_id, job.owner.user_id))
    for scratch in scratch_files(path):
        if scratch.is_dir() and not scratch.is_symlink():
            raise RunError(
                f"{scratch}: a directory where the replay keeps its store; move it away "
                "(memlab removes only files it wrote)"
            )
    return path


def _replay_task(
    plan: SweepPlan, lane: ResolvedLane, owner: Owner, sample: int, bar: Progress | None = None
) -> Outcome:
    """Prepare, replay and record one (lane, owner, sample) in this process; count each of
    the owner's sessions on ``bar`` (as played, the rest when the replay ends)."""
    played = 0

    def on_session() -> None:
        nonlocal played
        played += 1
        if bar is not None:
            bar.update(1)

    try:
        job = _prepare(plan, lane, owner, sample)
        if isinstance(job, Outcome):
            return job
        # A store path memlab may not write (a planted link) is the run directory's fault, not
        # the replay's: it stops the sweep with that one line instead of failing every replay.
        store_path = _store_path(plan, job)
        try:
            replay = replay_owner(
                owner,
                lane,
                backend=plan.backends.get(lane.config.backend),
                store_path=store_path,
                replay_mode=plan.replay_mode,
                sample=sample,
                on_session=on_session,
            )
        except Exception as exc:  # a replay that broke: recorded as unfinished, retried on resume
            logger.debug("replay of %s under %s raised", owner.user_id, lane.lane_id, exc_info=True)
            return _write_failure(plan, job, f"unexpected {type(exc).__name__}: {exc}")
        return _write_record(plan, job, replay)
    finally:
        if bar is not None:
            bar.update(len(owner.sessions) - played)


def unfinished(replay: OwnerReplay) -> str:
    """Why ``replay`` is not a finished result ("" when it is): a call that failed for a
    reason other than the model's reply, or fewer primary call records than updates (see
    :func:`memlab.memory.strategy.is_primary`)."""
    failed = [c for c in replay.calls if c.get("error_stage") in UNFINISHED_STAGES]
    if failed:
        return str(failed[0].get("error") or f"{failed[0].get('error_stage')} error")
    recorded = sum(1 for c in replay.calls if is_primary(c))
    if recorded != replay.updates:
        return f"{replay.updates} updates ran but {recorded} were recorded"
    return ""


def _write_record(plan: SweepPlan, job: _Job, replay: OwnerReplay, error: str = "") -> Outcome:
    """Write the owner record of a replay (``error``: why it broke off); its outcome."""
    error = error or unfinished(replay)
    record = {
        "fingerprint": job.fingerprint,
        "owner_sha256": job.owner_sha,
        "complete": not error,
        **({"error": redact_text(error)[:2000]} if error else {}),
        **replay.to_record(),
    }
    text = redacted_json(record)  # a secret a server echoed must not reach the run directory
    path = plan.record_path(job.lane, job.owner, job.sample)
    # Not fsynced: a record lost to a power cut is replayed (from the cache) on resume.
    plan.run_dir.write_text(path, text, durable=False)
    lane_id, user_id = job.lane.lane_id, job.owner.user_id
    message = redact_text(error)[:300]
    # Redaction always writes REDACTED: without it, the record on disk says what ``replay`` does.
    kept = replay if REDACTED not in text else None
    return Outcome(lane_id, user_id, job.sample, True, job.reason, not error, message, kept)


def _write_failure(plan: SweepPlan, job: _Job, error: str) -> Outcome:
    """Record a replay that raised: no calls, marked incomplete (replayed on resume)."""
    return _write_record(plan, job, OwnerReplay(user_id=job.owner.user_id), error)


def _finish_remote(plan: SweepPlan, job: _Job, result: RemoteResult) -> Outcome:
    """Store what a remote replay sent back: new cache entries, the store file, the record."""
    cache = plan.backends.get(job.lane.config.backend)
    if isinstance(cache, CachedBackend):
        for request, completion in result.recorded:
            cache.put(request, completion)
        for key in result.used:
            cache.mark_used(key)
    final = result.replay.final_memory
    store = JsonFileStorage(_store_path(plan, job), durable=False)
    try:
        store.save(final, now=parse_utc(final.get("lastUpdated")))
    except StorageError as exc:  # as in a local replay: the record is what the metrics use
        logger.warning("could not write the lane's store file: %s", exc)
    return _write_record(plan, job, result.replay)


def _why_replay(
    plan: SweepPlan,
    lane: ResolvedLane,
    owner: Owner,
    sample: int,
    old: dict[str, Any] | None,
    owner_sha: str,
) -> str:
    """Why the replay of ``owner`` under ``lane`` cannot be reused, in words."""
    if old is not None:
        if not old.get("complete", True):
            return "earlier replay had backend errors"
        return "owner data changed" if old.get("owner_sha256") != owner_sha else "record changed"
    before = plan.predecessors.get(lane.lane_id)
    if before is None:
        return "new"
    reasons = identity_changes(before.get("identity", {}), lane.identity)
    run_dir = plan.run_dir
    old_record = run_dir.read_object(
        run_dir.record(str(before.get("lane_id")), owner.user_id, sample)
    )
    if old_record is not None and old_record.get("owner_sha256") != owner_sha:
        reasons.append("owner data changed")
    return ", ".join(reasons) or "new"


def _progress_bar(plan: SweepPlan, progress: bool) -> Progress:
    """Counts sessions, not replays: one owner's replay by a real model takes minutes."""
    total = sum(len(owner.sessions) for _, owner, _ in plan.jobs())
    return Progress(f"sweep {plan.name}", "session", total, enabled=progress)


class _InOrder:
    """Hands the outcomes of a plan's jobs to ``consume`` in the plan's order, each as soon as
    it and every one before it are done; a consumed outcome is not kept.

    :meth:`put` is called by whichever thread finished a job (a pool's worker, so that the
    process does not gain a thread competing for the interpreter). One thread consumes at a
    time: a thread that finds another consuming leaves its outcome for it.
    """

    def __init__(self, jobs: int, consume: Callable[[Outcome], None] | None) -> None:
        self._waiting: list[Outcome | None] = [None] * jobs
        self._consume = consume
        self._next = 0
        self._consuming = False
        self._lock = threading.Lock()

    def put(self, index: int, outcome: Outcome) -> Outcome:
        """Consume what is due; return ``outcome`` without its replay."""
        if self._consume is None:
            return _without_replay(outcome)
        with self._lock:
            self._waiting[index] = outcome
            if self._consuming:
                return _without_replay(outcome)
            self._consuming = True
        try:
            while (done := self._due()) is not None:
                self._consume(done)
        except BaseException:
            with self._lock:
                self._consuming = False
            raise
        return _without_replay(outcome)

    def _due(self) -> Outcome | None:
        """The next outcome in the plan's order if it is done (taken from the queue); else
        ``None``, and this thread stops consuming (under the lock ``put`` takes)."""
        with self._lock:
            if self._next == len(self._waiting) or self._waiting[self._next] is None:
                self._consuming = False
                return None
            done, self._waiting[self._next] = self._waiting[self._next], None
            self._next += 1
            return done


def _without_replay(outcome: Outcome) -> Outcome:
    return outcome if outcome.replay is None else replace(outcome, replay=None)


def _replay_in_order(
    plan: SweepPlan,
    job: tuple[ResolvedLane, Owner, int],
    index: int,
    queue: _InOrder,
    bar: Progress,
) -> Outcome:
    """:func:`_replay_task`, then its outcome handed to ``queue`` (in the worker's thread)."""
    return queue.put(index, _replay_task(plan, *job, bar))


def execute(
    plan: SweepPlan,
    executor: SweepExecutor | None,
    max_workers: int,
    progress: bool,
    consume: Callable[[Outcome], None] | None = None,
) -> list[Outcome]:
    """Run every replay of the plan on ``executor`` (see :mod:`memlab.sweeps.executors`);
    hand each outcome to ``consume`` in the plan's order (see the module docstring)."""
    if isinstance(executor, str | DaskSpec):
        spec = parse_executor(executor) if isinstance(executor, str) else executor
        with dask_client(spec) as client:
            return _execute_remote(plan, client, progress, consume)
    if is_dask_client(executor):
        return _execute_remote(plan, executor, progress, consume)
    if executor is not None and not isinstance(executor, Executor):
        raise ExecutorError(
            f"executor must be a concurrent.futures.Executor, a distributed.Client or a "
            f"string such as 'dask-local:2', got {type(executor).__name__}"
        )
    own_pool = executor is None
    pool = executor or ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="memlab")
    jobs = plan.jobs()
    queue = _InOrder(len(jobs), consume)
    outcomes: list[Outcome | None] = [None] * len(jobs)
    finished = False
    try:
        with _progress_bar(plan, progress) as bar:
            futures: dict[Future[Outcome], int] = {
                pool.submit(_replay_in_order, plan, job, index, queue, bar): index
                for index, job in enumerate(jobs)
            }
            for future in as_completed(futures):
                outcomes[futures[future]] = future.result()
        finished = True
    finally:
        if own_pool:
            # Interrupted (Ctrl-C): drop queued replays and do not wait for running ones,
            # which may be waiting on a server; each writes its record atomically or not.
            pool.shutdown(wait=finished, cancel_futures=True)
    return [outcome for outcome in outcomes if outcome is not None]


def _execute_remote(
    plan: SweepPlan, client: Any, progress: bool, consume: Callable[[Outcome], None] | None
) -> list[Outcome]:
    """Run the replays on a Dask cluster; write their records here as they come back."""
    jobs = plan.jobs()
    queue = _InOrder(len(jobs), consume)
    outcomes: list[Outcome | None] = [None] * len(jobs)
    with (
        DaskPool(client, plan.backends, plan.replay_mode) as pool,
        _progress_bar(plan, progress) as bar,
    ):
        pending: list[tuple[int, _Job]] = []
        for index, (lane, owner, sample) in enumerate(jobs):
            job = _prepare(plan, lane, owner, sample)  # the old records are on this disk
            if isinstance(job, Outcome):
                outcomes[index] = queue.put(index, job)
                bar.update(len(owner.sessions))
            else:
                pending.append((index, job))
        size = batch_size(len(pending), pool.threads())
        submitted: dict[Any, list[tuple[int, _Job]]] = {}
        for start in range(0, len(pending), size):
            batch = pending[start : start + size]
            submitted[pool.submit([(j.lane, j.owner, j.sample) for _, j in batch])] = batch
        for future, results in pool.completed(submitted):
            batch = submitted.pop(future)  # dropped: the workers free the result
            for (index, job), result in zip(batch, results, strict=True):
                outcomes[index] = queue.put(index, _finish_remote(plan, job, result))
                bar.update(len(job.owner.sessions))
    return [outcome for outcome in outcomes if outcome is not None]


def lane_status(plan: SweepPlan, outcomes: Sequence[Outcome]) -> dict[str, dict[str, Any]]:
    status: dict[str, dict[str, Any]] = {}
    for lane in plan.lanes:
        mine = [o for o in outcomes if o.lane_id == lane.lane_id]
        reasons = Counter(o.reason for o in mine if o.replayed)
        status[lane.lane_id] = {
            "reused": sum(1 for o in mine if not o.replayed),
            "replayed": sum(1 for o in mine if o.replayed),
            "reasons": dict(reasons.most_common()),
            "incomplete": sorted({o.user_id for o in mine if not o.complete}),
        }
    return status
