"""Removals and stale survival on the bundled personas set (which has retractions), with
crafted replies for three owners; every other owner's updates change nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders import marker_backend, update

from memlab.datasets.loader import load_dataset
from memlab.datasets.registry import resolve_dataset
from memlab.grids.grid import Grid
from memlab.runs.run import Run
from memlab.scoring.metrics import owner_counts
from memlab.sweeps.driver import sweep

PERSONAS = resolve_dataset("personas")
GOLD = {
    fact.id: fact.content
    for owner in load_dataset(PERSONAS)
    for session in owner.sessions
    for fact in session.labels.facts
}

REPLIES = {
    # tomas: the acreage stored, then corrected properly (REMOVE + ADD)
    "I run our family farm near Ames": update(GOLD["tomas.acres"]),
    "Correction on what I told you back in March": update(
        GOLD["tomas.acres_680"], remove=[GOLD["tomas.acres"]]
    ),
    # amara: "vegetarian" stored; the fish news is added but the old fact is never removed
    "a paediatric nurse at St Mary's": update(GOLD["amara.vegetarian"]),
    "I need to vent a bit and then I have a food question": update(GOLD["amara.eats_fish"]),
    # emily: job and launch stored; leaving the company removes the job only
    "I'm a PM at Ledgerly": update(GOLD["emily.job"], GOLD["emily.bullets"]),
    "Whiteboard from today's planning": update(GOLD["emily.instant_payouts"]),
    "Plot twist: I left Ledgerly": update(GOLD["emily.carewell"], remove=[GOLD["emily.job"]]),
}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    tmp: Path = tmp_path_factory.mktemp("personas-ops")
    backend = marker_backend(REPLIES)
    grid = Grid.from_mapping({"name": "personas-ops", "replay_mode": "per_session"})
    return sweep(
        PERSONAS,
        grid,
        runs_dir=tmp / "runs",
        backend_factory=lambda spec: backend,
        progress=False,
    )


def test_removals_per_owner(run: Run) -> None:
    counts = owner_counts(run.calls, run.sessions).droplevel("lane_id")
    columns = ["op_removals_expected", "op_removals_correct", "op_removals_missed",
               "op_removals_wrong", "stale_facts", "stale_sessions"]  # fmt: skip
    found = counts[columns].astype(int)
    assert found.loc["tomas"].tolist() == [1, 1, 0, 0, 1, 0]
    assert found.loc["amara"].tolist() == [1, 0, 1, 0, 1, 2]
    assert found.loc["emily"].tolist() == [2, 1, 1, 0, 2, 2]
    others = found.drop(index=["tomas", "amara", "emily"])
    assert (others == 0).all().all()  # nothing stored: no removal expected, none made


def test_stale_survival_on_personas(run: Run) -> None:
    sessions = run.sessions.set_index(["user_id", "session_index"])
    (amara,) = sessions.loc[("amara", 3), "stale_detail"]
    # Never removed: still held after sessions 3 and 4, from the morning of 8 May 2025 to the
    # end of the last session, on the morning of 15 July (censored).
    assert (amara["gold"], amara["sessions"], amara["censored"]) == ("amara.vegetarian", 2, True)
    owner = next(o for o in load_dataset(PERSONAS) if o.user_id == "amara")
    span = owner.sessions[-1].ended_at - owner.sessions[3].started_at
    assert amara["days"] == pytest.approx(span.total_seconds() / 86400)
    assert 67.5 < amara["days"] < 68
    emily = {e["gold"]: e for e in sessions.loc[("emily", 3), "stale_detail"]}
    assert (emily["emily.job"]["sessions"], emily["emily.job"]["censored"]) == (0, False)
    assert emily["emily.instant_payouts"]["sessions"] == 2


def test_summary_on_personas(run: Run) -> None:
    row = run.summary.iloc[0]
    # removals: expected 4, correct 2, missed 2, wrong 0
    assert row["op_remove_precision"] == 1.0
    assert row["op_remove_recall"] == pytest.approx(0.5)
    assert row["op_remove_f1"] == pytest.approx(2 / 3)
    assert row["op_wrong_removals"] == 0
    # Episodes 0, 0 (removed) and 2, 2 (still held at the end: censored). Kaplan-Meier:
    # S(0) = 2/4, nobody removed at 1, nobody at risk at 2 (flat): RMST = 0.5 + 0.5 + 0.5. The
    # plain mean of the seen times, (0 + 2 + 0 + 2) / 4 = 1, would understate it.
    assert row["stale_rmst"] == pytest.approx(1.5)
    # adds: 8 crafted adds (tomas 2, amara 2, emily 4), all correct
    assert (row["op_adds_correct"], row["op_adds_spurious"], row["op_adds_redundant"]) == (8, 0, 0)
    assert row["op_add_precision"] == 1.0
    assert row["op_add_recall"] == pytest.approx(8 / len(GOLD))  # every gold fact expected once
