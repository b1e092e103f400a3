"""Sweeps on a local Dask cluster of 2 worker processes give the thread executor's results.

One cluster serves the module (starting one takes seconds); the test that kills a worker runs
last. The lanes use ``scripted:user-lines``, a backend the worker processes build themselves
from the spec (each user line becomes a fact), so the metrics are not trivially zero.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from builders import cache_entries

from memlab.backends.registry import resolve_backend
from memlab.cli.main import main
from memlab.grids.grid import Grid
from memlab.runs.run import Run, load_run
from memlab.sweeps.driver import IncompleteSweepError, sweep
from memlab.sweeps.executors import DaskSpec, ExecutorError, dask_client
from memlab.sweeps.remote import WorkerBackendError

pytest.importorskip("distributed", reason="the Dask executor needs memlab[dask] (distributed)")

pytestmark = pytest.mark.dask

GRID: dict[str, Any] = {
    "name": "dask",
    "base": {"backend": "scripted:user-lines"},
    "axes": {"fact_confidence_threshold": [0.6, 0.8]},
}
TIMINGS = {"duration_s", "latency_s"}  # wall-clock measurements differ between runs


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    with dask_client(DaskSpec(workers=2, threads=1)) as client:
        client.wait_for_workers(2, timeout=60)
        yield client


def _sweep(tmp: Path, name: str, dataset: str = "personas", **options: Any) -> Run:
    grid = Grid.from_mapping({**GRID, "name": name})
    return sweep(dataset, grid, runs_dir=tmp, progress=False, **options)


def _without_timings(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.drop(columns=[c for c in frame.columns if c in TIMINGS])


def _stores(run: Run) -> list[Path]:
    return sorted(path.relative_to(run.path) for path in run.path.glob("lanes/*/stores/*"))


def _assert_same_results(threads: Run, remote: Run) -> None:
    pd.testing.assert_frame_equal(threads.summary, remote.summary)
    pd.testing.assert_frame_equal(threads.sessions, remote.sessions)
    pd.testing.assert_frame_equal(_without_timings(threads.calls), _without_timings(remote.calls))
    stores = _stores(threads)
    assert stores == _stores(remote)
    for store in stores:
        assert (threads.path / store).read_bytes() == (remote.path / store).read_bytes(), store


@pytest.mark.parametrize("dataset", ["smoke", "personas"])
def test_a_local_cluster_gives_the_thread_executors_results(
    cluster: Any, tmp_path: Path, dataset: str
) -> None:
    threads = _sweep(tmp_path, "threads", dataset)
    remote = _sweep(tmp_path, "remote", dataset, executor=cluster)
    assert threads.summary["final_facts"].sum() > 0  # the comparison has something to compare
    assert threads.summary["skipped_below_threshold"].sum() > 0
    _assert_same_results(threads, remote)
    assert remote.manifest is not None and remote.manifest["lanes"] == list(threads.lanes)
    resumed = _sweep(tmp_path, "remote", dataset, executor=cluster)  # decided on the driver
    assert (resumed.lane_status["replayed"] == 0).all()
    assert (resumed.lane_status["reused"] == remote.lane_status["replayed"]).all()


def test_new_replies_reach_the_drivers_cache_and_a_read_only_cluster_replays_them(
    cluster: Any, tmp_path: Path
) -> None:
    local, shared = tmp_path / "cache-threads", tmp_path / "cache-cluster"
    _sweep(tmp_path, "record-threads", "smoke", cache_dir=local)
    recorded = _sweep(tmp_path, "record", "smoke", executor=cluster, cache_dir=shared)
    entries = cache_entries(shared)
    assert len(entries) > 0
    assert [p.name for p in entries] == [p.name for p in cache_entries(local)]
    before = {path: path.stat().st_mtime_ns for path in entries}
    time.sleep(0.01)
    replayed = _sweep(
        tmp_path, "replay", "smoke", executor=cluster, cache_dir=shared, cache_mode="read_only"
    )
    assert (replayed.summary["cache_hits"] == replayed.summary["llm_calls"]).all()
    assert cache_entries(shared) == entries  # nothing new was written
    assert all(path.stat().st_mtime_ns > before[path] for path in entries)  # marked as used
    metrics = ["final_facts", "recall", "precision", "added", "removed"]
    pd.testing.assert_frame_equal(recorded.summary[metrics], replayed.summary[metrics])


def test_a_read_only_miss_on_a_worker_is_an_incomplete_replay(cluster: Any, tmp_path: Path) -> None:
    with pytest.raises(IncompleteSweepError, match="read-only") as caught:
        _sweep(
            tmp_path,
            "miss",
            "smoke",
            executor=cluster,
            cache_dir=tmp_path / "empty",
            cache_mode="read_only",
        )
    run = caught.value.run
    assert len(caught.value.failed) == len(run.lanes) * run.calls["user_id"].nunique()
    assert not (tmp_path / "empty").exists()


def test_a_backend_factory_the_workers_cannot_receive_is_one_clear_error(
    cluster: Any, tmp_path: Path
) -> None:
    lock = threading.Lock()

    def factory(spec: str) -> Any:
        with lock:  # a lock cannot be pickled
            return resolve_backend(spec)

    with pytest.raises(ExecutorError, match="cannot be sent to Dask workers"):
        _sweep(tmp_path, "bad", "smoke", executor=cluster, backend_factory=factory)


def test_a_worker_whose_backend_differs_from_the_drivers_stops_the_sweep(
    cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The workers started without it: they would talk to the default endpoint instead.
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    keyed = functools.partial(resolve_backend, api_key="sk-test-only")
    grid = Grid.from_mapping({"name": "elsewhere", "base": {"backend": "openai:some-model"}})
    with pytest.raises(WorkerBackendError, match=r"planned with .* every worker host"):
        sweep("smoke", grid, runs_dir=tmp_path, executor=cluster, backend_factory=keyed)
    assert not list(tmp_path.glob("elsewhere/lanes/*/owners/*.json"))
    assert not (tmp_path / "elsewhere" / "manifest.json").exists()


def test_the_cli_connects_to_a_running_scheduler(
    cluster: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    grid = tmp_path / "grid.yaml"
    grid.write_text(json.dumps({**GRID, "dataset": "smoke"}), encoding="utf-8")
    address = cluster.scheduler.address.removeprefix("tcp://")
    argv = ["sweep", str(grid), "--runs-dir", str(tmp_path), "--no-progress"]
    assert main([*argv, "--executor", f"dask://{address}"]) == 0
    remote = load_run(tmp_path / "dask")
    assert main([*argv, "--name", "threads"]) == 0
    _assert_same_results(load_run(tmp_path / "threads"), remote)
    assert "run written to" in capsys.readouterr().out


def _kill_a_busy_worker(client: Any, sweep_thread: threading.Thread) -> dict[str, Any]:
    """SIGKILL a worker process while it runs a replay; what was killed, and when."""
    pids: dict[str, int] = client.run(os.getpid)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and sweep_thread.is_alive():
        busy = {addr: tasks for addr, tasks in client.processing().items() if tasks}
        executing = {
            addr: keys
            for addr, keys in client.run(
                lambda dask_worker: sorted(map(str, dask_worker.state.executing)),
                workers=list(busy),
            ).items()
            if keys
        }
        if executing:
            addr, keys = next(iter(executing.items()))
            os.kill(pids[addr], signal.SIGKILL)
            return {"pid": pids[addr], "keys": keys, "sweep_running": sweep_thread.is_alive()}
        time.sleep(0.02)
    raise AssertionError("no worker was busy while the sweep ran")


def test_a_worker_killed_mid_task_loses_no_owner_and_duplicates_none(
    cluster: Any, tmp_path: Path
) -> None:
    # Slow replies (20 ms a call) keep each worker busy long enough to be killed mid-task.
    slow = functools.partial(resolve_backend, latency_s=0.02)
    reference = _sweep(tmp_path, "threads")
    done: dict[str, Any] = {}

    def run() -> None:
        try:
            done["run"] = _sweep(tmp_path, "killed", executor=cluster, backend_factory=slow)
        except BaseException as exc:  # re-raised below, in the test's thread
            done["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    try:
        killed = _kill_a_busy_worker(cluster, thread)
    finally:
        thread.join(timeout=300)
    if "error" in done:
        raise done["error"]
    assert killed["sweep_running"] and killed["keys"]
    with pytest.raises(ProcessLookupError):
        os.kill(killed["pid"], 0)  # the worker process is gone
    run = load_run(tmp_path / "killed")
    assert run.manifest is not None
    owners = run.manifest["owners"]
    assert len(owners) == len(set(owners)) == 14
    for lane_id in run.lanes:
        records = sorted(p.stem for p in (run.path / "lanes" / lane_id / "owners").glob("*.json"))
        assert records == sorted(owners)
    _assert_same_results(reference, run)
