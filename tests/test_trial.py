"""try_prompt: replay the failed owners of a run with an edited prompt and read the difference."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from builders import city_owners, update, write_owners

from memlab.backends.scripted import ScriptedBackend
from memlab.core.pipeline.llm import CompletionRequest
from memlab.datasets import resolve_dataset
from memlab.grids.grid import Grid
from memlab.reporting.compare.trial import TrialError, try_prompt
from memlab.sweeps.driver import sweep

T0 = datetime(2025, 4, 7, 9, 0, tzinfo=UTC)

EDITED = "STRICT JSON PLEASE\nMemory: {current_memory}\nConversation: {conversation}\n"


def reply(request: CompletionRequest) -> str:
    """Answers prose to the default prompt for Porto; the edited prompt gets JSON."""
    prompt = str(request.messages[-1]["content"])
    if "I live in" not in prompt:
        return update()
    if "Porto" in prompt and "STRICT JSON PLEASE" not in prompt:
        return "I think the user lives in Porto."
    city = "Porto" if "Porto" in prompt else "Leeds"
    return update(f"Lives in {city}")


@pytest.fixture
def run(tmp_path: Path) -> Any:
    data = write_owners(tmp_path / "data.jsonl", city_owners(T0, follow_up=True))
    return sweep(
        data,
        Grid.from_mapping({"name": "base", "replay_mode": "per_session"}),
        runs_dir=tmp_path / "runs",
        backend_factory=lambda spec: ScriptedBackend(function=reply),
        progress=False,
    )


def test_trial_replays_the_failed_owner_and_shows_diff_deltas_and_facts(
    run: Any, tmp_path: Path
) -> None:
    prompt = tmp_path / "strict.txt"
    prompt.write_text(EDITED, encoding="utf-8")
    backend = ScriptedBackend(function=reply)
    trial = try_prompt(run, prompt, backend_factory=lambda spec: backend)
    assert trial.owners == ["bob"]
    assert backend.call_count == 2  # bob's two sessions only
    assert trial.after.name == "strict"
    assert "+STRICT JSON PLEASE" in trial.diff
    metrics = trial.metrics
    assert metrics.loc["parse failure rate"].tolist() == ["50.0%", "0.0%", "-50.0 pts"]
    assert metrics.loc["final facts"].tolist() == ["0", "1", "+1"]
    assert metrics.loc["recall"].tolist() == ["0.0%", "100.0%", "+100.0 pts"]
    facts = trial.facts
    assert facts[["user_id", "side", "trial"]].values.tolist() == [
        ["bob", "trial only", "Lives in Porto"]
    ]
    html = trial._repr_html_()
    assert "strict" in html and "+STRICT JSON PLEASE" in html and "Lives in Porto" in html
    # An unchanged trial reuses its replays.
    again = ScriptedBackend(function=reply)
    try_prompt(run, prompt, backend_factory=lambda spec: again)
    assert again.call_count == 0


def test_trial_of_all_owners_with_an_inline_template(run: Any) -> None:
    trial = try_prompt(
        run, EDITED, owners="all", backend_factory=lambda spec: ScriptedBackend(function=reply)
    )
    assert trial.owners == ["ann", "bob"]
    assert trial.after.name == "trial"


def test_trial_errors_name_the_problem(run: Any) -> None:
    with pytest.raises(TrialError, match="owners not in lane"):
        try_prompt(run, EDITED, owners=["zed"])
    with pytest.raises(TrialError, match="no lane 'nope'"):
        try_prompt(run, EDITED, lane="nope")


def test_a_run_displays_itself_in_jupyter(run: Any) -> None:
    html = run._repr_html_()
    assert html.count("<table") == 2  # summary and lane status
    assert html.count("data:image/png;base64,") == 2
    assert "parse_failure_rate" in html and "new (2)" in html


def test_trial_on_a_run_with_memory_qa(tmp_path: Path) -> None:
    """A run with memory QA (its session rows carry QA counts) can be tried with a prompt
    file; the baseline side keeps the QA counts the run's answers give."""
    grid = Grid.from_mapping(
        {
            "name": "qa",
            "owners": ["amara", "daniel"],
            "base": {"backend": "sim:careful"},
            "qa": {"answer_backend": "sim:careful", "conditions": ["memory"]},
        }
    )
    run = sweep(resolve_dataset("personas"), grid, runs_dir=tmp_path / "runs", progress=False)
    assert not run.qa_answers.empty
    prompt = tmp_path / "selfonly.txt"
    prompt.write_text(
        "Store only facts the user states about themselves.\n"
        "Memory: {current_memory}\nConversation: {conversation}\n",
        encoding="utf-8",
    )
    trial = try_prompt(run, prompt, owners="all")
    assert trial.owners == ["amara", "daniel"]
    lane = trial.lane_id
    # Each memory answer of the lane (one sample) is counted once in the session rows.
    answers = run.qa_answers
    asked = answers[(answers["lane_id"] == lane) & (answers["condition"] == "memory")]
    sessions = run.sessions[run.sessions["lane_id"] == lane]
    assert sessions["qa_questions"].sum() == len(asked) > 0
    assert "QA accuracy" in trial.metrics.index
    # The trial asks no questions: its QA cells are empty, no QA metric is compared, and what
    # it displays says so.
    assert trial.metrics.loc["QA accuracy", "trial"] == "-"
    assert not trial.comparison["metric"].str.startswith("qa_").any()
    assert "memory QA is not compared" in trial.scope
    assert "memory QA is not compared" in trial._repr_html_()


def test_a_trial_without_memory_qa_says_it_compared_what_memory_stores(run: Any) -> None:
    trial = try_prompt(run, EDITED, owners="all")
    assert trial.scope == f"Compared: what memory stores on {len(trial.owners)} owner(s), " + (
        "the baseline lane's replies against the trial's."
    )
