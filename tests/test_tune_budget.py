"""``memlab tune --max-time``: no candidate starts once the budget is spent; a rerun continues.

The clock is the test's own: it reads 100 s per candidate started (the trial runs in the tune
directory), so what the budget allows never depends on the machine's speed or load.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import yaml

from memlab.cli.main import main
from memlab.grids.grid import GridError
from memlab.reporting.tuning import tune_budget
from memlab.reporting.tuning.tune import tune
from tests.tune_data import owners_dataset, tune_grid

PER_CANDIDATE = 100.0


def _clock(runs: Path) -> tune_budget.Clock:
    def now() -> float:
        return PER_CANDIDATE * len(list((runs / "search" / "trials").glob("trial-*")))

    return now


def test_the_time_budget_stops_the_search_and_a_rerun_continues_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    owners_dataset(tmp_path, copies=2)
    space = {"space": {"prompt": ["default", "self_only.txt"]}}
    grid = tune_grid(tmp_path, space)
    runs = tmp_path / "runs"
    monkeypatch.setattr(tune_budget, "wall_clock", _clock(runs))
    # 150 s: the first candidate ends at 100 s (go on), the second at 200 s (stop): 2 of 3.
    code = main(["tune", str(grid), "--runs-dir", str(runs), "--max-trials", "3",
                 "--max-time", "150", "--no-progress"])  # fmt: skip
    captured = capsys.readouterr()
    assert code == 1
    assert captured.out == ""
    (line,) = captured.err.strip().splitlines()
    assert "time budget (150 s) stopped the search after 2 of 3 candidates" in line
    trials = runs / "search" / "trials"
    stamps = {p.parent.name: p.stat().st_mtime_ns for p in trials.glob("*/manifest.json")}
    assert sorted(stamps) == ["trial-000", "trial-001"]
    assert not (runs / "search" / "tune.json").exists()
    # The budget from the grid this time (not part of the searched space: the study resumes).
    data = yaml.safe_load(grid.read_text("utf-8"))
    data["tune"]["max_time"] = 150
    grid.write_text(yaml.safe_dump(data), encoding="utf-8")
    result = tune(grid, runs_dir=runs, max_trials=3, clock=_clock(runs))
    assert [t["number"] for t in result.trials] == [0, 1, 2]
    kept = {p.parent.name: p.stat().st_mtime_ns for p in trials.glob("*/manifest.json")}
    assert {k: kept[k] for k in stamps} == stamps  # the finished candidates were not redone
    assert (runs / "search" / "tune.json").exists()


def test_a_spent_budget_starts_nothing(tmp_path: Path) -> None:
    owners_dataset(tmp_path, copies=2)
    grid = tune_grid(tmp_path, {"space": {"prompt": ["default", "self_only.txt"]}})
    ticks = itertools.chain([0.0], itertools.repeat(10.0))  # 10 s pass before the start
    with pytest.raises(tune_budget.TimeLimitError, match="after 0 of 2 candidates"):
        tune(grid, runs_dir=tmp_path / "runs", max_trials=2, max_time=5, clock=lambda: next(ticks))
    assert not list((tmp_path / "runs" / "search" / "trials").glob("trial-*"))


def test_a_bad_max_time_names_the_key(tmp_path: Path) -> None:
    owners_dataset(tmp_path, copies=2)
    grid = tune_grid(tmp_path, {"space": {"prompt": ["default"]}, "max_time": 0})
    with pytest.raises(GridError, match=r"tune\.max_time"):
        tune(grid, runs_dir=tmp_path / "runs")
    assert main(["tune", str(grid), "--max-time", "-1"]) == 2
