"""Forks: lanes start one session from a reference lane's memory, with no LLM calls before."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from builders import marker_backend, one_turn, update, write_owners

from memlab.backends.scripted import ScriptedBackend
from memlab.grids.grid import Grid, GridError
from memlab.postrun.rescoring import rescore
from memlab.reporting.compare.trial import try_prompt
from memlab.reporting.markdown import md_escape
from memlab.reporting.report import build_report
from memlab.runs.run import Run
from memlab.scoring.count_specs import STALE_HORIZON
from memlab.sweeps.driver import sweep
from memlab.sweeps.plan import load_grid

T0 = datetime(2025, 6, 2, 9, 0, tzinfo=UTC)
DAY = timedelta(days=1)
NURSE = {"id": "nurse", "content": "Works as a nurse in Leeds", "category": "context"}
TEACHER = {"id": "teacher", "content": "Works as a teacher", "category": "correction"}


def owners() -> list[dict[str, Any]]:
    return [
        {
            "user_id": user,
            "sessions": [
                one_turn(f"{user}-0", T0, f"[{user}-0] I am a nurse in Leeds.", facts=[NURSE]),
                one_turn(f"{user}-1", T0 + DAY, f"[{user}-1] I love tea."),
                one_turn(
                    f"{user}-2",
                    T0 + 2 * DAY,
                    f"[{user}-2] I became a teacher.",
                    facts=[TEACHER],
                    retracts=["nurse"],
                ),
                one_turn(f"{user}-3", T0 + 3 * DAY, f"[{user}-3] Hello again."),
            ],
        }
        for user in ("ann", "bob")
    ]


REFERENCE = {
    "[ann-0]": update("Works as a nurse in Leeds"),
    "[bob-0]": update("Works as a nurse in Leeds"),
    "[ann-1]": update("Drinks tea every day"),
}
# Both lanes answer the forked sessions alike, except that "fixing" removes the stale job.
FORKED = {
    "[ann-2]": update("Works as a teacher"),
    "[bob-2]": update("Works as a teacher"),
}
FIXING = {
    "[ann-2]": update("Works as a teacher", remove=["Works as a nurse in Leeds"]),
    "[bob-2]": update("Works as a teacher", remove=["Works as a nurse in Leeds"]),
}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    data = "".join(json.dumps(o) + "\n" for o in owners())
    (tmp_path / "data.jsonl").write_text(data, encoding="utf-8")
    return tmp_path


def run_reference(root: Path, replies: dict[str, str] = REFERENCE, resume: bool = True) -> Run:
    backend = marker_backend(replies)
    grid = Grid.from_mapping({"name": "ref", "replay_mode": "per_session"})
    return sweep(
        root / "data.jsonl",
        grid,
        runs_dir=root / "runs",
        backend_factory=lambda spec: backend,
        progress=False,
        resume=resume,
    )


def run_fork(
    root: Path, name: str, ref: Run, at: int = 2, **grid: Any
) -> tuple[Run, ScriptedBackend]:
    backend = marker_backend(FORKED)
    spec = {"run": str(ref.path), "lane": next(iter(ref.lanes)), "at_session": at}
    run = sweep(
        root / "data.jsonl",
        Grid.from_mapping({"name": name, "replay_mode": "per_session", **grid}),
        runs_dir=root / "runs",
        backend_factory=lambda spec: backend,
        progress=False,
        fork=spec,
    )
    return run, backend


@pytest.mark.parametrize("mode", ["per_session", "debounce"])
def test_no_calls_before_the_fork(workspace: Path, mode: str) -> None:
    ref = run_reference(workspace)
    run, backend = run_fork(workspace, "forked", ref, replay_mode=mode)
    markers = sorted(m for p in backend.prompts for m in re.findall(r"\[(?:ann|bob)-\d\]", p))
    assert markers == ["[ann-2]", "[ann-3]", "[bob-2]", "[bob-3]"]
    assert set(run.calls["session_index"]) == {2, 3}
    assert set(run.sessions["session_index"]) == {2, 3}  # metrics cover sessions from K on
    # The first forked prompt holds the reference memory: ann's two facts with their ids.
    ref_memory = json.loads(
        (ref.path / "lanes" / next(iter(ref.lanes)) / "owners" / "ann.json").read_text()
    )["snapshots"][1]
    first = next(p for p in backend.prompts if "[ann-2]" in p)
    for stored in ref_memory["facts"]:
        assert stored["id"] in first and stored["content"] in first
    record = json.loads(
        (run.path / "lanes" / next(iter(run.lanes)) / "owners" / "ann.json").read_text()
    )
    assert len(record["snapshots"]) == 4 and record["snapshots"][1] == ref_memory
    assert record["agent_runs"] == [0, 0, 1, 1]
    assert [audit is None for audit in record["injections"]] == [True, True, False, True]


def test_rescoring_a_forked_run_gives_the_same_rows(workspace: Path) -> None:
    ref = run_reference(workspace)
    run, _ = run_fork(workspace, "forked", ref)
    again = rescore(run.path)
    assert again.sessions.to_dict("records") == run.sessions.to_dict("records")


def test_identical_lanes_from_one_snapshot_give_identical_results(workspace: Path) -> None:
    ref = run_reference(workspace)
    one, _ = run_fork(workspace, "one", ref)
    two, _ = run_fork(workspace, "two", ref)
    assert list(one.lanes) == list(two.lanes)  # the same identity, fork source included
    drop = ["duration_s", "latency_s", "started_at"]
    calls = [r.calls.drop(columns=drop, errors="ignore") for r in (one, two)]
    assert calls[0].to_dict("records") == calls[1].to_dict("records")
    assert one.sessions.to_dict("records") == two.sessions.to_dict("records")
    assert one.summary.equals(two.summary)


def test_forked_lanes_compare_from_identical_state(workspace: Path) -> None:
    ref = run_reference(workspace)
    lane = next(iter(ref.lanes))
    backend = marker_backend(FIXING)
    fixing = sweep(
        workspace / "data.jsonl",
        Grid.from_mapping({"name": "fixing", "replay_mode": "per_session"}),
        runs_dir=workspace / "runs",
        backend_factory=lambda spec: backend,
        progress=False,
        fork={"run": str(ref.path), "lane": lane, "at_session": 2},
    )
    plain, _ = run_fork(workspace, "plain", ref)
    # Both start session 2 holding the nurse fact: one removal expected per owner.
    for run, correct in ((fixing, 2), (plain, 0)):
        row = run.summary.iloc[0]
        assert (row["op_removals_correct"], row["op_removals_missed"]) == (correct, 2 - correct)
    assert fixing.summary.iloc[0]["stale_rmst"] == 0
    # Held at the ends of sessions 2 and 3, then censored: never seen removed, so it survives
    # the whole horizon of the restricted mean.
    assert plain.summary.iloc[0]["stale_rmst"] == STALE_HORIZON
    paths = build_report([plain, fixing], workspace / "report")
    markdown = paths.markdown.read_text(encoding="utf-8")
    section = markdown[markdown.index("## Memory operations") :]
    assert f"plain: forked from run ref, lane {md_escape(lane)}, at session 2" in section
    assert "metrics cover sessions 2 on" in section
    # the operations table: removal recall 0% in the baseline row, +100 pts (best) for fixing
    lines = section.splitlines()
    start = next(i for i, line in enumerate(lines) if "removal recall" in line)
    column = lines[start].split(" | ").index("removal recall")
    rows = [line.split(" | ") for line in lines[start + 2 : start + 4]]
    assert [row[0] for row in rows] == ["| plain", "| fixing"]
    assert [row[column] for row in rows] == ["0.0%", "**100.0% (+100.0 pts)** ★"]
    assert "stale" not in fixing.lane_status.iloc[0]["why"]


def test_a_changed_reference_snapshot_is_a_new_lane(workspace: Path) -> None:
    ref = run_reference(workspace)
    first, _ = run_fork(workspace, "forked", ref)
    # The scripted replies are no part of the reference lane's identity: replay it afresh.
    replies = {**REFERENCE, "[ann-1]": update("Drinks coffee")}
    changed = run_reference(workspace, replies, resume=False)
    second, backend = run_fork(workspace, "forked", changed)
    assert list(first.lanes) != list(second.lanes)
    assert backend.call_count == 4  # replayed, not reused
    assert "fork source changed" in second.lane_status.iloc[0]["why"]
    identity = second.lane_info(next(iter(second.lanes)))["identity"]["fork"]
    assert (identity["run"], identity["at_session"]) == ("ref", 2)
    record = json.loads(
        (second.path / "lanes" / next(iter(second.lanes)) / "owners" / "ann.json").read_text()
    )
    assert record["fork"]["at_session"] == 2 and len(record["fork"]["snapshot_sha256"]) == 64


def test_resume_keeps_a_fork_whose_reference_did_not_change(workspace: Path) -> None:
    ref = run_reference(workspace)
    run_fork(workspace, "forked", ref)
    again, backend = run_fork(workspace, "forked", ref)
    assert backend.call_count == 0
    assert again.lane_status.iloc[0]["reused"] == 2


def test_fork_key_in_a_grid_file(workspace: Path) -> None:
    ref = run_reference(workspace)
    grid = {
        "name": "from-file",
        "dataset": "data.jsonl",
        "replay_mode": "per_session",
        "fork": {"run": "runs/ref", "lane": next(iter(ref.lanes)), "at_session": 3},
    }
    (workspace / "grid.yaml").write_text(json.dumps(grid), encoding="utf-8")
    loaded = load_grid(workspace / "grid.yaml")
    backend = marker_backend(FORKED)
    run = sweep(
        loaded.dataset,
        loaded,
        runs_dir=workspace / "runs",
        backend_factory=lambda spec: backend,
        progress=False,
    )
    assert set(run.sessions["session_index"]) == {3}
    assert backend.call_count == 2


@pytest.mark.parametrize(
    ("change", "key", "message"),
    [
        ({"lane": "nope"}, "fork.lane", "no lane 'nope'"),
        ({"at_session": 4}, "fork.at_session", "nothing left to replay"),
        ({"run": "runs/missing"}, "fork.run", "not a finished run"),
    ],
)
def test_bad_fork_is_a_grid_error(
    workspace: Path, change: dict[str, Any], key: str, message: str
) -> None:
    ref = run_reference(workspace)
    spec = {"run": str(ref.path), "lane": next(iter(ref.lanes)), "at_session": 2, **change}
    if change.get("run"):
        spec["run"] = str(workspace / change["run"])
    with pytest.raises(GridError, match=message) as caught:
        sweep(
            workspace / "data.jsonl",
            Grid.from_mapping({"name": "bad"}),
            runs_dir=workspace / "runs",
            backend_factory=lambda spec: marker_backend({}),
            progress=False,
            fork=spec,
        )
    assert caught.value.key == key
    assert not (workspace / "runs" / "bad").exists()  # planned before anything is written


def test_fork_of_another_dataset_is_refused(workspace: Path) -> None:
    ref = run_reference(workspace)
    other = owners()
    other[0]["sessions"][0]["messages"][0]["content"] = "[ann-0] I am a pilot."
    write_owners(workspace / "other.jsonl", other)
    with pytest.raises(GridError, match="first 2 sessions differ"):
        sweep(
            workspace / "other.jsonl",
            Grid.from_mapping({"name": "other"}),
            runs_dir=workspace / "runs",
            backend_factory=lambda spec: marker_backend({}),
            progress=False,
            fork={"run": str(ref.path), "lane": next(iter(ref.lanes)), "at_session": 2},
        )


def test_a_prompt_trial_on_a_forked_run_starts_from_the_same_memory(workspace: Path) -> None:
    ref = run_reference(workspace)
    run, _ = run_fork(workspace, "forked", ref)
    backend = marker_backend(FORKED)
    template = "Memory:\n{current_memory}\nTalk:\n{conversation}\nJSON only."
    trial = try_prompt(run, template, owners="all", backend_factory=lambda spec: backend)
    assert trial.run.grid.fork == run.grid.fork
    assert set(trial.run.sessions["session_index"]) == {2, 3}
    assert backend.call_count == 4  # sessions 2 and 3 of both owners only
