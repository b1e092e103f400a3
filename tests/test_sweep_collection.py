"""The collector's thresholds while sweeps run: raised once, restored by the last to leave."""

from __future__ import annotations

import gc
import json
import threading
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from builders import sweep_scripted, write_owners

from memlab.backends.registry import resolve_backend
from memlab.backends.scripted import ScriptedBackend
from memlab.core.jsondoc.contract import MINIMAL_VALID_UPDATE
from memlab.core.pipeline.llm import CompletionRequest
from memlab.grids.grid import Grid
from memlab.sweeps import remote
from memlab.sweeps.collection import YOUNG_THRESHOLD, fewer_collections
from memlab.sweeps.plan import plan_sweep
from memlab.sweeps.remote import RemoteTask, WorkerBackends, run_remote_batch
from memlab.sweeps.replay import OwnerReplay

BEFORE = (900, 11, 12)
"""Thresholds set before each test: none of them CPython's defaults."""
RAISED = (YOUNG_THRESHOLD, 11, 12)


@pytest.fixture(autouse=True)
def thresholds() -> Iterator[None]:
    kept = gc.get_threshold()
    gc.set_threshold(*BEFORE)
    yield
    gc.set_threshold(*kept)


def test_raised_inside_and_restored_after() -> None:
    with fewer_collections():
        assert gc.get_threshold() == RAISED
    assert gc.get_threshold() == BEFORE


def test_restored_when_the_block_raises() -> None:
    with pytest.raises(KeyError), fewer_collections():
        raise KeyError("x")
    assert gc.get_threshold() == BEFORE


def test_nested_blocks_restore_only_when_the_outer_leaves() -> None:
    with fewer_collections():
        with fewer_collections():
            assert gc.get_threshold() == RAISED
        assert gc.get_threshold() == RAISED
    assert gc.get_threshold() == BEFORE


def test_overlapping_blocks_restore_when_the_last_leaves_whichever_it_is() -> None:
    first, second = ExitStack(), ExitStack()
    first.enter_context(fewer_collections())
    second.enter_context(fewer_collections())
    first.close()  # the first to enter leaves first
    assert gc.get_threshold() == RAISED
    second.close()
    assert gc.get_threshold() == BEFORE
    with fewer_collections():  # and the count starts again from nothing
        assert gc.get_threshold() == RAISED
    assert gc.get_threshold() == BEFORE


def test_overlapping_blocks_on_threads() -> None:
    entered, leave = threading.Event(), threading.Event()
    seen: list[tuple[int, int, int]] = []

    def other() -> None:
        with fewer_collections():
            entered.set()
            leave.wait(timeout=30)
        seen.append(gc.get_threshold())

    thread = threading.Thread(target=other)
    with fewer_collections():
        thread.start()
        assert entered.wait(timeout=30)
    assert gc.get_threshold() == RAISED  # the other thread is still inside
    leave.set()
    thread.join(timeout=30)
    assert seen == [BEFORE]
    assert gc.get_threshold() == BEFORE


def test_thresholds_set_inside_by_someone_else_are_kept() -> None:
    with fewer_collections():
        gc.set_threshold(5000, 3, 4)
    assert gc.get_threshold() == (5000, 3, 4)


def test_a_higher_threshold_or_a_collector_turned_off_is_left_alone() -> None:
    for found in ((YOUNG_THRESHOLD * 2, 11, 12), (0, 11, 12)):
        gc.set_threshold(*found)
        with fewer_collections():
            assert gc.get_threshold() == found
        assert gc.get_threshold() == found


def test_a_sweep_replays_with_the_raised_threshold_and_restores_it(tmp_path: Path) -> None:
    during: list[int] = []

    def reply(request: CompletionRequest) -> str:
        during.append(gc.get_threshold()[0])
        return json.dumps(MINIMAL_VALID_UPDATE)

    owner = {
        "user_id": "ann",
        "sessions": [
            {
                "thread_id": "t1",
                "started_at": "2025-01-06T09:00:00Z",
                "messages": [
                    {"role": "human", "content": "hi", "timestamp": "2025-01-06T09:00:00Z"},
                    {"role": "ai", "content": "hello", "timestamp": "2025-01-06T09:00:02Z"},
                ],
                "labels": {},
            }
        ],
    }
    dataset = write_owners(tmp_path / "data.jsonl", [owner])
    grid = {"name": "gc", "replay_mode": "per_session"}
    sweep_scripted(dataset, grid, ScriptedBackend(function=reply), tmp_path / "runs")
    assert during == [YOUNG_THRESHOLD]
    assert gc.get_threshold() == BEFORE


def test_a_remote_batch_replays_with_the_raised_threshold_and_restores_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    during: list[int] = []
    original = remote.replay_owner

    def replay_owner(*args: Any, **kwargs: Any) -> OwnerReplay:
        during.append(gc.get_threshold()[0])
        return original(*args, **kwargs)

    grid = Grid.from_mapping({"name": "t", "base": {"backend": "scripted:user-lines"}})
    plan = plan_sweep("smoke", grid, runs_dir=tmp_path)
    tasks = [RemoteTask(plan.lanes[0], owner, 0, grid.replay_mode) for owner in plan.owners]
    monkeypatch.setattr("memlab.sweeps.remote.replay_owner", replay_owner)
    run_remote_batch(tasks, WorkerBackends(resolve_backend, "batch"), {})
    assert during == [YOUNG_THRESHOLD] * len(tasks)
    assert gc.get_threshold() == BEFORE
