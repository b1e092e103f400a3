"""``--max-cost`` covers the consolidation curve: a call that could pass the limit is not
sent, no partial curve is written, and asking again resumes from the response cache.

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
from memlab.postrun.consolidation import add_curve, curve_answers
from memlab.runs.run import Run, load_run
from memlab.runs.rundir import CURVE_ANSWERS
from memlab.sweeps.driver import sweep

PRICED = "pricedcurve:careful"


@pytest.fixture(scope="module")
def priced() -> Iterator[Priced]:
    with priced_backend("pricedcurve") as backend:
        yield backend


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory, priced: Priced) -> Run:
    root = tmp_path_factory.mktemp("curve-cost")
    grid = Grid.from_mapping(
        {
            "name": "curve-cost",
            "base": {"backend": "sim:careful", "memory": "tiered"},
            "qa": {"answer_backend": PRICED, "judges": ["lenient"], "conditions": ["memory"]},
        }
    )
    return sweep(
        resolve_dataset("personas"), grid, runs_dir=root / "runs", progress=False, max_workers=2
    )


def _copy(run: Run, to: Path) -> Path:
    shutil.copytree(run.path, to)
    return to


def _curve_calls(run: Run, tmp_path: Path, priced: Priced, cache: Path | None = None) -> int:
    """The calls a whole curve makes: asked without a limit on a copy, with a copy of
    ``cache`` (a re-asked answer the QA step gave is judged from its verdict there)."""
    free = tmp_path / "free-cache"
    if cache is not None:
        shutil.copytree(cache, free)
    before = priced.calls
    add_curve(_copy(run, tmp_path / "free"), cache_dir=free, max_workers=1)
    return priced.calls - before


def test_the_curve_stops_at_the_cost_limit_then_resumes_from_the_cache(
    run: Run, tmp_path: Path, priced: Priced
) -> None:
    total = _curve_calls(run, tmp_path, priced)
    assert total >= 6
    half = total // 2
    limit = cost_limit(half)
    capped, cache = _copy(run, tmp_path / "capped"), tmp_path / "cache"
    before = priced.calls
    with pytest.raises(CostLimitError) as info:
        add_curve(capped, cache_dir=cache, max_workers=1, max_cost=limit)
    sent = priced.calls - before
    assert half <= sent <= half + 1 < total
    assert info.value.spent == pytest.approx(sent * REPLY_TOKENS) and info.value.spent <= limit
    assert info.value.unfinished > 0
    assert (capped / CURVE_ANSWERS).is_file()
    reasks, manifest = curve_answers(load_run(capped))
    assert reasks.empty and manifest == {}  # no partial curve is read
    before = priced.calls
    resumed = add_curve(capped, cache_dir=cache, max_workers=1)
    assert priced.calls - before == total - sent  # the calls answered before are cache hits
    assert resumed["error"].isna().all()
    _, manifest = curve_answers(load_run(capped))
    assert manifest["complete"]


def test_the_qa_command_counts_the_curve_against_max_cost(
    run: Run, tmp_path: Path, priced: Priced, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = _copy(run, tmp_path / "cli")
    args = ["qa", str(copy), "--no-progress", "--workers", "1"]
    args += ["--cache-dir", str(tmp_path / "cli-cache")]
    assert main(args) == 0  # the QA step's calls, now in the cache: free from here on
    capsys.readouterr()
    total = _curve_calls(load_run(copy), tmp_path, priced, tmp_path / "cli-cache")
    curve = [*args, "--curve-every", "1"]
    before = priced.calls
    half = total // 2
    assert main([*curve, "--max-cost", str(cost_limit(half))]) == 1
    sent = priced.calls - before
    assert half <= sent <= half + 1 < total
    err = capsys.readouterr().err
    assert "stopped at the cost limit" in err and "curve answers left unfinished" in err
    before = priced.calls
    assert main(curve) == 0
    assert priced.calls - before == total - sent
