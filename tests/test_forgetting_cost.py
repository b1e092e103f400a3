"""``--max-cost`` and the rate limits cover the forgetting operating curve: a call that could
pass the limit is not sent, nothing of the curve is kept (no rows, no manifest), and asking
again resumes from the response cache; ``memlab qa --forgetting`` counts the QA step and the
curve against one limit.

The answering and judging model is the simulated one behind a backend with a declared price
(`tests/priced.py`: $1 a completion token, ``REPLY_TOKENS`` tokens a reply), so what a call
costs is known here without the code under test.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from priced import REPLY_TOKENS, Priced, cost_limit, priced_backend

from memlab.backends.costs.spend import CostLimitError
from memlab.cli.main import main
from memlab.datasets import resolve_dataset
from memlab.grids.grid import Grid
from memlab.postrun.forgetting_file import read_forgetting
from memlab.reporting.figures.forgetting_curve import forgetting_curve
from memlab.runs.run import Run, load_run
from memlab.runs.rundir import FORGETTING_MANIFEST, FORGETTING_ROWS
from memlab.sweeps.driver import sweep

PRICED = "pricedforget:careful"


@pytest.fixture(scope="module")
def priced() -> Iterator[Priced]:
    with priced_backend("pricedforget") as backend:
        yield backend


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory, priced: Priced) -> Run:
    root = tmp_path_factory.mktemp("forgetting-cost")
    grid = Grid.from_mapping(
        {
            "name": "forgetting-cost",
            "max_owners": 2,
            "base": {"backend": "sim:careful", "memory": "tiered"},
            "axes": {"tiered": [{}, {"decay_per_day": 0.01}]},
            "qa": {"answer_backend": PRICED, "judges": ["lenient"], "conditions": ["memory"]},
        }
    )
    return sweep(
        resolve_dataset("personas"), grid, runs_dir=root / "runs", progress=False, max_workers=2
    )


def _copy(run: Run, to: Path) -> Path:
    shutil.copytree(run.path, to)
    return to


def _free(run: Run, tmp_path: Path, priced: Priced, cache: Path | None = None) -> tuple[int, str]:
    """The calls a whole curve makes and the rows it keeps: asked without a limit on a copy,
    with a copy of ``cache`` (an answer the QA step gave is not asked again)."""
    free = tmp_path / "free-cache"
    if cache is not None:
        shutil.copytree(cache, free)
    copy = _copy(run, tmp_path / "free")
    before = priced.calls
    forgetting_curve(load_run(copy), cache_dir=free, max_workers=1)
    return priced.calls - before, (copy / FORGETTING_ROWS).read_text(encoding="utf-8")


def test_the_curve_stops_at_the_cost_limit_keeps_nothing_then_resumes(
    run: Run, tmp_path: Path, priced: Priced
) -> None:
    total, rows = _free(run, tmp_path, priced)
    assert total >= 6
    half = total // 2
    limit = cost_limit(half)
    capped, cache = _copy(run, tmp_path / "capped"), tmp_path / "cache"
    before = priced.calls
    with pytest.raises(CostLimitError) as info:
        forgetting_curve(load_run(capped), cache_dir=cache, max_workers=1, max_cost=limit)
    sent = priced.calls - before
    assert half <= sent <= half + 1 < total
    assert info.value.spent == pytest.approx(sent * REPLY_TOKENS) and info.value.spent <= limit
    assert info.value.unfinished > 0
    assert not (capped / FORGETTING_MANIFEST).exists()
    assert not (capped / FORGETTING_ROWS).exists()
    assert read_forgetting(load_run(capped)) is None  # no partial curve is read
    before = priced.calls
    forgetting_curve(load_run(capped), cache_dir=cache, max_workers=1, max_cost=limit)
    assert priced.calls - before == total - sent  # the calls answered before are cache hits
    assert (capped / FORGETTING_ROWS).read_text(encoding="utf-8") == rows
    assert read_forgetting(load_run(capped)) is not None


def test_the_qa_command_counts_the_forgetting_curve_against_max_cost(
    run: Run, tmp_path: Path, priced: Priced, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = _copy(run, tmp_path / "cli")
    args = ["qa", str(copy), "--no-progress", "--workers", "1"]
    args += ["--cache-dir", str(tmp_path / "cli-cache")]
    assert main(args) == 0  # the QA step's calls, now in the cache: free from here on
    capsys.readouterr()
    total, rows = _free(load_run(copy), tmp_path, priced, tmp_path / "cli-cache")
    forgetting = [*args, "--forgetting"]
    half = total // 2
    before = priced.calls
    assert main([*forgetting, "--max-cost", str(cost_limit(half))]) == 1
    sent = priced.calls - before
    assert half <= sent <= half + 1 < total
    out = capsys.readouterr()
    assert "stopped at the cost limit" in out.err
    assert "forgetting curve answers left unfinished" in out.err
    assert "forgetting operating curve" not in out.out
    assert not (copy / FORGETTING_MANIFEST).exists()
    before = priced.calls
    assert main(forgetting) == 0
    assert priced.calls - before == total - sent
    assert (copy / FORGETTING_ROWS).read_text(encoding="utf-8") == rows


def test_the_qa_step_and_the_curve_count_against_one_limit(
    run: Run, tmp_path: Path, priced: Priced, capsys: pytest.CaptureFixture[str]
) -> None:
    """With nothing cached, the limit lets the QA step's calls and half the curve's through
    in all: one limit for both, not one each."""
    counted = _copy(run, tmp_path / "counted")
    before = priced.calls
    args = ["--no-progress", "--workers", "1", "--cache-dir", str(tmp_path / "qa-cache")]
    assert main(["qa", str(counted), *args]) == 0
    qa_calls = priced.calls - before
    assert qa_calls >= 2
    total, _ = _free(load_run(counted), tmp_path, priced, tmp_path / "qa-cache")
    half = total // 2
    shared = _copy(run, tmp_path / "shared")
    args = ["--no-progress", "--workers", "1", "--cache-dir", str(tmp_path / "shared-cache")]
    capsys.readouterr()
    before = priced.calls
    limit = cost_limit(qa_calls + half)
    assert main(["qa", str(shared), *args, "--forgetting", "--max-cost", str(limit)]) == 1
    sent = priced.calls - before
    assert qa_calls + half <= sent <= qa_calls + half + 1
    assert "forgetting curve answers left unfinished" in capsys.readouterr().err
    assert not (shared / FORGETTING_MANIFEST).exists()


def _dry_run(run: Path, cache: Path, capsys: pytest.CaptureFixture[str], *more: str) -> dict:
    """``memlab qa RUN --dry-run`` with ``cache``: its rows by step (hits, calls)."""
    capsys.readouterr()
    assert main(["qa", str(run), "--dry-run", "--cache-dir", str(cache), *more]) == 0
    rows = {}
    for line in capsys.readouterr().out.splitlines():
        cells = line.split()
        if len(cells) > 5 and cells[0] in ("qa", "forgetting") and cells[2] == PRICED:
            rows[f"{cells[0]} {cells[1]}"] = (int(cells[4]), int(cells[5]))
    return rows


def test_the_dry_run_estimates_the_forgetting_curve(
    run: Run, tmp_path: Path, priced: Priced, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = _copy(run, tmp_path / "dry")
    cache = tmp_path / "dry-cache"
    assert (
        main(["qa", str(copy), "--no-progress", "--workers", "1", "--cache-dir", str(cache)]) == 0
    )
    assert "forgetting answers" not in str(_dry_run(copy, cache, capsys))
    before = (priced.calls, priced.answers)
    rows = _dry_run(copy, cache, capsys, "--forgetting")
    assert (priced.calls, priced.answers) == before  # no model called
    assert rows["qa answers"][1] == rows["qa verdicts"][1] == 0  # the QA step is cached
    # the answer requests are built as the curve builds them: as many calls as it sends
    before = (priced.calls, priced.answers)
    forgetting_curve(load_run(copy), cache_dir=cache, max_workers=1)
    calls, answers = priced.calls - before[0], priced.answers - before[1]
    assert rows["forgetting answers"] == (0, answers)
    # a verdict of an answer not given yet is built on the labelled answer: one per answer
    # at most (one judge), where the curve may find its real answer's verdict cached
    assert rows["forgetting verdicts"][1] <= answers
    # asked, every request of the curve is a cache hit, counted once
    rows = _dry_run(copy, cache, capsys, "--forgetting")
    assert rows["forgetting answers"] == (answers, 0)
    assert rows["forgetting verdicts"] == (calls - answers, 0)
