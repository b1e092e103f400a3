"""End-to-end sweeps with crafted scripted replies: exact failure, recall and debounce numbers."""

from __future__ import annotations

import json
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from builders import marker_backend, sweep_scripted, write_owners

from memlab.backends.scripted import ScriptedBackend
from memlab.core.jsondoc.contract import MINIMAL_VALID_UPDATE
from memlab.core.pipeline.llm import BackendError, CompletionRequest
from memlab.grids.grid import Grid
from memlab.runs.run import load_run
from memlab.sweeps.driver import sweep

T0 = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)


def iso(dt: datetime) -> str:
    return dt.isoformat().replace("+00:00", "Z")


def session(
    thread: str, start: datetime, turns: list[tuple[float, str, str]], **labels: Any
) -> dict[str, Any]:
    """turns: (seconds after start, human text, ai text); each turn is one agent run."""
    messages = []
    for offset, human, ai in turns:
        at = start + timedelta(seconds=offset)
        messages.append({"role": "human", "content": human, "timestamp": iso(at)})
        messages.append({"role": "ai", "content": ai, "timestamp": iso(at + timedelta(seconds=2))})
    return {"thread_id": thread, "started_at": iso(start), "messages": messages, "labels": labels}


def write_dataset(path: Path, owners: list[dict[str, Any]]) -> Path:
    write_owners(path, owners)
    return path


def update(facts: list[tuple[str, float]]) -> str:
    data = json.loads(json.dumps(MINIMAL_VALID_UPDATE))
    data["newFacts"] = [{"content": c, "category": "context", "confidence": p} for c, p in facts]
    return json.dumps(data)


BAD_CONFIDENCE = json.loads(update([("Plays chess", 0.9)]))
BAD_CONFIDENCE["newFacts"][0]["confidence"] = "high"

REPLIES = {
    # ann: facts, an in-batch duplicate, one below threshold; a retraction not acted on;
    # a punctuation-only duplicate across sessions; a noise session answered with prose.
    "love hiking": update(
        [
            ("Works as a nurse in Leeds", 0.95),
            ("Loves hiking", 0.9),
            ("loves hiking ", 0.9),
            ("Maybe likes cats", 0.5),
        ]
    ),
    "became a teacher": update([("Works as a teacher", 0.9), ("Loves hiking!", 0.8)]),
    "2 + 2": "Sure! The answer is 4.",
    # bob: one reply per failure category
    "[case:empty]": "",
    "[case:truncated]": '{"user": {"workContext": {"summary": "Eng',
    "[case:shape]": "[1, 2, 3]",
    "[case:schema]": json.dumps(BAD_CONFIDENCE),
}


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    day = timedelta(days=1)
    ann = {
        "user_id": "ann",
        "sessions": [
            session(
                "ann-1",
                T0,
                [
                    (0, "I work as a nurse in Leeds.", "Nice!"),
                    (20, "I also love hiking.", "Great hobby."),
                ],
                facts=[
                    {"id": "g1", "content": "Works as a nurse in Leeds", "category": "context"},
                    {"id": "g2", "content": "Loves hiking", "category": "preference"},
                ],
            ),
            session(
                "ann-2",
                T0 + day,
                [(0, "I quit nursing and became a teacher.", "Big change!")],
                facts=[{"id": "g3", "content": "Works as a teacher", "category": "correction"}],
                retracts=["g1"],
                tags=["retraction"],
            ),
            session(
                "ann-3", T0 + 2 * day, [(0, "What is 2 + 2?", "4.")], noise=True, tags=["noise"]
            ),
        ],
    }
    bob = {
        "user_id": "bob",
        "sessions": [
            session(
                f"bob-{i}", T0 + i * day, [(0, f"Hello {case}", "Hi.")], noise=True, tags=["noise"]
            )
            for i, case in enumerate(
                ["[case:empty]", "[case:truncated]", "[case:shape]", "[case:schema]"]
            )
        ],
    }
    return write_dataset(tmp_path / "tiny.jsonl", [ann, bob])


def run_grid(dataset: Path, tmp_path: Path, **grid: Any) -> Any:
    backend = marker_backend(REPLIES)
    result = sweep_scripted(dataset, {"name": "t", **grid}, backend, tmp_path / "runs")
    return result, backend


def test_failure_counts_per_category(dataset: Path, tmp_path: Path) -> None:
    run, _ = run_grid(dataset, tmp_path)
    calls = run.calls
    failures = calls[~calls["parse_ok"]]["parse_category"].value_counts().to_dict()
    assert failures == {
        "no_json": 1,
        "empty": 1,
        "truncated": 1,
        "wrong_shape": 1,
        "schema_violation": 1,
    }
    summary = run.summary.iloc[0]
    assert summary["llm_calls"] == 7
    assert summary["parse_failures"] == 5
    assert summary["parse_failure_rate"] == pytest.approx(5 / 7)
    violations = run.violations
    assert violations[["pointer", "keyword"]].values.tolist() == [
        ["/newFacts/*/confidence", "type"]
    ]


def test_recall_precision_and_duplicates(dataset: Path, tmp_path: Path) -> None:
    run, _ = run_grid(dataset, tmp_path)
    sessions = run.sessions
    ann = sessions[sessions["user_id"] == "ann"].set_index("session_index")
    # after session 1: both gold facts stored; the in-batch duplicate and the 0.5 fact skipped
    assert ann.loc[0, "facts"] == 2 and ann.loc[0, "recall"] == 1.0
    assert ann.loc[0, "skipped_duplicate"] == 1 and ann.loc[0, "skipped_below_threshold"] == 1
    # after session 2: the retracted nurse fact is still held; "Loves hiking!" duplicates
    final = ann.loc[2]
    assert final["facts"] == 4
    assert final["gold_active"] == 2 and final["recall"] == 1.0
    assert final["precision"] == pytest.approx(3 / 4)
    assert final["retracted_held"] == 1
    assert (final["dup_exact"], final["dup_normalized"], final["dup_near"]) == (0, 1, 1)
    summary = run.summary.iloc[0]
    assert summary["retracted_held"] == 1
    assert summary["duplicate_rate"] == pytest.approx(1 / 4)  # bob stores nothing


def test_debounce_coalesces_on_virtual_clock(tmp_path: Path) -> None:
    turns = [(0, "a", "b"), (20, "c", "d"), (45, "e", "f"), (100, "g", "h")]
    path = write_dataset(
        tmp_path / "d.jsonl", [{"user_id": "cat", "sessions": [session("c-1", T0, turns)]}]
    )
    started = time.perf_counter()
    run, backend = run_grid(path, tmp_path, base={"debounce_seconds": 30})
    elapsed = time.perf_counter() - started
    # runs end at 2, 22, 47, 102 s: the timer (30 s) fires at 77 s and at 132 s
    assert backend.call_count == 2
    summary = run.summary.iloc[0]
    assert summary["agent_runs"] == 4 and summary["calls_saved_by_debounce"] == 2
    assert elapsed < 5  # 132 virtual seconds replayed without sleeping

    _run2, backend2 = run_grid(path, tmp_path, name="t2", replay_mode="per_session")
    assert backend2.call_count == 1


def test_run_directory_round_trip_and_resume(dataset: Path, tmp_path: Path) -> None:
    grid = {"axes": {"fact_confidence_threshold": [0.7, 0.9]}}
    run, backend = run_grid(dataset, tmp_path, **grid)
    assert backend.call_count == 14
    loaded = load_run(run.path)
    assert list(loaded.lanes) == list(run.lanes)
    assert loaded.summary["recall"].tolist() == pytest.approx(
        run.summary["recall"].tolist(), nan_ok=True
    )
    # Rerunning into the same directory reuses finished (lane, owner) replays.
    _, backend_again = run_grid(dataset, tmp_path, **grid)
    assert backend_again.call_count == 0


def test_rows_scored_from_the_replays_in_memory_equal_rows_scored_from_their_records(
    dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memlab.runs.rundir import RunDir

    read: list[Path] = []
    real_read = RunDir.read_object

    def spy(self: RunDir, path: Path) -> dict[str, Any] | None:
        if sys._getframe(1).f_globals["__name__"] == "memlab.sweeps.driver":  # the scoring
            read.append(path)
        return real_read(self, path)

    monkeypatch.setattr(RunDir, "read_object", spy)
    grid = {"axes": {"fact_confidence_threshold": [0.7, 0.9]}}
    run, _ = run_grid(dataset, tmp_path, **grid)
    assert read == []  # every replay was scored as it finished, from memory
    tables = {name: (run.path / name).read_bytes() for name in ("calls.jsonl", "sessions.jsonl")}
    assert tables["sessions.jsonl"].count(b"\n") == 14  # (3 + 4 sessions) x 2 lanes
    # Rerun: every record is reused, so every replay is scored from its record on disk.
    again, backend = run_grid(dataset, tmp_path, **grid)
    assert backend.call_count == 0 and len(read) == 4  # 2 lanes x 2 owners
    assert {name: (again.path / name).read_bytes() for name in tables} == tables


def test_resume_replays_again_when_data_or_replay_mode_changed(
    dataset: Path, tmp_path: Path
) -> None:
    run_grid(dataset, tmp_path)  # debounce mode: ann has 3 sessions, bob 4
    changed, backend = run_grid(dataset, tmp_path, replay_mode="per_session", max_sessions=1)
    assert backend.call_count == 2  # both owners replayed again, one session each
    assert changed.calls["session_index"].max() == 0
    assert len(changed.sessions) == 2


def test_cost_uses_the_run_price_table(dataset: Path, tmp_path: Path) -> None:
    run, _ = run_grid(dataset, tmp_path)
    assert run.summary.iloc[0]["cost_usd"] == 0.0  # "scripted" is not in the default table
    priced = load_run(run.path)
    priced.prices = {"scripted": (1_000_000.0, 0.0)}  # 1 USD per prompt token
    summary = priced.summary.iloc[0]
    assert summary["cost_usd"] == pytest.approx(float(run.calls["prompt_tokens"].sum()))


def test_lane_with_some_backend_failures_still_summarizes(dataset: Path, tmp_path: Path) -> None:
    """Failed calls have no model name (NaN in the calls table); costs and counts still add up."""
    good = marker_backend(REPLIES)

    def flaky(request: CompletionRequest) -> str:
        if "[case:" in str(request.messages[-1]["content"]):
            raise BackendError("server went away")
        return good.complete(request).text

    run = sweep(
        dataset,
        Grid.from_mapping({"name": "flaky", "replay_mode": "per_session"}),
        runs_dir=tmp_path / "runs",
        backend_factory=lambda spec: ScriptedBackend(function=flaky),
        progress=False,
        allow_incomplete=True,
    )
    assert not run.complete
    assert run.lane_status.iloc[0]["incomplete"] == 1  # bob
    summary = run.summary.iloc[0]
    assert summary["backend_errors"] == 4  # bob's four sessions
    assert summary["cost_usd"] == 0.0
    assert run.calls["model"].isna().sum() == 4


def test_a_store_file_that_cannot_be_written_does_not_stop_the_replay(
    dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from memlab.core.pipeline.storage import JsonFileStorage, StorageError

    def disk_full(self: JsonFileStorage, memory: Any, now: Any = None) -> None:
        raise StorageError("No space left on device")

    monkeypatch.setattr(JsonFileStorage, "save", disk_full)
    run, _ = run_grid(dataset, tmp_path, replay_mode="per_session")
    assert run.summary.iloc[0]["final_facts"] > 0  # the in-memory snapshots still count
    assert "could not write the lane's store file" in caplog.text


def test_a_fresh_sweep_never_deletes_a_directory_that_is_not_a_run(
    dataset: Path, tmp_path: Path
) -> None:
    from memlab.runs.run import RunError

    keep = tmp_path / "runs" / "t" / "precious.txt"
    keep.parent.mkdir(parents=True)
    keep.write_text("mine", encoding="utf-8")
    with pytest.raises(RunError, match="not a memlab run"):
        sweep(
            dataset,
            Grid.from_mapping({"name": "t"}),
            runs_dir=tmp_path / "runs",
            backend_factory=lambda spec: marker_backend(REPLIES),
            progress=False,
            resume=False,
        )
    assert keep.read_text(encoding="utf-8") == "mine"


def test_a_rerun_retries_exactly_the_replays_that_had_backend_errors(
    dataset: Path, tmp_path: Path
) -> None:
    from memlab.sweeps.driver import IncompleteSweepError

    good = marker_backend(REPLIES)
    down = {"value": True}

    def flaky(request: CompletionRequest) -> str:
        if down["value"] and "[case:" in str(request.messages[-1]["content"]):
            raise BackendError("connection refused")
        return good.complete(request).text

    def run_once() -> Any:
        return sweep(
            dataset,
            Grid.from_mapping({"name": "retry", "replay_mode": "per_session"}),
            runs_dir=tmp_path / "runs",
            backend_factory=lambda spec: ScriptedBackend(function=flaky),
            progress=False,
        )

    with pytest.raises(IncompleteSweepError) as failed:
        run_once()
    assert failed.value.failed == [(next(iter(failed.value.run.lanes)), "bob")]
    assert "connection refused" in str(failed.value)
    assert not load_run(tmp_path / "runs" / "retry").complete
    down["value"] = False
    before = good.call_count
    run = run_once()
    assert good.call_count - before == 4  # bob's four sessions, ann reused
    assert run.complete
    assert run.lane_status.iloc[0][["reused", "replayed"]].tolist() == [1, 1]
    assert run.lane_status.iloc[0]["why"] == "earlier replay had backend errors (1)"


def test_final_facts_are_those_of_the_runs_owners_only(tmp_path: Path) -> None:
    owners = [
        {"user_id": user, "sessions": [session(f"{user}-1", T0, [(0, f"I am {user}.", "Hi.")])]}
        for user in ("ann", "bob")
    ]
    data = write_dataset(tmp_path / "two.jsonl", owners)
    backend = marker_backend(
        {"I am ann": update([("Is ann", 0.9)]), "I am bob": update([("Is bob", 0.9)])}
    )

    def run_it(**grid: Any) -> Any:
        return sweep(
            data,
            Grid.from_mapping({"name": "owners", **grid}),
            runs_dir=tmp_path / "runs",
            backend_factory=lambda spec: backend,
            progress=False,
        )

    full = run_it()
    lane = next(iter(full.lanes))
    assert set(full.final_facts(lane)["user_id"]) == {"ann", "bob"}
    smaller = run_it(max_owners=1)  # the same run directory, ann only
    assert (smaller.path / "lanes" / lane / "owners" / "bob.json").exists()  # an old record
    assert smaller.owner_ids == ["ann"]
    assert set(smaller.final_facts(lane)["user_id"]) == {"ann"}
    assert set(load_run(smaller.path).final_facts(lane)["user_id"]) == {"ann"}
