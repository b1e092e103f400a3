"""No success without results: an update or a replay that breaks in an unexpected way is a
recorded failure of that replay (the run is incomplete, exits 1, and the rerun replays it),
never a lost one that leaves a "complete" run behind."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from builders import city_owners, update, write_owners
from hostile import hollow_runs

from memlab.backends.scripted import ScriptedBackend
from memlab.core.jsondoc.merge import BaselineMerge
from memlab.core.pipeline.llm import Completion, CompletionRequest
from memlab.core.pipeline.storage import InMemoryStorage
from memlab.core.pipeline.updater import UNFINISHED_STAGES, MemoryUpdater
from memlab.grids.grid import Grid
from memlab.sweeps.driver import IncompleteSweepError, sweep

T0 = datetime(2025, 6, 2, 9, 0, tzinfo=UTC)
GRID = Grid.from_mapping({"name": "u", "replay_mode": "per_session"})
TURN = [{"role": "user", "content": "I live in Leeds."}, {"role": "assistant", "content": "OK"}]


class _Odd:
    """A backend that breaks its contract: raises a plain error, or returns no Completion."""

    name = "odd"
    model = "odd-1"

    def __init__(self, how: str) -> None:
        self.how = how

    def complete(self, request: CompletionRequest) -> Any:
        if self.how == "raise":
            raise KeyError("choices")  # what an SDK does on a wrongly shaped body
        return {"text": update("Lives in Leeds")}


class _ExplodingMerge(BaselineMerge):
    def apply_in_place(self, *args: Any, **kwargs: Any) -> Any:
        raise ZeroDivisionError("a bug in a merge strategy")


@pytest.mark.parametrize("how", ["raise", "no completion"])
def test_a_backend_breaking_its_contract_is_a_recorded_backend_failure(how: str) -> None:
    result = MemoryUpdater(backend=_Odd(how), storage=InMemoryStorage()).run_update(TURN, "t")
    assert (result.saved, result.error_stage) == (False, "backend")
    assert result.error and ("KeyError" in result.error or "dict" in result.error)


def test_an_unexpected_error_in_a_step_is_a_recorded_internal_failure() -> None:
    updater = MemoryUpdater(
        backend=ScriptedBackend([update("Lives in Leeds")]),
        storage=InMemoryStorage(),
        merge=_ExplodingMerge(),
    )
    result = updater.run_update(TURN, "t")
    assert (result.saved, result.error_stage) == (False, "internal")
    assert "ZeroDivisionError" in (result.error or "")
    assert "internal" in UNFINISHED_STAGES and "parse" not in UNFINISHED_STAGES


def _sweep(tmp_path: Path, backend: Any) -> Any:
    dataset = write_owners(tmp_path / "d.jsonl", city_owners(T0))
    return sweep(
        dataset,
        GRID,
        runs_dir=tmp_path / "runs",
        backend_factory=lambda spec: backend,
        progress=False,
    )


def test_a_run_whose_backend_broke_is_incomplete_and_replayed_once_fixed(tmp_path: Path) -> None:
    broken = [True]

    def reply(request: CompletionRequest) -> str:
        if broken[0]:
            raise KeyError("choices")  # what an SDK does on a wrongly shaped body
        return update("Lives in Leeds")

    backend = ScriptedBackend(function=reply)  # the same model before and after the fix
    with pytest.raises(IncompleteSweepError) as failed:
        _sweep(tmp_path, backend)
    run = failed.value.run
    assert run.manifest["complete"] is False
    assert sorted(user for _lane, user in failed.value.failed) == ["ann", "bob"]
    assert hollow_runs(tmp_path) == []
    broken[0] = False
    fixed = _sweep(tmp_path, backend)
    assert fixed.manifest["complete"] is True
    assert list(fixed.lane_status["why"]) == ["earlier replay had backend errors (2)"]
    assert int(fixed.summary["llm_calls"].iloc[0]) == 2


def test_a_replay_that_raises_is_recorded_unfinished(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the replay broke")

    monkeypatch.setattr("memlab.sweeps.execute.replay_owner", broken)
    with pytest.raises(IncompleteSweepError, match="the replay broke"):
        _sweep(tmp_path, ScriptedBackend([update()], repeat_last=True))
    records = sorted((tmp_path / "runs" / "u").glob("lanes/*/owners/*.json"))
    assert [json.loads(r.read_text("utf-8"))["complete"] for r in records] == [False, False]
    assert hollow_runs(tmp_path) == []


def test_a_replay_that_lost_an_update_is_unfinished() -> None:
    from memlab.sweeps.execute import unfinished
    from memlab.sweeps.replay import OwnerReplay

    call = {"error_stage": None, "error": None}
    assert unfinished(OwnerReplay("u", calls=[call], updates=1)) == ""
    assert "2 updates ran but 1 were recorded" in unfinished(
        OwnerReplay("u", calls=[call], updates=2)
    )
    failed = {"error_stage": "internal", "error": "unexpected ZeroDivisionError"}
    assert unfinished(OwnerReplay("u", calls=[failed], updates=1)) == failed["error"]


def test_a_completion_text_echoing_a_key_is_redacted_where_it_enters(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    secret = "sk-enters-here-0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    backend = ScriptedBackend(function=lambda request: update(f"Key is {secret}"))
    result = MemoryUpdater(backend=backend, storage=InMemoryStorage()).run_update(TURN, "t")
    assert isinstance(result.completion, Completion) and secret not in result.completion.text
    assert result.saved and secret not in json.dumps(
        result.applied.memory if result.applied else {}
    )
