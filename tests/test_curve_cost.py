"""``--max-cost`` covers the consolidation curve: a call that could pass the limit is not
sent, no partial curve is written, and asking again resumes from the response cache.

The answering and judging model is the simulated one behind a backend with a declared price
(an instrument: $1 a completion token, prompts free, every reply counted as
:data:`REPLY_TOKENS` completion tokens), so what a call costs is known here without the code
under test: ``REPLY_TOKENS`` dollars.
"""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from memlab.backends.costs.spend import CostLimitError
from memlab.backends.registry import BACKENDS, register_backend
from memlab.cli.main import main
from memlab.core.pipeline.llm import Backend, Completion, CompletionRequest
from memlab.datasets import resolve_dataset
from memlab.grids.grid import Grid
from memlab.grids.qa_spec import QASpec, resolve_prompts
from memlab.postrun.consolidation import add_curve, curve_answers
from memlab.postrun.qa_step import qa_backend
from memlab.runs.run import Run, load_run
from memlab.runs.rundir import CURVE_ANSWERS
from memlab.sweeps.driver import sweep

REPLY_TOKENS = 32
WORST = 64  # the largest max_tokens asked: an answer's (a verdict's is 32), prompts free


def _limit(calls: int) -> int:
    """Dollars that let exactly ``calls`` or ``calls + 1`` calls through, one at a time: call
    ``k`` is sent while ``(k - 1) * REPLY_TOKENS`` spent plus its worst case (32 or 64) fits,
    so calls ``1..calls + 1`` all fit, and call ``calls + 3`` never does."""
    return WORST + calls * REPLY_TOKENS


PRICED = "pricedcurve:careful"


class _Priced:
    """The simulated answerer and judges under a priced backend's name, counting its calls."""

    name = "pricedcurve"
    model = "priced-curve"

    def __init__(self, inner: Backend) -> None:
        self.inner = inner
        self.calls = 0

    def complete(self, request: CompletionRequest) -> Completion:
        self.calls += 1
        done = self.inner.complete(request)
        return dataclasses.replace(done, completion_tokens=REPLY_TOKENS, model=self.model)


@pytest.fixture(scope="module")
def priced() -> Iterator[_Priced]:
    judges = resolve_prompts(QASpec(answer_backend=PRICED, judges=["lenient"])).judges
    backend = _Priced(qa_backend("sim:careful", resolve_dataset("personas"), judges))
    register_backend(
        "pricedcurve",
        lambda argument, **options: backend,
        prices={"priced-": (0.0, 1_000_000.0)},  # USD per 1M tokens: $1 a completion token
    )
    try:
        yield backend
    finally:
        BACKENDS.unregister("pricedcurve")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory, priced: _Priced) -> Run:
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


def _curve_calls(run: Run, tmp_path: Path, priced: _Priced, cache: Path | None = None) -> int:
    """The calls a whole curve makes: asked without a limit on a copy, with a copy of
    ``cache`` (a re-asked answer the QA step gave is judged from its verdict there)."""
    free = tmp_path / "free-cache"
    if cache is not None:
        shutil.copytree(cache, free)
    before = priced.calls
    add_curve(_copy(run, tmp_path / "free"), cache_dir=free, max_workers=1)
    return priced.calls - before


def test_the_curve_stops_at_the_cost_limit_then_resumes_from_the_cache(
    run: Run, tmp_path: Path, priced: _Priced
) -> None:
    total = _curve_calls(run, tmp_path, priced)
    assert total >= 6
    half = total // 2
    limit = _limit(half)
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
    run: Run, tmp_path: Path, priced: _Priced, capsys: pytest.CaptureFixture[str]
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
    assert main([*curve, "--max-cost", str(_limit(half))]) == 1
    sent = priced.calls - before
    assert half <= sent <= half + 1 < total
    err = capsys.readouterr().err
    assert "stopped at the cost limit" in err and "curve answers left unfinished" in err
    before = priced.calls
    assert main(curve) == 0
    assert priced.calls - before == total - sent
