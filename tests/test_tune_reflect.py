"""``tune.evolve``: the reflection model's calls are cached, counted and budgeted.

Instruments: the simulated reflector (:mod:`memlab.simulation.reflector`) behind a counting
wrapper that records every completion it returned, and, for money, the same reflector answering
as ``openai:gpt-4o-mini`` (no request leaves the machine) so the declared prices apply. The
expected calls and tokens come from the wrapper's records, the expected USD from the prices the
openai backend declares (read from its plugin), never from the code under test.
"""

from __future__ import annotations

import json
from importlib import util
from pathlib import Path
from typing import Any

import pytest
import yaml
from builders import copied_personas

from memlab.backends.caching.cache import CacheMissError, CacheMode
from memlab.backends.costs.spend import CostLimitError
from memlab.backends.registry import find_backend_plugin
from memlab.cli.main import main
from memlab.core.pipeline.llm import Completion, CompletionRequest
from memlab.reporting.tuning.tune import TuneResult, tune
from memlab.reporting.tuning.tune_budget import CallLimitError, TimeLimitError
from memlab.simulation.profile import load_profile
from memlab.simulation.reflector import SimulatedReflector

pytestmark = pytest.mark.skipif(util.find_spec("gepa") is None, reason="pip install gepa")

PRICED = "openai:gpt-4o-mini"


class Counting:
    """The simulated reflector answering as ``name``/``model``; records each reply."""

    def __init__(self, name: str = "sim", model: str | None = None) -> None:
        self.inner = SimulatedReflector(load_profile("attentive"))
        self.name = name
        self._model = model or self.inner.model
        self.replies: list[Completion] = []

    @property
    def model(self) -> str:
        return self._model

    def complete(self, request: CompletionRequest) -> Completion:
        reply = self.inner.complete(request)
        self.replies.append(reply)
        return reply


class Refusing(Counting):
    """A reflector that must not be called (it records the attempt and raises)."""

    def complete(self, request: CompletionRequest) -> Completion:
        self.replies.append(Completion(text=""))
        raise AssertionError("the reflection model was called")


def _grid(folder: Path, reflect: str) -> Path:
    copied_personas(folder / "people.jsonl", 1)
    grid = {
        "name": "evolve",
        "dataset": "people.jsonl",
        "base": {"backend": "sim:attentive"},
        "tune": {
            "split": {"train": 0.4, "validation": 0.2, "test": 0.4, "seed": 3},
            "space": {"prompt": ["default"]},
            "objective": {"metric": "recall"},
            "evolve": {"reflect_backend": reflect, "max_metric_calls": 15},
        },
    }
    path = folder / "tune.yaml"
    path.write_text(yaml.safe_dump(grid), encoding="utf-8")
    return path


def _saved(runs: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((runs / "evolve" / "tune.json").read_text("utf-8"))
    return data


def _calls(replies: list[Completion]) -> dict[str, float]:
    prompt = sum(r.prompt_tokens for r in replies)
    completion = sum(r.completion_tokens for r in replies)
    return {"llm_calls": len(replies), "prompt_tokens": prompt, "completion_tokens": completion}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Counting, TuneResult]:
    """One evolution, the simulated reflector answering as the priced model, its replies
    recorded in a response cache."""
    folder = tmp_path_factory.mktemp("recorded")
    counting = Counting("openai", "gpt-4o-mini")
    result = tune(_grid(folder, PRICED), runs_dir=folder / "runs", max_trials=1,
                  cache_dir=folder / "cache", reflector=counting)  # fmt: skip
    return folder, counting, result


def test_a_read_only_cache_replays_the_evolution_without_the_reflection_model(
    recorded: tuple[Path, Counting, TuneResult], tmp_path: Path
) -> None:
    folder, counting, _ = recorded
    assert len(counting.replies) >= 2, "the evolution asked the reflector more than once"
    first = _saved(folder / "runs")
    refusing = Refusing("openai", "gpt-4o-mini")
    again = tune(
        _grid(tmp_path, PRICED), runs_dir=tmp_path / "runs", max_trials=1,
        cache_dir=folder / "cache", cache_mode=CacheMode.READ_ONLY, reflector=refusing,
    )  # fmt: skip
    assert refusing.replies == [], "a cached reflection call reached the model"
    second = _saved(tmp_path / "runs")
    assert second["evolution"] == first["evolution"]
    assert any(p["evolved"] for p in second["evolution"]["prompts"].values())
    # The replay counts the same calls and tokens, now every one from the cache.
    expected = _calls(counting.replies)
    for side in (first["reflection_cost"], again.reflection_cost or {}):
        assert {k: side[k] for k in expected} == expected
    assert first["reflection_cost"]["cache_hits"] == 0
    assert second["reflection_cost"]["cache_hits"] == len(counting.replies)


def test_reflection_calls_count_in_the_search_cost_at_the_declared_prices(
    recorded: tuple[Path, Counting, TuneResult],
) -> None:
    folder, counting, result = recorded
    plugin = find_backend_plugin(PRICED)
    assert plugin is not None
    per_prompt, per_completion = plugin.prices["gpt-4o-mini"]
    expected = _calls(counting.replies)
    usd = (expected["prompt_tokens"] * per_prompt
           + expected["completion_tokens"] * per_completion) / 1e6  # fmt: skip
    assert expected["llm_calls"] > 0 and usd > 0
    runs = folder / "runs"
    saved = _saved(runs)
    cost = saved["reflection_cost"]
    assert {k: cost[k] for k in expected} == expected
    assert cost["cost_usd"] == pytest.approx(usd)
    # Part of the search's cost: the simulated replays cost nothing, so the USD is all its.
    assert saved["cost"]["cost_usd"] == pytest.approx(usd)
    replayed = sum(
        len((run / "calls.jsonl").read_text("utf-8").splitlines())
        for run in [
            *(runs / "evolve/evolve").glob("eval-*"),
            *(runs / "evolve/trials").glob("trial-*"),
        ]
    )
    assert saved["cost"]["llm_calls"] == replayed + expected["llm_calls"]
    line = (f"reflection: {expected['llm_calls']} calls (0 from the cache), "
            f"{expected['prompt_tokens']} prompt + {expected['completion_tokens']} completion "
            f"tokens, ${usd:.4f}")  # fmt: skip
    assert line in "\n".join(result.lines())
    report = (runs / "evolve/tune-report.md").read_text("utf-8")
    assert f"- {line}" in report.split("## Search cost")[1]


def test_a_reflection_call_past_the_cost_limit_is_not_sent_and_a_rerun_resumes_it(
    recorded: tuple[Path, Counting, TuneResult], tmp_path: Path
) -> None:
    folder, _, _ = recorded
    path = _grid(tmp_path, PRICED)
    refused = Counting("openai", "gpt-4o-mini")
    # The simulated replays cost nothing; any reflection call's worst case passes $0.000001.
    with pytest.raises(CostLimitError, match="reflection call"):
        tune(path, runs_dir=tmp_path / "runs", max_trials=1, max_cost=1e-6, reflector=refused)
    assert refused.replies == [], "the refused call was sent"
    assert not (tmp_path / "runs/evolve/trials").exists(), "the search stopped before candidates"
    # The same command without the limit resumes; every reflection reply it needs is one the
    # uninterrupted evolution recorded, and it keeps the same prompts.
    refusing = Refusing("openai", "gpt-4o-mini")
    tune(path, runs_dir=tmp_path / "runs", max_trials=1, cache_dir=folder / "cache",
         cache_mode=CacheMode.READ_ONLY, reflector=refusing)  # fmt: skip
    assert refusing.replies == []
    assert _saved(tmp_path / "runs")["evolution"] == _saved(folder / "runs")["evolution"]


def test_a_reflection_call_after_the_time_budget_is_not_sent(tmp_path: Path) -> None:
    ticks = iter([0.0])  # the budget starts at 0; every later reading is 100 s on

    def clock() -> float:
        return next(ticks, 100.0)

    refused = Counting()
    with pytest.raises(TimeLimitError, match=r"time budget \(10 s\)"):
        tune(_grid(tmp_path, "sim:attentive"), runs_dir=tmp_path / "runs", max_trials=1,
             reflector=refused, max_time=10, clock=clock)  # fmt: skip
    assert refused.replies == []


def test_a_request_a_read_only_cache_lacks_stops_the_evolution(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    refusing = Refusing()
    with pytest.raises(CacheMissError, match="read-only"):
        tune(_grid(tmp_path, "sim:attentive"), runs_dir=tmp_path / "runs", max_trials=1,
             cache_dir=tmp_path / "empty", cache_mode=CacheMode.READ_ONLY,
             reflector=refusing)  # fmt: skip
    assert refusing.replies == []
    assert not (tmp_path / "runs/evolve/trials").exists()
    # The command says so in one line and exits 1, as for a replay the cache lacks.
    grid = _grid(tmp_path, "sim:attentive")
    cache = ["--cache-dir", str(tmp_path / "empty"), "--cache-mode", "read_only"]
    code = main(["tune", str(grid), "--runs-dir", str(tmp_path / "cli"), *cache, "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert code == 1 and len(err.splitlines()) == 1 and "cache miss in read-only mode" in err


def _sent(runs: list[Path]) -> int:
    """Records of ``runs`` that asked the model and missed the cache."""
    records = [json.loads(line) for run in runs
               for line in (run / "calls.jsonl").read_text("utf-8").splitlines()]  # fmt: skip
    return sum(1 for r in records if not r["cached"] and not isinstance(r.get("skipped"), str))


def test_the_call_budget_counts_replays_sent_not_reflection_replies_from_the_cache(
    recorded: tuple[Path, Counting, TuneResult], tmp_path: Path
) -> None:
    folder, counting, _ = recorded
    search = folder / "runs/evolve"
    # The simulated model's replays are never cached: each one is a call sent. The recorded
    # search's evolution and candidate are replayed as they were, so their calls are known.
    before = _sent([*(search / "evolve").glob("eval-*"), search / "trials/trial-000"])
    refusing = Refusing("openai", "gpt-4o-mini")
    with pytest.raises(CallLimitError) as stopped:
        tune(_grid(tmp_path, PRICED), runs_dir=tmp_path / "runs", max_trials=1,
             cache_dir=folder / "cache", cache_mode=CacheMode.READ_ONLY, reflector=refusing,
             max_calls=before + 1)  # fmt: skip
    assert refusing.replies == [] and len(counting.replies) > 0
    # The first held-out replay starts under the budget; the second does not. The reflection
    # replies, all from the cache, count nothing.
    runs = tmp_path / "runs/evolve"
    held = _sent([runs / "heldout-start"])
    assert held > 0 and not (runs / "heldout-best").exists()
    assert stopped.value.used == before + held
    assert "before the replay heldout-best, after 1 of 1 candidates" in str(stopped.value)
