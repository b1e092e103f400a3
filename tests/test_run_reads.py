"""A loaded run reads each lane's owner records once for its final facts, and hands out copies;
the fast read of a final memory gives what the full read gives, or leaves it to the full read."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from builders import city_owners, update, write_owners

import memlab.runs.run as run_module
from memlab.backends.scripted import ScriptedBackend
from memlab.core.pipeline.llm import CompletionRequest
from memlab.grids.grid import Grid
from memlab.runs.final_reads import parse_final_memory
from memlab.runs.run import load_run
from memlab.runs.rundir import RunDir
from memlab.scoring.comparing.comparison import compare
from memlab.sweeps.driver import sweep

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
    real, fast = RunDir.read_owner_record, parse_final_memory

    def counted(self: RunDir, lane_id: str, user_id: str, sample: int = 0) -> dict:  # type: ignore[type-arg]
        reads.append(user_id)
        return real(self, lane_id, user_id, sample)

    def counted_fast(raw: bytes) -> tuple[str, dict[str, Any]] | None:
        found = fast(raw)
        reads.append(found[0] if found is not None else "(full read follows)")
        return found

    monkeypatch.setattr(RunDir, "read_owner_record", counted)
    monkeypatch.setattr(run_module, "parse_final_memory", counted_fast)
    first = run.final_facts(lane)
    assert sorted(first["content"]) == ["Lives in Leeds", "Lives in Porto"]
    first.loc[:, "content"] = "changed by the caller"  # a sentinel the memo must not see
    again = run.final_facts(lane)
    assert sorted(again["content"]) == ["Lives in Leeds", "Lives in Porto"]
    assert sorted(reads) == ["ann", "bob"]  # each owner record read once for both calls


def _one_owner_run(tmp_path: Path) -> tuple[Path, str]:
    dataset = write_owners(tmp_path / "d.jsonl", city_owners(T0)[:1])
    grid = Grid.from_mapping({"name": "f", "replay_mode": "per_session"})
    model = ScriptedBackend(function=_reply)
    sweep(dataset, grid, runs_dir=tmp_path, backend_factory=lambda _s: model, progress=False)
    run = load_run(tmp_path / "f")
    (lane,) = run.lanes
    return run.path, lane


def test_owner_counts_are_computed_once_for_the_summary_and_every_comparison(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dataset = write_owners(tmp_path / "d.jsonl", city_owners(T0))
    grid = Grid.from_mapping(
        {"name": "f", "replay_mode": "per_session", "axes": {"max_facts": [10, 100]}}
    )
    model = ScriptedBackend(function=_reply)
    sweep(dataset, grid, runs_dir=tmp_path, backend_factory=lambda _s: model, progress=False)
    run = load_run(tmp_path / "f")
    computed: list[int] = []
    real = run_module.owner_counts

    def counted(*args: Any, **kwargs: Any) -> Any:
        computed.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(run_module, "owner_counts", counted)
    summary = run.summary
    table = compare(run)
    compare(run)
    assert computed == [1]
    # Both read the same counts: two owners, each holding one fact at the end of each lane.
    assert summary["final_facts"].tolist() == [2, 2]
    assert table.set_index("metric").loc["recall", "owners"] == 2


def test_fast_final_memory_read_matches_the_full_read(tmp_path: Path) -> None:
    run_path, lane = _one_owner_run(tmp_path)
    path = RunDir(run_path).record(lane, "ann")
    record = RunDir(run_path).read_owner_record(lane, "ann")
    assert record["final_memory"]["facts"]  # a sentinel: there are facts to compare
    assert parse_final_memory(path.read_bytes()) == ("ann", record["final_memory"])


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(
            lambda r: r["final_memory"]["facts"][0].update(content="\ud800"), id="surrogate"
        ),
        pytest.param(lambda r: r.update(calls=[1]), id="calls-not-objects"),
        pytest.param(lambda r: r["final_memory"].update(facts={"a": 1}), id="facts-not-a-list"),
        pytest.param(lambda r: r["final_memory"].update(deep=_nested(99)), id="too-deep"),
    ],
)
def test_fast_final_memory_read_leaves_what_it_cannot_vouch_for_to_the_full_read(
    tmp_path: Path, edit: Any
) -> None:
    run_path, lane = _one_owner_run(tmp_path)
    path = RunDir(run_path).record(lane, "ann")
    record = json.loads(path.read_text(encoding="utf-8"))
    edit(record)
    path.write_text(json.dumps(record), encoding="utf-8")
    assert parse_final_memory(path.read_bytes()) is None
    run = load_run(run_path)
    try:
        full: Any = RunDir(run_path).read_owner_record(lane, "ann")["final_memory"]["facts"]
    except run_module.RunError as exc:
        full = str(exc)
    try:
        read: Any = run.final_facts(lane)["content"].tolist()
    except run_module.RunError as exc:
        read = str(exc)
    expected = full if isinstance(full, str) else [fact["content"] for fact in full]
    assert read == expected


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def _swept_with_copies(tmp_path: Path) -> Path:
    dataset = write_owners(tmp_path / "d.jsonl", city_owners(T0))
    grid = Grid.from_mapping({"name": "f", "replay_mode": "per_session"})
    model = ScriptedBackend(function=_reply)
    sweep(dataset, grid, runs_dir=tmp_path, backend_factory=lambda _s: model, progress=False)
    return tmp_path / "f"


def test_final_facts_kept_as_a_copy_are_read_from_it_until_a_record_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _swept_with_copies(tmp_path)
    plain = load_run(path)
    (lane,) = plain.lanes
    parsed = plain.final_facts(lane)
    plain.keep_table_copies()
    assert not (path / "cache").exists()  # a read alone writes nothing
    keeper = load_run(path, keep_copies=True)
    keeper.final_facts(lane)
    keeper.keep_table_copies()
    assert (path / "cache" / f"{lane}.final_facts.npz").is_file()

    def refused(_raw: bytes) -> None:
        raise AssertionError("an owner record was parsed although the copy is current")

    with monkeypatch.context() as patched:
        patched.setattr(run_module, "parse_final_memory", refused)
        patched.setattr(RunDir, "read_owner_record", refused)
        copied = load_run(path).final_facts(lane)
    assert copied.equals(parsed) and list(copied.dtypes) == list(parsed.dtypes)

    # One owner's record changes: the copy no longer names the records, they are parsed.
    record = RunDir(path).record(lane, "bob")
    data = json.loads(record.read_text(encoding="utf-8"))
    data["final_memory"]["facts"][0]["content"] = "Lives in Lisbon"
    record.write_text(json.dumps(data), encoding="utf-8")
    again = load_run(path).final_facts(lane)
    assert sorted(again["content"]) == ["Lives in Leeds", "Lives in Lisbon"]
