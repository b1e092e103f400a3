"""``memlab tune --max-calls / --max-total-tokens``: calls sent to the model are budgeted.

The expected counts are read from the runs' ``calls.jsonl`` (a record that asked the model
and was not answered by the cache is a call sent) and from a counting wrapper around the
simulated reflector, never from the code under test. The simulated model answers every call.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from memlab.backends.caching.cache import CacheMode
from memlab.cli.main import main
from memlab.core.pipeline.llm import Completion, CompletionRequest
from memlab.grids.grid import GridError
from memlab.reporting.tuning.tune import tune
from memlab.reporting.tuning.tune_budget import CallBudget, CallLimitError
from memlab.reporting.tuning.tune_reflect import Reflection, ReflectionRefused
from memlab.simulation.profile import load_profile
from memlab.simulation.reflector import SimulatedReflector
from tests.tune_data import owners_dataset, tune_grid


def _sent(run: Path) -> tuple[int, int]:
    """Calls of a run that asked the model and missed the cache, and their tokens."""
    records = [json.loads(line) for line in (run / "calls.jsonl").read_text("utf-8").splitlines()]
    sent = [r for r in records if not r["cached"] and not isinstance(r.get("skipped"), str)]
    return len(sent), sum(r["prompt_tokens"] + r["completion_tokens"] for r in sent)


def _stamps(trials: Path) -> dict[str, int]:
    return {p.parent.name: p.stat().st_mtime_ns for p in trials.glob("*/manifest.json")}


def test_the_call_budget_stops_the_search_and_a_larger_one_continues_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    owners_dataset(tmp_path, copies=2)
    grid = tune_grid(tmp_path, {"space": {"prompt": ["default", "self_only.txt"]}})
    runs = tmp_path / "runs"
    trials = runs / "search" / "trials"
    # One call: the first candidate starts under it, runs to its end, and nothing follows.
    code = main(["tune", str(grid), "--runs-dir", str(runs), "--max-trials", "3",
                 "--max-calls", "1", "--no-progress"])  # fmt: skip
    captured = capsys.readouterr()
    first, _ = _sent(trials / "trial-000")
    assert first > 1
    assert code == 1 and captured.out == ""
    (line,) = captured.err.strip().splitlines()
    assert (
        f"call budget (at most 1 call sent to the model; replies from the cache not "
        f"counted) ran out at {first} before the next candidate, after 1 of 3" in line
    )
    assert "larger --max-calls continues" in line
    stamps = _stamps(trials)
    assert sorted(stamps) == ["trial-000"]
    # The budget from the grid this time: not part of the study's spec, so the study made
    # without it resumes. The finished candidate's calls count; the second one passes it.
    data = yaml.safe_load(grid.read_text("utf-8"))
    data["tune"]["max_calls"] = first + 1
    grid.write_text(yaml.safe_dump(data), encoding="utf-8")
    with pytest.raises(CallLimitError) as stopped:
        tune(grid, runs_dir=runs, max_trials=3)
    second, _ = _sent(trials / "trial-001")
    error = stopped.value
    assert (error.budget, error.limit, error.done, error.wanted) == ("calls", first + 1, 2, 3)
    assert error.used == first + second
    assert {k: v for k, v in _stamps(trials).items() if k in stamps} == stamps  # not replayed
    # The same budget again starts nothing.
    with pytest.raises(CallLimitError, match="after 2 of 3"):
        tune(grid, runs_dir=runs, max_trials=3)
    assert sorted(_stamps(trials)) == ["trial-000", "trial-001"]
    # A larger one (the option wins over the grid's) finishes the search and its proof.
    result = tune(grid, runs_dir=runs, max_trials=3, max_calls=10**9)
    assert [t["number"] for t in result.trials] == [0, 1, 2]
    assert (runs / "search" / "tune.json").exists()


def test_the_token_budget_holds_back_the_held_out_proof(tmp_path: Path) -> None:
    owners_dataset(tmp_path, copies=2)
    grid = tune_grid(tmp_path, {"space": {"prompt": ["default"]}})
    runs = tmp_path / "runs"
    with pytest.raises(CallLimitError) as stopped:
        tune(grid, runs_dir=runs, max_trials=1, max_total_tokens=1)
    _, tokens = _sent(runs / "search" / "trials" / "trial-000")
    error = stopped.value
    assert tokens > 1
    assert (error.budget, error.used, error.done, error.wanted) == ("tokens", tokens, 1, 1)
    assert "before the replay heldout-start" in str(error)
    assert "larger --max-total-tokens" in str(error)
    assert not (runs / "search" / "heldout-start").exists()
    assert not (runs / "search" / "tune.json").exists()
    # One token more: the first held-out replay starts (the candidate's tokens, kept in the
    # study, count on the rerun), the second does not.
    with pytest.raises(CallLimitError) as stopped:
        tune(grid, runs_dir=runs, max_trials=1, max_total_tokens=tokens + 1)
    _, held = _sent(runs / "search" / "heldout-start")
    assert held > 0 and stopped.value.used == tokens + held
    assert "before the replay heldout-best" in str(stopped.value)
    # Rerun: the kept held-out replay is resumed, not sent again, so it counts nothing now.
    kept = (runs / "search" / "heldout-start" / "calls.jsonl").read_bytes()
    tune(grid, runs_dir=runs, max_trials=1, max_total_tokens=tokens + 1)
    assert (runs / "search" / "heldout-start" / "calls.jsonl").read_bytes() == kept
    assert (runs / "search" / "tune.json").exists()


@pytest.mark.parametrize(
    ("key", "value"), [("max_calls", 0), ("max_calls", "10"), ("max_total_tokens", 1.5)]
)
def test_a_bad_budget_names_the_file_line_and_key(tmp_path: Path, key: str, value: object) -> None:
    owners_dataset(tmp_path, copies=2)
    grid = tune_grid(tmp_path, {"space": {"prompt": ["default"]}, key: value})
    text = grid.read_text("utf-8").splitlines()
    line = next(n for n, row in enumerate(text, 1) if row.strip().startswith(f"{key}:"))
    with pytest.raises(GridError, match=rf"tune\.yaml:{line}: tune\.{key}: ") as bad:
        tune(grid, runs_dir=tmp_path / "runs")
    assert len(str(bad.value).splitlines()) == 1
    assert not (tmp_path / "runs").exists()


def test_a_bad_budget_option_exits_2(tmp_path: Path) -> None:
    owners_dataset(tmp_path, copies=2)
    grid = str(tune_grid(tmp_path, {"space": {"prompt": ["default"]}}))
    assert main(["tune", grid, "--max-calls", "0"]) == 2
    assert main(["tune", grid, "--max-total-tokens", "many"]) == 2


class _Counting:
    """The simulated reflector (a test instrument); records each reply it returns."""

    name = "sim"

    def __init__(self) -> None:
        self.inner = SimulatedReflector(load_profile("attentive"))
        self.replies: list[Completion] = []

    @property
    def model(self) -> str:
        return self.inner.model

    def complete(self, request: CompletionRequest) -> Completion:
        reply = self.inner.complete(request)
        self.replies.append(reply)
        return reply


class _Spend:
    spent = 0.0


def test_reflection_calls_sent_count_and_a_spent_budget_sends_none(tmp_path: Path) -> None:
    counting = _Counting()
    budget = CallBudget(tmp_path, wanted=4, max_calls=2)
    reflection = Reflection(
        counting, "sim:attentive", cache_dir=tmp_path / "cache", cache_mode=CacheMode.READ_WRITE,
        ledger=_Spend(), calls=budget,
    )  # fmt: skip
    reflection("Rewrite the prompt: first request.")
    reflection("Rewrite the prompt: first request.")  # answered by the cache: not counted
    assert (budget.calls, len(counting.replies)) == (1, 1)
    reflection("Rewrite the prompt: second request.")
    tokens = sum(r.prompt_tokens + r.completion_tokens for r in counting.replies)
    assert len(counting.replies) == 2 and tokens > 0
    assert (budget.calls, budget.tokens) == (2, tokens)
    with pytest.raises(ReflectionRefused) as refused:
        reflection("Rewrite the prompt: third request.")
    assert len(counting.replies) == 2, "the refused call was sent"
    error = refused.value.error
    assert isinstance(error, CallLimitError)
    assert (error.budget, error.used, error.limit) == ("calls", 2, 2)
    assert "before a reflection call, after 0 of 4 candidates" in str(error)
    reflection("Rewrite the prompt: first request.")  # the cache still answers
    assert len(counting.replies) == 2


def test_a_resumed_study_counts_its_finished_candidates(tmp_path: Path) -> None:
    budget = CallBudget(tmp_path, wanted=5, max_calls=20)
    cost = {"llm_calls": 10.0, "cache_hits": 4.0, "prompt_tokens": 100.0, "completion_tokens": 20.0}
    # A trial recorded with what it sent; one recorded before that was kept: its calls not
    # from the cache (10 - 4) and, at most, all its tokens (100 + 20).
    budget.resume([{"cost": cost, "sent": {"calls": 3, "tokens": 30}}, {"cost": cost}])
    assert (budget.done, budget.calls, budget.tokens) == (2, 3 + 6, 30 + 120)
    assert budget.spent() is None
    budget.add({"calls": 15, "tokens": 0}, before={"calls": 4, "tokens": 0})
    assert budget.calls == 9 + 11 and budget.spent() == "calls"
