"""What a sweep's remote worker runs: one (lane, owner, sample) replay, described as data.

A :class:`RemoteTask` holds everything a replay depends on (the resolved lane with its prompt
text, the owner's sessions, the sample index, the replay mode); :class:`WorkerBackends` says
how to build the backends (the sweep's backend factory, which must be picklable, and the
response cache mode). :func:`run_remote` runs in a worker process on any machine with memlab
installed and returns a :class:`RemoteResult`: the replay and the cache entries it recorded.
It reads and writes nothing of the driver's: the driver alone writes the run directory and the
response cache (see :mod:`memlab.sweeps.executors`).

A worker process paces the calls of its rate-limited backends at its share of the sweep's
limits (:attr:`WorkerBackends.parts`, the number of worker processes), its threads sharing
one pace per endpoint and model.

Each worker process builds a backend once per spec and keeps it (a local model is loaded once
per process, not once per task), and checks that it is the backend the driver planned with:
a worker whose model file or endpoint differs would otherwise pass its results off under the
driver's lane identity.
"""

from __future__ import annotations

import os
import socket
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memlab._version import __version__
from memlab.backends.caching.cache import CacheMode
from memlab.backends.caching.memory_cache import SnapshotCache
from memlab.backends.identity import backend_identity
from memlab.backends.registry import cacheable
from memlab.backends.remote.rate_limit import RateLimit, RateLimited, RateLimiters
from memlab.core.pipeline.llm import Backend, Completion, CompletionRequest
from memlab.datasets.models import Owner
from memlab.errors import MemlabError
from memlab.grids.lane import ReplayMode
from memlab.grids.lane_backends import BackendFactory
from memlab.sweeps.collection import fewer_collections
from memlab.sweeps.plan import ResolvedLane
from memlab.sweeps.replay import OwnerReplay, replay_owner

__all__ = [
    "RemoteResult",
    "RemoteTask",
    "WorkerBackendError",
    "WorkerBackends",
    "run_remote",
    "run_remote_batch",
]


class WorkerBackendError(MemlabError, RuntimeError):
    """A worker cannot build a lane's backend, or builds a different one than the driver."""


@dataclass(frozen=True)
class RemoteTask:
    """One replay as data (picklable): what :func:`~memlab.sweeps.replay.replay_owner` needs."""

    lane: ResolvedLane
    owner: Owner
    sample: int
    replay_mode: ReplayMode


@dataclass(frozen=True)
class WorkerBackends:
    """How a worker builds the sweep's backends.

    Attributes:
        factory: The sweep's backend factory (sent to the workers, so it must be picklable:
            a module-level function or a ``functools.partial`` of one).
        token: Identifies ``factory`` across tasks, so a worker process builds each backend
            once.
        cache_mode: The response cache mode, or ``None`` without a cache.
        cache_dir: The driver's cache directory (only named in error messages).
        limits: The sweep's rate limits by backend spec (``"*"``: any other), as
            :class:`~memlab.backends.remote.rate_limit.RateLimiters` takes them.
        parts: The worker processes sharing each limit: a process paces at its share, so
            the cluster as a whole keeps to the limit.
    """

    factory: BackendFactory
    token: str
    cache_mode: CacheMode | None = None
    cache_dir: Path | None = None
    limits: Mapping[str, RateLimit] = field(default_factory=dict)
    parts: int = 1


@dataclass
class RemoteResult:
    """What a remote replay sends back to the driver.

    Attributes:
        replay: The replay (calls, snapshots, final memory).
        recorded: ``(request, completion)`` of every backend call, for the driver's cache.
        used: Cache keys served from the driver's snapshot.
        worker: ``host:pid`` of the worker process that ran it.
    """

    replay: OwnerReplay
    recorded: list[tuple[CompletionRequest, Completion]] = field(default_factory=list)
    used: list[str] = field(default_factory=list)
    worker: str = ""


# Backends built in this worker process, by (factory token, spec), with their identity: a
# process-wide cache on purpose, so a local model is loaded once per worker, not per task.
_built: dict[tuple[str, str], tuple[Backend, dict[str, Any]]] = {}
_built_lock = threading.Lock()
# The pace of this worker process's calls, by factory token: one limiter per endpoint and
# model shared by the worker's threads, as in a sweep on threads.
_paces: dict[str, RateLimiters] = {}


def _worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def worker_backend(backends: WorkerBackends, spec: str) -> tuple[Backend, dict[str, Any]]:
    """The backend for ``spec`` in this process and its identity, built on first use.

    Raises:
        WorkerBackendError: The factory fails here (a missing package or model file).
    """
    key = (backends.token, spec)
    with _built_lock:  # held while building: the other threads wait for the one model
        if key not in _built:
            try:
                backend = backends.factory(spec)
            except MemlabError as exc:
                raise WorkerBackendError(
                    f"worker {_worker_name()} cannot build backend {spec!r}: {exc} (install "
                    "memlab with the same extras and model files, and set the same "
                    "environment variables, on every worker host)"
                ) from None
            if isinstance(backend, RateLimited):
                rates = _paces.setdefault(
                    backends.token, RateLimiters(backends.limits, parts=backends.parts)
                )
                backend.rate_limiter = rates.get(*backend.rate_limit_key(), spec)
            _built[key] = (backend, backend_identity(backend))
        return _built[key]


def run_remote(
    task: RemoteTask, backends: WorkerBackends, entries: Mapping[str, Completion | str]
) -> RemoteResult:
    """Replay ``task`` in this process; ``entries`` is the driver's response cache snapshot.

    Idempotent: nothing outside this process changes, so a task retried on another worker
    after its first worker died gives the same result.

    Raises:
        WorkerBackendError: The backend cannot be built here, or it is not the backend the
            driver planned the lane with (another model file, endpoint or version).
    """
    lane = task.lane
    if lane.identity.get("memlab") != __version__:
        raise WorkerBackendError(
            f"worker {_worker_name()} runs memlab {__version__}, the sweep was planned with "
            f"memlab {lane.identity.get('memlab')}: install the same version on every host"
        )
    backend, identity = worker_backend(backends, lane.config.backend)
    planned = lane.identity.get("backend")
    if identity != planned:
        raise WorkerBackendError(
            f"worker {_worker_name()} built backend {lane.config.backend!r} as {identity}, "
            f"but the sweep was planned with {planned}: install the same memlab version, "
            "model files and settings (environment variables) on every worker host"
        )
    layer = None
    cache_mode, cache_dir = backends.cache_mode, backends.cache_dir
    if cache_mode is not None and cache_dir is not None and cacheable(lane.config.backend):
        layer = SnapshotCache(backend, entries, cache_mode, cache_dir)
    with tempfile.TemporaryDirectory(prefix="memlab-replay-") as scratch:
        # The store file a replay rewrites at each snapshot stays on the worker; the driver
        # writes the run directory's copy from the final memory.
        replay = replay_owner(
            task.owner,
            lane,
            backend=layer or backend,
            store_path=Path(scratch) / "store.json",
            replay_mode=task.replay_mode,
            sample=task.sample,
        )
    if layer is None:
        return RemoteResult(replay, worker=_worker_name())
    return RemoteResult(replay, layer.recorded, layer.used, _worker_name())


def run_remote_batch(
    tasks: Sequence[RemoteTask],
    backends: WorkerBackends,
    entries: Mapping[str, Completion | str],
) -> list[RemoteResult]:
    """:func:`run_remote` for each of ``tasks`` in turn: one cluster task and one result
    message for several replays (the scheduler's round trip per task costs more than a short
    replay). A replay that raises stops the batch; the driver then stops the sweep.
    The worker's collector runs less often meanwhile, as in a sweep on threads.
    """
    with fewer_collections():
        return [run_remote(task, backends, entries) for task in tasks]
