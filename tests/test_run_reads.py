"""A loaded run reads each lane's owner records once for its final facts, and hands out copies."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from builders import city_owners, update, write_owners

import memlab.sweeps.run as run_module
from memlab.backends.scripted import ScriptedBackend
from memlab.core.llm import CompletionRequest
from memlab.sweeps.driver import sweep
from memlab.sweeps.grid import Grid
from memlab.sweeps.run import load_run

T0 = datetime(2025, 5, 5, 9, 0, tzinfo=UTC)


def _reply(request: CompletionRequest) -> str:
    city = "Leeds" if "Leeds" in str(request.messages[-1]["content"]) else "Porto"
    return update(f"Lives in {city}")


def test_final_facts_are_read_once_per_lane_and_copied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dataset = write_owners(tmp_path / "d.jsonl", city_owners(T0))
    grid = Grid.from_mapping({"name": "f", "replay_mode": "per_session"})
    model = ScriptedBackend(function=_reply)
    sweep(dataset, grid, runs_dir=tmp_path, backend_factory=lambda _s: model, progress=False)
    run = load_run(tmp_path / "f")
    (lane,) = run.lanes
    reads: list[str] = []
    real = run_module.read_owner_record

    def counted(run_path: Path, lane_id: str, user_id: str, sample: int = 0) -> dict:  # type: ignore[type-arg]
        reads.append(user_id)
        return real(run_path, lane_id, user_id, sample)

    monkeypatch.setattr(run_module, "read_owner_record", counted)
    first = run.final_facts(lane)
    assert sorted(first["content"]) == ["Lives in Leeds", "Lives in Porto"]
    first.loc[:, "content"] = "changed by the caller"  # a sentinel the memo must not see
    again = run.final_facts(lane)
    assert sorted(again["content"]) == ["Lives in Leeds", "Lives in Porto"]
    assert sorted(reads) == ["ann", "bob"]  # each owner record read once for both calls
