"""``memlab qa RUN --forgetting``: the forgetting operating curve from the command line, on a
small simulated run (three personas, the seed default's tiered lane and a slower decay)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memlab.cli.main import main
from memlab.datasets import load_dataset, resolve_dataset
from memlab.grids.grid import Grid
from memlab.postrun.forgetting_file import read_forgetting
from memlab.postrun.retention import retention_sessions
from memlab.reporting.figures.forgetting_curve import forgetting_curve_numbers, saved_curve
from memlab.runs.run import load_run
from memlab.sweeps.driver import sweep

OWNERS = 3
QA = {"answer_backend": "sim:careful", "judges": ["strict"], "conditions": ["memory"]}


def _run(root: Path, base: dict[str, object], axes: dict[str, object]) -> Path:
    grid = Grid.from_mapping(
        {"name": "curve", "max_owners": OWNERS, "base": base, "axes": axes, "qa": QA}
    )
    return sweep("personas", grid, runs_dir=root, progress=False, max_workers=1).path


def test_the_curve_is_asked_kept_and_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _run(
        tmp_path,
        {"backend": "sim:careful", "memory": "tiered"},
        {"tiered": [{}, {"decay_per_day": 0.01}]},
    )
    assert main(["qa", str(path), "--forgetting", "--no-progress", "--workers", "1"]) == 0
    printed = capsys.readouterr().out
    run = load_run(path)
    saved = read_forgetting(run)
    assert saved is not None  # kept in the run, where memlab report reads it
    table = forgetting_curve_numbers(saved_curve(run, saved))
    _, rest = printed.split("\nforgetting operating curve", 1)
    assert rest.split("\n", 1)[1].rstrip("\n") == table.to_string(index=False)
    # Each lane was asked every answerable question after each session that follows its
    # evidence, for the owners the run replayed.
    owners = load_dataset(resolve_dataset("personas"))[:OWNERS]
    asked = sum(
        len(retention_sessions(owner, q))
        for owner in owners
        for q in owner.questions
        if q.kind == "answerable"
    )
    assert asked > 0
    assert list(table["asked"]) == [f"{asked:g}"] * 2
    assert list(table["decay/day"]) == ["0.05", "0.01"]


def test_a_run_without_a_seed_default_lane_is_refused_before_anything_is_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _run(tmp_path, {"backend": "sim:careful"}, {})
    before = sorted(p.relative_to(path) for p in path.rglob("*"))
    assert main(["qa", str(path), "--forgetting", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "--forgetting" in err and str(path) in err
    assert sorted(p.relative_to(path) for p in path.rglob("*")) == before  # nothing written
