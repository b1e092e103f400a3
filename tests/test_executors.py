"""The parts of the Dask executor that need no cluster: the option, the worker's cache layer,
the driver's cache writes and the worker's checks of the backend it builds."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import pytest

from memlab.backends.caching.cache import (
    CacheCorruptError,
    CachedBackend,
    CacheMissError,
    CacheMode,
    entry_path,
    read_entries,
)
from memlab.backends.caching.memory_cache import SnapshotCache
from memlab.backends.registry import resolve_backend
from memlab.backends.scripted import ScriptedBackend, user_lines_reply
from memlab.core.pipeline.llm import Completion, CompletionRequest
from memlab.grids.grid import Grid
from memlab.sweeps.executors import (
    MAX_BATCH,
    DaskSpec,
    ExecutorError,
    batch_size,
    dask_client,
    parse_executor,
)
from memlab.sweeps.plan import plan_sweep
from memlab.sweeps.remote import (
    RemoteTask,
    WorkerBackendError,
    WorkerBackends,
    run_remote,
    run_remote_batch,
)


@pytest.mark.parametrize(
    ("text", "spec"),
    [
        ("dask://10.0.0.5:8786", DaskSpec(address="tcp://10.0.0.5:8786")),
        (" dask://scheduler.lan:8786 ", DaskSpec(address="tcp://scheduler.lan:8786")),
        ("dask://[::1]:8786", DaskSpec(address="tcp://[::1]:8786")),
        ("dask-local:2", DaskSpec(workers=2, threads=1)),
        ("dask-local:2x4", DaskSpec(workers=2, threads=4)),
    ],
)
def test_executor_values(text: str, spec: DaskSpec) -> None:
    assert parse_executor(text) == spec


@pytest.mark.parametrize(
    "text",
    ["", "dask", "dask-local:0", "dask-local:2x0", "dask-local:999999", "dask://host",
     "dask://host:0", "dask://host:70000", "spark://host:7077", "dask://a b:1", "threads:4"],
)  # fmt: skip
def test_bad_executor_values_say_what_is_accepted(text: str) -> None:
    with pytest.raises(ExecutorError, match=r"expected dask://HOST:PORT .* dask-local:N"):
        parse_executor(text)


def test_without_distributed_a_dask_executor_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # import fails
    with (
        pytest.raises(ExecutorError, match=r"pip install 'memlab\[dask\]'"),
        dask_client(DaskSpec(workers=1)),
    ):
        pass


def _request(text: str) -> CompletionRequest:
    return CompletionRequest(messages=[{"role": "user", "content": text}])


def test_snapshot_cache_serves_hits_and_records_misses(tmp_path: Path) -> None:
    recorder = CachedBackend(ScriptedBackend(["first"]), tmp_path)
    recorder.complete(_request("a"))
    backend = ScriptedBackend(["fresh"], repeat_last=True)
    layer = SnapshotCache(backend, read_entries(tmp_path), "read_write", tmp_path)
    hit = layer.complete(_request("a"))
    assert (hit.text, hit.cached, backend.call_count) == ("first", True, 0)
    assert layer.used == [recorder.key_for(_request("a"))]
    miss = layer.complete(_request("b"))
    again = layer.complete(_request("b"))  # a repeat within the task is a hit, as on disk
    assert (miss.text, miss.cached, again.cached, backend.call_count) == ("fresh", False, True, 1)
    assert [(r.messages[0]["content"], c.text) for r, c in layer.recorded] == [("b", "fresh")]
    assert len(layer.used) == 1


def test_snapshot_cache_read_only_miss_and_corrupt_entry(tmp_path: Path) -> None:
    key = CachedBackend(ScriptedBackend(["x"]), tmp_path).key_for(_request("bad"))
    path = entry_path(tmp_path, key)
    path.parent.mkdir(parents=True)
    path.write_text("{not json", encoding="utf-8")
    backend = ScriptedBackend(["never"])
    layer = SnapshotCache(backend, read_entries(tmp_path), CacheMode.READ_ONLY, tmp_path)
    with pytest.raises(CacheMissError, match="read-only mode"):
        layer.complete(_request("other"))
    with pytest.raises(CacheCorruptError, match="not valid JSON"):
        layer.complete(_request("bad"))
    assert backend.call_count == 0 and layer.recorded == []


def test_put_keeps_a_sound_entry_and_moves_a_corrupt_one_aside(tmp_path: Path) -> None:
    cache = CachedBackend(ScriptedBackend(["recorded here"]), tmp_path)
    cache.complete(_request("a"))
    cache.put(_request("a"), Completion(text="from a worker"))
    assert cache.complete(_request("a")).text == "recorded here"  # the first reply wins
    path = entry_path(tmp_path, cache.key_for(_request("b")))
    path.parent.mkdir(exist_ok=True)
    path.write_text("corrupt", encoding="utf-8")
    cache.put(_request("b"), Completion(text="from a worker", backend="scripted"))
    assert json.loads(path.read_text())["completion"]["text"] == "from a worker"
    assert len(list(path.parent.glob("*.corrupt-*"))) == 1  # set aside, not overwritten
    read_only = CachedBackend(ScriptedBackend(["x"]), tmp_path / "ro", mode="read_only")
    read_only.put(_request("c"), Completion(text="ignored"))
    assert not (tmp_path / "ro").exists()


def _task(tmp_path: Path) -> RemoteTask:
    grid = Grid.from_mapping({"name": "t", "base": {"backend": "scripted:user-lines"}})
    plan = plan_sweep("smoke", grid, runs_dir=tmp_path)
    return RemoteTask(plan.lanes[0], plan.owners[0], 0, grid.replay_mode)


def test_a_remote_task_replays_without_touching_the_drivers_disk(tmp_path: Path) -> None:
    task = _task(tmp_path)
    source = WorkerBackends(resolve_backend, "t1", CacheMode.READ_WRITE, tmp_path / "cache")
    result = run_remote(task, source, {})
    assert result.replay.calls and result.replay.final_memory["facts"]
    assert len(result.recorded) == len(result.replay.calls)
    assert not (tmp_path / "cache").exists() and not (tmp_path / "t").exists()


def test_a_worker_refuses_a_backend_other_than_the_planned_one(tmp_path: Path) -> None:
    task = _task(tmp_path)
    planned = dict(task.lane.identity, backend={"name": "scripted", "model": "another"})
    other = dataclasses.replace(task, lane=dataclasses.replace(task.lane, identity=planned))
    with pytest.raises(WorkerBackendError, match="planned with"):
        run_remote(other, WorkerBackends(resolve_backend, "t2"), {})
    older = dict(task.lane.identity, memlab="0.0.1")
    stale = dataclasses.replace(task, lane=dataclasses.replace(task.lane, identity=older))
    with pytest.raises(WorkerBackendError, match="same version"):
        run_remote(stale, WorkerBackends(resolve_backend, "t3"), {})


def test_user_lines_replies_are_deterministic_facts_of_the_user_lines() -> None:
    prompt = 'memory: {"id": "fact_0000000a"}\n\nUser: I moved to Porto.\n\nAssistant: Nice.'
    reply = json.loads(user_lines_reply(_request(prompt)))
    assert [fact["content"] for fact in reply["newFacts"]] == ["I moved to Porto."]
    assert 0.5 <= reply["newFacts"][0]["confidence"] < 1.0
    assert reply["user"]["topOfMind"] == {"summary": "I moved to Porto.", "shouldUpdate": True}
    assert user_lines_reply(_request(prompt)) == json.dumps(reply, ensure_ascii=False)


@pytest.mark.parametrize(
    ("replays", "threads", "size"),
    [
        (64, 8, 4),  # two batches per thread: 16 tasks instead of 64
        (65, 8, 5),  # rounded up: never more than two batches per thread
        (3, 8, 1),  # fewer replays than threads: one each
        (28, 2, 7),
        (10_000, 8, MAX_BATCH),  # a lost worker reruns at most MAX_BATCH replays
        (64, 0, 1),  # no worker connected yet: thread count unknown
    ],
)
def test_batches_keep_every_thread_busy(replays: int, threads: int, size: int) -> None:
    assert batch_size(replays, threads) == size


def test_a_batch_gives_each_tasks_own_result_in_order(tmp_path: Path) -> None:
    grid = Grid.from_mapping({"name": "t", "base": {"backend": "scripted:user-lines"}})
    plan = plan_sweep("smoke", grid, runs_dir=tmp_path)
    tasks = [RemoteTask(plan.lanes[0], owner, 0, grid.replay_mode) for owner in plan.owners]
    source = WorkerBackends(resolve_backend, "batch")
    batch = run_remote_batch(tasks, source, {})
    alone = [run_remote(task, source, {}) for task in tasks]
    assert len(tasks) > 1
    assert [r.replay.user_id for r in batch] == [o.user_id for o in plan.owners]
    assert [r.replay.final_memory for r in batch] == [r.replay.final_memory for r in alone]
