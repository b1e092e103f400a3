"""``memlab runs``: past runs, newest first; a broken run directory is one row, no traceback."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memlab.cli.main import main
from memlab.datasets import resolve_dataset
from memlab.grids.grid import Grid
from memlab.sweeps.driver import sweep


def set_finished(run: Path, when: str) -> None:
    path = run / "environment.json"
    environment = json.loads(path.read_text(encoding="utf-8"))
    environment["finished_at"] = when
    path.write_text(json.dumps(environment), encoding="utf-8")


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    grid = Grid.from_mapping(
        {
            "name": "grid2",
            "max_owners": 1,
            "base": {"backend": "sim:careful"},
            "axes": {"fact_confidence_threshold": [0.5, 0.9]},
        }
    )
    sweep(resolve_dataset("personas"), grid, runs_dir=root, progress=False)
    args = ["run", "personas", "--max-owners", "1", "--backend", "sim:sloppy", "--qa"]
    args.append("--no-progress")
    assert main([*args, "--runs-dir", str(root), "--name", "withqa"]) == 0
    set_finished(root / "grid2", "2026-01-02T10:00:00Z")
    set_finished(root / "withqa", "2026-03-04T10:00:00Z")
    broken = root / "broken"
    (broken / "lanes").mkdir(parents=True)
    (broken / "grid.yaml").write_text("grid: {name: broken}\n", encoding="utf-8")
    (broken / "manifest.json").write_text("{not json", encoding="utf-8")
    stamp = datetime(2026, 2, 1, 12, 0, tzinfo=UTC).timestamp()
    os.utime(broken, (stamp, stamp))
    (root / "notes").mkdir()  # not a run: no run file at all
    return root


def test_lists_runs_newest_first_with_their_facts(
    runs_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["runs", str(runs_dir), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in rows] == ["withqa", "broken", "grid2"]
    withqa, broken, grid2 = rows
    assert withqa["date"] == "2026-03-04T10:00:00Z" and broken["date"] == "2026-02-01T12:00:00Z"
    facts = ("dataset", "lanes", "backends")
    assert [grid2[k] for k in facts] == ["personas", 2, ["sim:careful"]]
    assert (grid2["qa"], grid2["complete"], grid2["problem"]) == (False, True, "")
    assert [withqa[k] for k in facts] == ["personas", 1, ["sim:sloppy"]]
    assert withqa["qa"] is True and withqa["complete"] is True
    assert "manifest" in broken["problem"] and "not valid JSON" in broken["problem"]


def test_table_has_one_line_per_run_and_says_unreadable(
    runs_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["runs", str(runs_dir)]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines[0].split() == ["name", "date", "dataset", "lanes", "backends", "qa", "complete"]
    assert [line.split()[0] for line in lines[1:]] == ["withqa", "broken", "grid2"]
    assert lines[1].split()[2:] == ["personas", "1", "sim:sloppy", "yes", "yes"]
    assert "unreadable: " in lines[2] and "Traceback" not in out + err
    assert lines[3].split()[2:] == ["personas", "2", "sim:careful", "no", "yes"]


def test_qa_asked_but_not_finished_is_incomplete(
    runs_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    copy = tmp_path / "runs" / "cut"
    shutil.copytree(runs_dir / "withqa", copy)
    shutil.rmtree(copy / "qa")  # the QA step stopped before writing anything
    assert main(["runs", str(tmp_path / "runs"), "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert (row["qa"], row["complete"], row["problem"]) == (True, False, "")


def test_missing_directory_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["runs", str(tmp_path / "nope")]) == 2
    assert capsys.readouterr().err.count("\n") == 1
