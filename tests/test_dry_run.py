"""``--dry-run`` calls no model and counts cache hits out; ``--max-cost`` stops and resumes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from memlab.backends.caching.cache import CacheMode
from memlab.backends.costs.pricing import ModelPrice, call_cost, model_price
from memlab.backends.costs.spend import SpendLimit
from memlab.backends.registry import BACKENDS, MINIMAL_CONTRACT_REPLY, register_backend
from memlab.cli.main import main
from memlab.core.pipeline.llm import Completion, CompletionRequest
from memlab.datasets.loader import load_dataset
from memlab.grids.grid import Grid
from memlab.sweeps.driver import sweep
from memlab.sweeps.dry_run import dry_run

SMOKE = Path(__file__).resolve().parents[1] / "datasets" / "smoke.jsonl"
PROMPT_PRICE, COMPLETION_PRICE = 0.0, 1_000_000.0  # USD per 1M tokens: $1 a completion token
REPLY_TOKENS = 5


class PricedBackend:
    """A test double with a declared price: a valid empty update, 5 completion tokens."""

    name = "pricedtest"
    model = "priced-1"

    def __init__(self) -> None:
        self.calls = 0

    def complete(self, request: CompletionRequest) -> Completion:
        self.calls += 1
        prompt = sum(len(m["content"]) for m in request.messages)
        return Completion(
            MINIMAL_CONTRACT_REPLY,
            prompt_tokens=prompt // 4,
            completion_tokens=REPLY_TOKENS,
            model=self.model,
            backend=self.name,
        )


class RaisingBackend(PricedBackend):
    """The same backend, failing the test if it is ever called."""

    def complete(self, request: CompletionRequest) -> Completion:
        raise AssertionError("a dry run called the backend")


@pytest.fixture
def priced() -> Iterator[PricedBackend]:
    backend = PricedBackend()
    register_backend(
        "pricedtest",
        lambda argument, **options: backend,
        prices={"priced-": (PROMPT_PRICE, COMPLETION_PRICE)},
    )
    try:
        yield backend
    finally:
        BACKENDS.unregister("pricedtest")


def _grid(owners: int, max_tokens: int = 20) -> Grid:
    return Grid.from_mapping(
        {
            "name": "priced",
            "dataset": str(SMOKE),
            "replay_mode": "per_session",
            "max_owners": owners,
            "base": {"backend": "pricedtest:priced-1", "max_tokens": max_tokens},
        },
        source="test",
    )


def _sessions(owners: int) -> list[int]:
    """Sessions with an AI reply per owner: one update each in per_session mode."""
    return [
        sum(1 for s in owner.sessions if any(m.role == "ai" for m in s.messages))
        for owner in load_dataset(SMOKE)[:owners]
    ]


def test_call_cost_by_hand() -> None:
    price = ModelPrice(prompt=0.15, completion=0.60, cached_prompt=0.075)
    # 600 uncached prompt tokens at 0.15, 400 cached at 0.075, 200 completion at 0.60 per 1M.
    assert call_cost(price, 1000, 200, 400) == pytest.approx((90 + 30 + 120) / 1e6)
    # No cached price declared: cached prompt tokens pay the prompt price.
    assert call_cost(ModelPrice(0.15, 0.60), 1000, 200, 400) == pytest.approx(270 / 1e6)
    assert call_cost(None, 1000, 200) == 0.0
    # The longest declared prefix names the price: gpt-4o-mini is not billed as gpt-4o.
    assert model_price("openai:x", "gpt-4o-mini-2024") == ModelPrice(0.15, 0.60, 0.075)
    assert model_price("openai:x", "gpt-4o-2024") == ModelPrice(2.50, 10.00, 1.25)
    assert model_price("local:smollm2", "smollm2") is None


def test_dry_run_calls_no_backend(tmp_path: Path, priced: PricedBackend) -> None:
    estimate = dry_run(
        SMOKE,
        _grid(2),
        runs_dir=tmp_path / "runs",
        backend_factory=lambda spec: RaisingBackend(),
        cache_dir=tmp_path / "cache",
    )
    assert estimate.calls == sum(_sessions(2))
    (tally,) = estimate.tallies
    assert tally.hits == 0
    assert tally.worst_completion == 20 * sum(_sessions(2))
    assert not (tmp_path / "runs").exists() and not (tmp_path / "cache").exists()


def test_dry_run_counts_cache_hits_out(tmp_path: Path, priced: PricedBackend) -> None:
    cache = tmp_path / "cache"
    # The first owner's replies recorded by a real sweep (another run directory).
    sweep(
        SMOKE,
        _grid(1),
        runs_dir=tmp_path / "runs",
        run_name="warm",
        cache_dir=cache,
        progress=False,
    )
    first, second = _sessions(2)
    assert priced.calls == first
    estimate = dry_run(
        SMOKE,
        _grid(2),
        runs_dir=tmp_path / "runs",
        backend_factory=lambda spec: RaisingBackend(),
        cache_dir=cache,
    )
    (tally,) = estimate.tallies
    assert (tally.hits, tally.calls) == (first, second)
    # Expected completion tokens: the cached replies' mean (5 each); $1 a completion token.
    assert estimate.completion_tokens == pytest.approx(REPLY_TOKENS * second)
    assert estimate.cost() == pytest.approx(REPLY_TOKENS * second)
    assert estimate.cost(worst=True) == pytest.approx(20 * second)
    # The run then makes exactly the calls estimated.
    sweep(SMOKE, _grid(2), runs_dir=tmp_path / "runs", cache_dir=cache, progress=False)
    assert priced.calls == first + second
    # Read-only lookups: the dry run wrote nothing into the cache.
    assert len(list(cache.glob("??/*.json"))) == first + second


def test_max_cost_stops_then_resumes(
    tmp_path: Path, priced: PricedBackend, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = _sessions(2)
    assert first == 3  # the limit below lets exactly the first owner's updates through
    # Each call reserves its worst case, 20 tokens at $1 = $20, and costs 5 x $1 = $5:
    # calls 1-3 fit under $32 (spent 0, 5, 10 + 20 reserved), the 4th would reach $35.
    args = [
        "run",
        str(SMOKE),
        "--backend",
        "pricedtest:priced-1",
        "--max-tokens",
        "20",
        "--replay-mode",
        "per_session",
        "--workers",
        "1",
        "--runs-dir",
        str(tmp_path / "runs"),
        "--name",
        "capped",
        "--no-progress",
    ]
    assert main([*args, "--max-cost", "32"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == (
        "error: stopped at the cost limit: spent $15.0000 of --max-cost $32.0000 (the next "
        "call could pass it); 1 replays left unfinished and kept for the next run: rerun "
        "(with a higher --max-cost) to resume"
    )
    assert priced.calls == 3
    assert main(args) == 0
    assert priced.calls == first + second  # the first owner's replay was kept
    status = json.loads((tmp_path / "runs" / "capped" / "manifest.json").read_text())["status"]
    (lane,) = status.values()
    assert (lane["reused"], lane["replayed"]) == (1, 1)


def test_spend_limit_refuses_and_settles() -> None:
    limit = SpendLimit(1.0)
    limit.reserve(0.6)
    with pytest.raises(Exception, match="would pass the cost limit"):
        limit.reserve(0.5)
    assert limit.stopped
    limit.settle(0.6, 0.25)
    assert limit.spent == pytest.approx(0.25)
    with pytest.raises(ValueError):
        SpendLimit(-1)


def test_sweep_dry_run_command_writes_nothing(
    tmp_path: Path, priced: PricedBackend, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "run",
            str(SMOKE),
            "--backend",
            "pricedtest:priced-1",
            "--dry-run",
            "--rpm",
            "3",
            "--runs-dir",
            str(tmp_path / "runs"),
            "--cache-dir",
            str(tmp_path / "cache"),
            "--replay-mode",
            "per_session",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0 and priced.calls == 0
    assert f"time at 3 requests/min: {sum(_sessions(2)) / 3:,.1f} min" in out
    assert not (tmp_path / "runs").exists()


def test_cached_prompt_tokens_kept_in_the_cache(tmp_path: Path) -> None:
    from memlab.backends.caching.cache import CachedBackend
    from memlab.backends.scripted import ScriptedBackend

    class Provider(ScriptedBackend):
        def complete(self, request: CompletionRequest) -> Completion:
            done = super().complete(request)
            done.cached_prompt_tokens = 7
            return done

    request = CompletionRequest(messages=[{"role": "user", "content": "hi"}])
    cached = CachedBackend(Provider(replies=["x"]), tmp_path, CacheMode.READ_WRITE)
    assert cached.complete(request).cached_prompt_tokens == 7
    again = CachedBackend(Provider(replies=["y"]), tmp_path, CacheMode.READ_ONLY)
    assert again.complete(request).cached_prompt_tokens == 7
