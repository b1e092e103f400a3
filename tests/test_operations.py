"""Memory operations scored against the labels: crafted replies, exact counts per owner."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from builders import marker_backend, one_turn, sweep_scripted, update, write_owners

from memlab.runs.run import Run
from memlab.scoring.inference.coverage import MIN_OWNERS
from memlab.scoring.metrics import owner_counts

T0 = datetime(2025, 4, 7, 9, 0, tzinfo=UTC)
DAY = timedelta(days=1)

NURSE = {"id": "nurse", "content": "Works as a nurse in Leeds", "category": "context"}
HIKING = {"id": "hiking", "content": "Loves hiking", "category": "preference"}
CAT = {"id": "cat", "content": "Has a cat named Tom", "category": "context"}
TEACHER = {"id": "teacher", "content": "Works as a teacher", "category": "correction"}
GADGETS = [(f"Owns gadget number {k}", 0.95) for k in range(10)]

# owner -> its sessions: (labels, scripted reply). Each session's human text is its marker.
CASES: dict[str, list[tuple[dict[str, Any], str]]] = {
    # a correct add, a spurious add, a gold fact below the threshold, a gold fact never proposed
    "adds": [
        (
            {"facts": [NURSE, HIKING, CAT]},
            update(("Works as a nurse in Leeds", 0.95), ("Loves hiking", 0.5), "Drives a red car"),
        ),
    ],
    # duplicate adds: in the same session (a paraphrase), in a later one (another paraphrase),
    # and an exact duplicate the merge skips (not an add at all)
    "dup": [
        ({"facts": [NURSE]}, update("Works as a nurse in Leeds", "Works as a nurse in Leeds, UK")),
        ({}, update("Is a nurse working in Leeds", "Works as a nurse in Leeds")),
    ],
    # a correction done right: REMOVE the old fact + ADD the new one
    "fix": [
        ({"facts": [NURSE]}, update("Works as a nurse in Leeds")),
        (
            {"facts": [TEACHER], "retracts": ["nurse"]},
            update("Works as a teacher", remove=["Works as a nurse in Leeds"]),
        ),
    ],
    # an active gold fact removed
    "wrong": [
        ({"facts": [NURSE, HIKING]}, update("Works as a nurse in Leeds", "Loves hiking")),
        ({}, update(remove=["Loves hiking"])),
    ],
    # a correction without the removal; the stale fact goes one session later
    "stale": [
        ({"facts": [NURSE]}, update("Works as a nurse in Leeds")),
        ({"facts": [TEACHER], "retracts": ["nurse"]}, update("Works as a teacher")),
        ({}, update(remove=["Works as a nurse in Leeds"])),
        ({}, update()),
    ],
    # eleven facts for max_facts=10: the gold fact has the lowest confidence and is evicted
    "cap": [({"facts": [CAT]}, update(*GADGETS, ("Has a cat named Tom", 0.75)))],
}

# owner -> expected per-owner counts (summed over its sessions; gold_regret at its end)
EXPECTED: dict[str, dict[str, int]] = {
    "adds": {"op_adds": 2, "op_adds_expected": 3, "op_adds_correct": 1, "op_adds_missed": 2,
             "op_adds_spurious": 1, "gold_below_threshold": 1, "gold_regret": 1},
    "dup": {"op_adds": 3, "op_adds_expected": 1, "op_adds_correct": 1, "op_adds_redundant": 2},
    "fix": {"op_adds": 2, "op_adds_expected": 2, "op_adds_correct": 2, "op_removals": 1,
            "op_removals_expected": 1, "op_removals_correct": 1, "stale_facts": 1},
    "wrong": {"op_adds": 2, "op_adds_expected": 2, "op_adds_correct": 2, "op_removals": 1,
              "op_removals_wrong": 1},
    "stale": {"op_adds": 2, "op_adds_expected": 2, "op_adds_correct": 2, "op_removals": 1,
              "op_removals_expected": 1, "op_removals_missed": 1, "stale_facts": 1,
              "stale_sessions": 1},
    "cap": {"op_adds": 11, "op_adds_expected": 1, "op_adds_correct": 1, "op_adds_spurious": 10,
            "gold_evicted": 1, "gold_regret": 1},
}  # fmt: skip

COUNTS = sorted({name for row in EXPECTED.values() for name in row} | {"op_removals_missed"})


def marker(user: str, index: int) -> str:
    return f"[{user}-{index}]"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    tmp = tmp_path_factory.mktemp("ops")
    owners, replies = [], {}
    for user, sessions in CASES.items():
        rows = []
        for index, (labels, reply) in enumerate(sessions):
            rows.append(
                one_turn(f"{user}-{index}", T0 + index * DAY, marker(user, index), **labels)
            )
            replies[marker(user, index)] = reply
        owners.append({"user_id": user, "sessions": rows})
    data = tmp / "ops.jsonl"
    write_owners(data, owners)
    backend = marker_backend(replies)
    grid = {"name": "ops", "replay_mode": "per_session", "base": {"max_facts": 10}}
    return sweep_scripted(data, grid, backend, tmp / "runs")


@pytest.mark.parametrize("user", list(EXPECTED))
def test_operation_counts_per_owner(run: Run, user: str) -> None:
    counts = owner_counts(run.calls, run.sessions).droplevel("lane_id").loc[user]
    expected = {name: EXPECTED[user].get(name, 0) for name in COUNTS}
    assert {name: int(counts[name]) for name in COUNTS} == expected


def test_summary_rates_are_ratios_of_the_summed_counts(run: Run) -> None:
    row = run.summary.iloc[0]
    # adds: correct 9, spurious 11, redundant 2, expected 11, missed 2 (summed over owners)
    assert row["op_add_precision"] == pytest.approx(9 / 22)
    assert row["op_add_recall"] == pytest.approx(9 / 11)
    assert row["op_add_f1"] == pytest.approx(18 / 33)
    harmonic = 2 / (1 / row["op_add_precision"] + 1 / row["op_add_recall"])
    assert row["op_add_f1"] == pytest.approx(harmonic)
    # removals: correct 1, wrong 1, expected 2, missed 1
    assert row["op_remove_precision"] == pytest.approx(1 / 2)
    assert row["op_remove_recall"] == pytest.approx(1 / 2)
    assert row["op_remove_f1"] == pytest.approx(2 / 4)
    assert row["op_wrong_removals"] == 1
    assert (row["op_adds_redundant"], row["op_adds_spurious"]) == (2, 11)
    # "fix" removed its stale fact in the retracting session (0), "stale" one session later:
    # nothing censored, so the restricted mean is the plain mean.
    assert row["stale_rmst"] == pytest.approx(1 / 2)
    # regret: "Loves hiking" below the threshold, the cat evicted; 9 active gold facts at the end
    assert row["eviction_regret"] == pytest.approx(2 / 9)
    # An interval only where its method's coverage was measured at the metric's n (the owners
    # that can change it: 2 have a stale fact, so stale_rmst has none); where given, it holds
    # the value.
    assert run.sessions["user_id"].nunique() >= MIN_OWNERS["bootstrap"]
    assert not math.isnan(row["op_add_precision_lo"])
    assert math.isnan(row["stale_rmst_lo"]) and MIN_OWNERS["bootstrap_survival"] > 2
    for metric in ("op_add_precision", "op_add_f1", "eviction_regret", "stale_rmst"):
        lo, hi = row[f"{metric}_lo"], row[f"{metric}_hi"]
        if not (math.isnan(lo) or math.isnan(hi)):
            assert lo <= row[metric] <= hi, metric


def test_stale_survival_detail(run: Run) -> None:
    sessions = run.sessions.set_index(["user_id", "session_index"])
    (episode,) = sessions.loc[("stale", 1), "stale_detail"]
    # Retracted in session 1 (starts T0 + 1 day), removed by session 2's update, which runs
    # when that session's answer arrives (T0 + 2 days + 2 s).
    assert episode == {
        "gold": "nurse",
        "sessions": 1,
        "days": pytest.approx(1 + 2 / 86400),
        "censored": False,
    }
    (fixed,) = sessions.loc[("fix", 1), "stale_detail"]
    assert (fixed["sessions"], fixed["censored"]) == (0, False)


def test_replayed_memory_agrees_with_the_snapshots(run: Run) -> None:
    """Operation scoring rebuilds memory from the merge bookkeeping: it must match the state."""
    sessions = run.sessions
    # A stale fact is held exactly while retracted_held counts it.
    stale = sessions[sessions["user_id"] == "stale"].set_index("session_index")
    assert list(stale["retracted_held"]) == [0, 1, 0, 0]
    # Regret never exceeds the active gold facts memory lacks.
    gap = sessions["gold_active"] - sessions["gold_covered"]
    assert (sessions["gold_regret"] <= gap).all()
    assert int(sessions["gold_regret"].sum()) > 0  # a sentinel: the check saw regret


def test_precision_and_recall_are_undefined_without_operations(tmp_path: Path) -> None:
    owners = [{"user_id": "quiet", "sessions": [one_turn("q-1", T0, "[q]")]}]
    data = tmp_path / "q.jsonl"
    data.write_text(json.dumps(owners[0]) + "\n", encoding="utf-8")
    backend = marker_backend({"[q]": update()})
    quiet = sweep_scripted(
        data, {"name": "q", "replay_mode": "per_session"}, backend, tmp_path / "runs"
    )
    row = quiet.summary.iloc[0]
    for metric in ("op_add_precision", "op_add_recall", "op_remove_f1", "stale_rmst"):
        assert math.isnan(row[metric]), metric
    assert row["op_wrong_removals"] == 0


def test_old_records_without_bookkeeping_leave_the_metrics_out(run: Run) -> None:
    calls = [dict(c) for c in json.loads(_record(run, "fix").read_text())["calls"]]
    for call in calls:
        call.pop("applied")
    from memlab.scoring.operations import score_operations

    owner = _owner(run, "fix")
    assert score_operations(owner, calls, lambda s, g: s == g) is None


def _record(run: Run, user: str) -> Path:
    return run.path / "lanes" / next(iter(run.lanes)) / "owners" / f"{user}.json"


def _owner(run: Run, user: str) -> Any:
    from memlab.datasets.loader import load_dataset

    assert run.dataset_path is not None
    return next(o for o in load_dataset(run.dataset_path) if o.user_id == user)


def test_session_rows_carry_the_counts(run: Run) -> None:
    rows = run.sessions
    assert isinstance(rows, pd.DataFrame)
    cap = rows[rows["user_id"] == "cap"].iloc[0]
    assert (cap["evicted"], cap["gold_evicted"], cap["facts"]) == (1, 1, 10)


def test_stale_details_follow_the_order_of_the_retractions() -> None:
    """The row's stale episodes come in the labels' order, not a set's (which varies with
    PYTHONHASHSEED and made tables differ between identical runs)."""
    from memlab.datasets.models import Owner
    from memlab.scoring.operations import score_operations

    golds = [{"id": f"g{k:02d}", "content": f"Owns gadget number {k}", "category": "context"}
             for k in range(16)]  # fmt: skip
    order = [g["id"] for g in golds][::-1]
    order[3], order[11] = order[11], order[3]
    owner = Owner.model_validate(
        {
            "user_id": "u",
            "sessions": [
                one_turn("t0", T0, "gadgets", facts=golds),
                one_turn("t1", T0 + DAY, "none of it", retracts=order),
            ],
        }
    )
    added = [{"id": f"f{k:02d}", "content": g["content"]} for k, g in enumerate(golds)]
    calls = [{"session_index": 0, "saved": True, "applied": {"added": added}}]
    rows = score_operations(owner, calls, lambda stored, gold: stored == gold)
    assert rows is not None
    assert [episode["gold"] for episode in rows[1]["stale_detail"]] == order
