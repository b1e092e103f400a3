"""``memlab compare`` output: 120 columns by default, every column with ``--wide``, the full
table as CSV with ``--csv``.

Runs are made here with the simulated model on the bundled datasets: a baseline, a candidate
with a higher confidence threshold (the profile declares that it proposes facts below the
threshold that the pipeline then drops: recall falls), a candidate with another prompt (the
profile ignores prompts: an inconclusive reason line), a run of three lanes (a block per
configuration) and the 2-owner smoke dataset (no test possible).
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import pandas as pd
import pytest

from memlab.cli.main import main
from memlab.cli.results.compare_view import fit
from memlab.core.prompts import PromptRegistry
from memlab.runs.run import load_run
from memlab.scoring.comparing.comparison import COMPARE_COLUMNS, compare
from memlab.scoring.inference.stats import StatOptions
from memlab.scoring.metric_specs import DEFAULT_PRIMARY, metric_spec

WIDTH = 120
WIDE_COLUMNS = [
    "configuration",
    "metric",
    "role",
    "baseline",
    "value",
    "delta [CI], p",
    "verdict",
    "MDE (80% power)",
    "owners better / worse",
]
"""The columns ``comparison_text`` documents (the wide view prints them all)."""


def _run(runs: Path, name: str, *extra: str, dataset: str = "personas") -> Path:
    argv = ["run", dataset, "--runs-dir", str(runs), "--name", name, "--no-progress", *extra]
    assert main(argv) == 0
    return runs / name


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    runs = tmp_path_factory.mktemp("compare-output")
    _run(runs, "base", "--backend", "sim:careful")
    _run(runs, "strict", "--backend", "sim:careful", "--threshold", "0.9")
    template = PromptRegistry().get("default").template
    edited = template.replace("Extract new, durable facts about the user", "Extract only")
    assert edited != template
    (runs / "other.txt").write_text(edited, "utf-8")
    _run(runs, "prompt", "--backend", "sim:careful", "--prompt", str(runs / "other.txt"))
    grid = runs / "grid.yaml"
    grid.write_text(
        "name: three\ndataset: personas\nbase:\n  backend: sim:careful\n"
        "axes:\n  fact_confidence_threshold: [0.5, 0.7, 0.9]\n",
        "utf-8",
    )
    assert main(["sweep", str(grid), "--runs-dir", str(runs), "--no-progress"]) == 0
    _run(runs, "smoke-a", "--backend", "sim:careful", dataset="smoke")
    _run(runs, "smoke-b", "--backend", "sim:careful", "--threshold", "0.5", dataset="smoke")
    return runs


PAIRS = [("base", "strict"), ("base", "prompt"), ("three", None), ("smoke-a", "smoke-b")]


OPTIONS = StatOptions(resamples=300)


def _compare(runs: Path, pair: tuple[str, str | None], *extra: str) -> None:
    args = ["compare", *(str(runs / name) for name in pair if name), "--resamples", "300"]
    assert main([*args, *extra]) == 0


def _table(runs: Path, pair: tuple[str, str | None]) -> pd.DataFrame:
    """The comparison the command prints, from the library."""
    run_b = load_run(runs / pair[1]) if pair[1] else None
    return compare(load_run(runs / pair[0]), run_b, options=OPTIONS)


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: "-".join(n for n in p if n))
def test_every_line_fits_120_columns(
    runs: Path, pair: tuple[str, str | None], capsys: pytest.CaptureFixture[str]
) -> None:
    _compare(runs, pair)
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= WIDTH, max(lines, key=len)
    assert lines[-1].startswith("verdict: ")
    # Every (configuration, metric) the comparison holds is one row, under its configuration.
    table = _table(runs, pair)
    for configuration, rows in table.groupby("lane", sort=False):
        heading = lines.index(f"{rows['run'].iloc[0]}: {configuration}:")
        block = lines[heading + 2 : heading + 2 + len(rows)]
        assert [line.split()[0] for line in block] == list(rows["metric"])


def test_the_narrow_row_states_the_delta_and_marks_the_primary_metrics(
    runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _compare(runs, ("base", "strict"))
    lines = capsys.readouterr().out.splitlines()
    rows = {line.split()[0]: line for line in lines if line[:1].isalpha() and "%" in line}
    for metric in ("parse_failure_rate", "recall", "precision", "eviction_regret"):
        marked = rows[metric].split()[1] == "*"
        assert marked == (metric in DEFAULT_PRIMARY), rows[metric]
    # Recall from each run's own summary (not from the comparison): 14 owners, pooled.
    before = float(load_run(runs / "base").summary["recall"].iloc[0])
    after = float(load_run(runs / "strict").summary["recall"].iloc[0])
    assert after < before  # the profile drops facts below the higher threshold
    cells = rows["recall"]
    assert f"{before:.1%}" in cells and f"{after:.1%}" in cells
    assert f"{(after - before) * 100:+.1f} pts [" in cells
    assert "worse" in cells and "(exploratory)" not in cells


def test_wide_prints_every_column(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _compare(runs, ("base", "strict"), "--wide")
    lines = capsys.readouterr().out.splitlines()
    header = next(line for line in lines if line.lstrip().startswith("configuration"))
    positions = [header.find(column) for column in WIDE_COLUMNS]
    assert -1 not in positions and positions == sorted(positions), header
    table = _table(runs, ("base", "strict"))
    start = lines.index(header) + 1
    body = lines[start : start + len(table)]
    for line, (_, row) in zip(body, table.iterrows(), strict=True):
        assert metric_spec(str(row["metric"])).title in line
        assert str(row["role"]) in line
        if not math.isnan(float(row["p_value"])):
            assert "p = " in line or "p < 0.001" in line
    assert max(len(line) for line in lines) > WIDTH  # what the default view saves


@pytest.mark.parametrize("where", ["-", "file"])
def test_csv_is_the_full_table(
    runs: Path, where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = "-" if where == "-" else str(tmp_path / "cmp.csv")
    _compare(runs, ("base", "strict"), "--csv", target)
    captured = capsys.readouterr()
    text = captured.out if where == "-" else Path(target).read_text("utf-8")
    if where == "-":  # stdout holds the CSV alone; the verdict goes to stderr
        assert captured.err.splitlines()[-1].startswith("verdict: ")
    else:
        assert captured.out.splitlines()[-1] == f"wrote {target}"
    parsed = list(csv.reader(io.StringIO(text)))
    assert parsed[0] == list(COMPARE_COLUMNS)
    table = _table(runs, ("base", "strict"))
    assert len(parsed) - 1 == len(table)
    frame = pd.DataFrame(parsed[1:], columns=parsed[0])
    assert list(frame["metric"]) == list(table["metric"])
    assert list(frame["verdict"]) == list(table["verdict"])
    for got, want in zip(frame["delta"], table["delta"], strict=True):
        assert (got == "" and math.isnan(want)) or float(got) == pytest.approx(float(want))


def test_csv_without_a_path_is_stdout(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", str(runs / "base"), str(runs / "strict"), "--csv"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == ",".join(COMPARE_COLUMNS)


def test_fit_cuts_the_named_columns_then_the_line() -> None:
    frame = pd.DataFrame({"name": ["x" * 90, "short"], "verdict": ["y" * 60, "ok"]})
    lines = fit(frame, 80, shrink=["name"], left=["name"])
    assert all(len(line) <= 80 for line in lines)
    assert lines[1].startswith("x" * 10) and "…" in lines[1]
    assert lines[2].startswith("short ")  # left-justified
    assert lines[1].rstrip().endswith("y" * 60)  # the verdict is whole: the name gave way
