"""Where a sweep's replays run: threads in this process, or the workers of a Dask cluster.

:func:`memlab.sweep`'s ``executor`` (and ``memlab sweep --executor``) accepts:

==========================  ==================================================================
``None``                    a thread pool of ``max_workers`` in this process (the default)
an ``Executor``             any ``concurrent.futures`` executor, running in this process
``"dask://HOST:PORT"``      connect to a running Dask scheduler (needs ``memlab[dask]``)
``"dask-local:N"``          start a local cluster of N worker processes, one thread each;
                            ``"dask-local:NxT"``: T threads each
a ``distributed.Client``    the cluster it is connected to (left open afterwards)
==========================  ==================================================================

On Dask, each (lane, owner, sample) replay is described as data
(:class:`~memlab.sweeps.remote.RemoteTask`) and sent in a batch of a few replays, one cluster
task per batch (:func:`batch_size`: about two batches per worker thread, so every thread stays
busy while a replay costs a fraction of a scheduler round trip). Workers build the backends
themselves from the lanes' specs with the sweep's backend factory, which must therefore be
picklable (the default registry is). Results come back to the driver, which alone writes the
run directory.

**Response cache.** Workers never touch the driver's disk. At the start of a sweep the driver
reads its cache directory once (every entry, any model) and broadcasts it to the workers; a
worker serves hits from that snapshot and returns the replies it had to ask the backend for,
which the driver stores (:mod:`memlab.backends.caching.memory_cache`). A read-only cache works the
same way, so a cluster replays committed cache files offline.

**Faults.** A task is idempotent: it changes nothing outside its worker process. When a worker
process dies, Dask runs its tasks again on other workers (up to the scheduler's
``distributed.scheduler.allowed-failures``, 3 by default); the driver writes a record only
when a task's result arrives, once per (lane, owner, sample). A task that outlives its retries
(or a lost scheduler) stops the sweep with an :class:`ExecutorError`; the run directory has no
manifest then, and rerunning the sweep keeps every replay that finished.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import signal
import socket
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import CancelledError, Executor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union

from memlab.backends.caching.cache import CacheMode, read_entries
from memlab.core.base.files import io_reason
from memlab.core.base.machine import available_memory, cpu_count
from memlab.core.pipeline.llm import Completion
from memlab.datasets.models import Owner
from memlab.errors import MemlabError, excerpt
from memlab.grids.lane import ReplayMode
from memlab.grids.lane_backends import LaneBackends
from memlab.sweeps.plan import ResolvedLane
from memlab.sweeps.remote import RemoteResult, RemoteTask, WorkerBackends, run_remote_batch

if TYPE_CHECKING:
    from distributed import Client

# distributed's Client and Future are partly untyped: this module handles them as Any.
DaskFuture = Any

__all__ = [
    "DaskPool",
    "DaskSpec",
    "ExecutorError",
    "SweepExecutor",
    "batch_size",
    "check_local_size",
    "dask_client",
    "is_dask_client",
    "local_process_limit",
    "parse_executor",
    "worker_processes",
]

logger = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 15
"""How long to wait for a ``dask://`` scheduler before giving up."""

_HANDSHAKE_S = 5.0  # a scheduler greets a new connection at once

BATCHES_PER_THREAD = 2
"""Batches queued per worker thread: two keep a thread busy while its next batch is sent."""

MAX_BATCH = 16
"""Most replays in one cluster task (a lost worker reruns its whole batch)."""

MAX_LOCAL_WORKERS = 256
"""Bounds of ``dask-local:NxT`` (processes and threads per process, and threads in all)."""

WORKER_PROCESS_BYTES = 512 * 1024 * 1024
"""Memory set aside per local worker process (Python, memlab, a replay's data)."""

_SPEC_HELP = (
    "expected dask://HOST:PORT (a running scheduler) or dask-local:N / dask-local:NxT "
    "(N local worker processes with T threads each)"
)
_LOCAL_RE = re.compile(r"dask-local:(\d{1,4})(?:x(\d{1,4}))?")
_REMOTE_RE = re.compile(r"dask://([A-Za-z0-9.\-]+|\[[0-9A-Fa-f:.]+\]):(\d{1,5})")


SweepExecutor = Union[Executor, str, "DaskSpec", "Client"]  # a runtime alias: no | here
"""What :func:`memlab.sweep` accepts as ``executor`` (see the module docstring)."""


class ExecutorError(MemlabError, ValueError):
    """An executor option is invalid, or the cluster cannot run the sweep; the message says
    what to do."""


@dataclass(frozen=True)
class DaskSpec:
    """A parsed ``--executor`` value: a scheduler address, or a local cluster's size.

    Attributes:
        address: ``tcp://HOST:PORT`` of a running scheduler; empty for a local cluster.
        workers: Worker processes of the local cluster.
        threads: Threads per local worker process.
    """

    address: str = ""
    workers: int = 0
    threads: int = 1


def parse_executor(text: str) -> DaskSpec:
    """Parse ``dask://HOST:PORT``, ``dask-local:N`` or ``dask-local:NxT``.

    Raises:
        ExecutorError: Any other value, or a count or port out of range.
    """
    value = str(text).strip()
    remote = _REMOTE_RE.fullmatch(value)
    if remote and 0 < int(remote.group(2)) < 65536:
        return DaskSpec(address=f"tcp://{remote.group(1)}:{int(remote.group(2))}")
    local = _LOCAL_RE.fullmatch(value)
    if local:
        workers, threads = int(local.group(1)), int(local.group(2) or 1)
        if 1 <= workers <= MAX_LOCAL_WORKERS and 1 <= threads <= MAX_LOCAL_WORKERS:
            return DaskSpec(workers=workers, threads=threads)
    raise ExecutorError(
        f"bad executor {excerpt(value)}: {_SPEC_HELP}; counts from 1 to {MAX_LOCAL_WORKERS}, "
        "ports from 1 to 65535"
    )


def batch_size(replays: int, threads: int) -> int:
    """Replays per cluster task for ``replays`` replays on ``threads`` worker threads.

    Batches of ``ceil(replays / (BATCHES_PER_THREAD * threads))`` (at most ``MAX_BATCH``);
    one replay per task while no worker is connected (its thread count is unknown).
    """
    if threads < 1:
        return 1
    return max(1, min(MAX_BATCH, -(-replays // (BATCHES_PER_THREAD * threads))))


def local_process_limit() -> int:
    """Worker processes a local cluster may start here: one per CPU, as memory allows."""
    by_memory = available_memory() // WORKER_PROCESS_BYTES
    return max(1, min(cpu_count(), by_memory, MAX_LOCAL_WORKERS))


def check_local_size(spec: DaskSpec) -> DaskSpec:
    """``spec`` when its local cluster fits this machine (processes and threads).

    Raises:
        ExecutorError: More processes than :func:`local_process_limit`, or more threads in
            all than ``MAX_LOCAL_WORKERS``.
    """
    limit = local_process_limit()
    if spec.workers > limit:
        raise ExecutorError(
            f"dask-local:{spec.workers} starts {spec.workers} worker processes; this machine "
            f"has {cpu_count()} CPUs and {available_memory() / 1024**3:.1f} GiB available, "
            f"enough for {limit}: use dask-local:{limit}xT to add T threads per process"
        )
    if spec.workers * spec.threads > MAX_LOCAL_WORKERS:
        raise ExecutorError(
            f"dask-local:{spec.workers}x{spec.threads} runs {spec.workers * spec.threads} "
            f"replays at once; at most {MAX_LOCAL_WORKERS} in all"
        )
    return spec


def is_dask_client(executor: object) -> bool:
    """Whether ``executor`` is a ``distributed.Client`` (without importing distributed)."""
    return type(executor).__module__.split(".")[0] == "distributed" and hasattr(executor, "scatter")


def _distributed() -> Any:
    try:
        import distributed
    except ImportError:
        raise ExecutorError(
            "a Dask executor needs the 'distributed' package: pip install 'memlab[dask]'"
        ) from None
    return distributed


@contextlib.contextmanager
def dask_client(spec: DaskSpec) -> Iterator[Any]:
    """A client of the scheduler at ``spec.address``, or of a new local cluster; closed after.

    Raises:
        ExecutorError: ``distributed`` is not installed or the scheduler cannot be reached.
    """
    distributed = _distributed()
    if not spec.address:
        check_local_size(spec)
    cluster = None
    try:
        if spec.address:
            client = _connect(distributed, spec.address)
        else:
            cluster = distributed.LocalCluster(
                n_workers=spec.workers,
                threads_per_worker=spec.threads,
                processes=True,
                dashboard_address=None,
                silence_logs=logging.WARNING,
            )
            client = distributed.Client(cluster)
    except (OSError, TimeoutError) as exc:
        if cluster is not None:
            cluster.close()
        where = spec.address or "a local cluster"
        raise ExecutorError(
            f"cannot reach the Dask scheduler at {where}: {excerpt(str(exc), 200)} (start one "
            "with 'dask scheduler' and workers with 'dask worker ADDRESS', "
            "see docs/sweeps-and-reports.md)"
        ) from None
    try:
        yield client
    except BaseException:
        # Interrupted or failed: do not wait for replays still running on the workers.
        _close_quickly(client, cluster)
        raise
    client.close()
    if cluster is not None:
        cluster.close()


def _connect(distributed: Any, address: str) -> Any:
    """A client of the scheduler at ``address``, or an :class:`ExecutorError` within about
    ``CONNECT_TIMEOUT_S`` seconds, whatever answers there.

    Something that is not a Dask scheduler (a web server, a silent port) can make the client
    wait far longer than its timeout or fail with odd errors while it reads the handshake, so
    the connection is made in a helper thread and given up after the deadline.
    """
    _expect_handshake(address)
    done: dict[str, Any] = {}

    def attempt() -> None:
        try:
            done["client"] = distributed.Client(address, timeout=CONNECT_TIMEOUT_S)
        except BaseException as exc:  # reported by the waiting thread
            done["error"] = exc

    thread = threading.Thread(target=attempt, name="memlab-dask-connect", daemon=True)
    thread.start()
    thread.join(CONNECT_TIMEOUT_S + 5)
    if "client" in done:
        return done["client"]
    error = done.get("error")
    reason = (
        f"{type(error).__name__}: {excerpt(str(error), 160)}"
        if error is not None
        else f"no Dask handshake within {CONNECT_TIMEOUT_S + 5} s"
    )
    raise ExecutorError(
        f"cannot connect to a Dask scheduler at {address} ({reason}); check that a Dask "
        "scheduler listens there ('dask scheduler --port PORT', see docs/sweeps-and-reports.md)"
    )


def _expect_handshake(address: str) -> None:
    """Check that whatever listens at ``address`` speaks first, as a Dask scheduler does.

    A scheduler writes its handshake as soon as a connection is accepted; a web server or
    a silent port waits for the client, which would leave the Dask client waiting.

    Raises:
        ExecutorError: Nothing listens there, or it sends nothing within a few seconds.
    """
    host, _, port = address.removeprefix("tcp://").rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=5) as probe:
            probe.settimeout(_HANDSHAKE_S)
            first = probe.recv(1)
    except TimeoutError:
        first = b""
    except OSError as exc:
        raise ExecutorError(
            f"cannot reach the Dask scheduler at {address}: {io_reason(exc)} (start one "
            "with 'dask scheduler' and workers with 'dask worker ADDRESS', "
            "see docs/sweeps-and-reports.md)"
        ) from None
    if not first:
        raise ExecutorError(
            f"the service at {address} is not a Dask scheduler: it sent no handshake within "
            f"{_HANDSHAKE_S:g} s (is it a web server or another service?); pass the address "
            "of 'dask scheduler'"
        )


def _close_quickly(client: Any, cluster: Any) -> None:
    """Close a client (and a local cluster) within about a second, killing busy workers."""
    quiet = logging.getLogger("distributed")
    level = quiet.level
    quiet.setLevel(logging.CRITICAL)  # "worker process still alive, killing" is expected here
    try:
        if cluster is not None:  # our own worker processes: a replay may wait on a server
            for nanny in list(getattr(cluster, "workers", {}).values()):
                pid = getattr(getattr(nanny, "process", None), "pid", None)
                if isinstance(pid, int):
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            client.close(timeout=1)
        if cluster is not None:
            with contextlib.suppress(Exception):
                cluster.close(timeout=1)
    finally:
        quiet.setLevel(level)


def worker_processes(client: Any) -> int:
    """The worker processes connected to ``client``'s scheduler now (at least 1): the number
    of parts a rate limit is shared in (workers joining later are not counted)."""
    return max(1, len(client.scheduler_info().get("workers") or {}))


def _factory_token(backends: LaneBackends) -> str:
    """A digest of the pickled backend factory (workers key their built backends by it)."""
    import cloudpickle

    try:
        pickled = cloudpickle.dumps(backends.factory)
    except Exception as exc:  # any pickling failure: a lock, a socket, a C object
        raise ExecutorError(
            f"the backend factory cannot be sent to Dask workers ({excerpt(str(exc), 160)}): "
            "pass a module-level function or functools.partial(resolve_backend, **options), "
            "or leave backend_factory unset so workers build the lanes' specs themselves"
        ) from None
    return hashlib.sha256(pickled).hexdigest()


class DaskPool:
    """Submits remote replays to a Dask client and hands back their results as they finish.

    Use it as a context manager: leaving it cancels the tasks still pending (a failed sweep
    must not keep the cluster busy).
    """

    def __init__(self, client: Any, backends: LaneBackends, replay_mode: ReplayMode) -> None:
        self._client = client
        self._replay_mode = replay_mode
        mode = CacheMode(backends.cache_mode)  # a sweep may be given the mode's value
        in_use = backends.cache_dir is not None and mode is not CacheMode.OFF
        limits = dict(backends.rates.limits)
        parts = worker_processes(client)
        self._source = WorkerBackends(
            factory=backends.factory,
            # Limits in the token: a sweep with other limits gets backends with its pace.
            token=_factory_token(backends) + f"/{sorted(limits.items())}/{parts}",
            cache_mode=mode if in_use else None,
            cache_dir=backends.cache_dir,
            limits=limits,
            parts=parts,
        )
        logger.info("rate limits paced per worker process at 1/%d of the limit", parts)
        entries: Mapping[str, Completion | str] = {}
        if in_use and backends.cache_dir is not None:
            entries = read_entries(backends.cache_dir)
            logger.info("sending %d cache entries to the workers", len(entries))
        # Broadcast once: every task refers to the workers' copy instead of carrying it.
        self._entries = client.scatter(entries, broadcast=True, hash=False) if entries else {}
        self._names: dict[DaskFuture, str] = {}
        if not client.scheduler_info().get("workers"):
            logger.warning("no Dask worker is connected yet: the replays wait until one joins")

    def __enter__(self) -> DaskPool:
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc_info: object) -> None:
        if kind is KeyboardInterrupt and getattr(self._client, "cluster", None) is not None:
            return  # a local cluster that is shut down next: nothing to cancel
        pending = [future for future in self._names if not future.done()]
        if pending:
            self._client.cancel(pending)

    def threads(self) -> int:
        """Worker threads connected to the cluster now."""
        return int(sum(self._client.nthreads().values()))

    def submit(self, jobs: Sequence[tuple[ResolvedLane, Owner, int]]) -> DaskFuture:
        """Submit the replays of ``jobs`` ``(lane, owner, sample)`` as one cluster task; its
        result is their :class:`RemoteResult` list, in order."""
        tasks = [RemoteTask(lane, owner, sample, self._replay_mode) for lane, owner, sample in jobs]
        future = self._client.submit(
            run_remote_batch, tasks, self._source, self._entries, pure=False
        )
        lane, owner, sample = jobs[0]
        more = f" and {len(jobs) - 1} more" if len(jobs) > 1 else ""
        self._names[future] = f"{lane.lane_id} / {owner.user_id} (sample {sample}){more}"
        return future

    def completed(
        self, futures: Iterable[DaskFuture]
    ) -> Iterator[tuple[DaskFuture, list[RemoteResult]]]:
        """``(future, results)`` of ``futures`` in the order they finish.

        The pool forgets a future once it is yielded: when the caller drops it too, the
        workers free its result (a long sweep's results would otherwise pile up there).

        Raises:
            ExecutorError: A task was lost with every worker it ran on, or cancelled (the
                scheduler went away).
        """
        distributed = _distributed()
        # with_results: results are fetched in the background while this loop writes records.
        finished = distributed.as_completed(list(futures), with_results=True, raise_errors=False)
        for future, result in finished:
            name = self._names.pop(future, "?")
            try:
                if future.status != "finished":
                    future.result()  # raises the task's error
            except distributed.KilledWorker as exc:
                raise ExecutorError(
                    f"the replay {name} was lost with every worker that ran it "
                    f"({excerpt(str(exc), 200)}); check the workers' memory and logs, then "
                    "rerun the sweep (finished replays are kept)"
                ) from None
            except CancelledError as exc:
                raise ExecutorError(
                    f"the replay {name} was cancelled by the Dask scheduler "
                    f"({excerpt(str(exc), 200)}); rerun the sweep (finished replays are kept)"
                ) from None
            yield future, result
