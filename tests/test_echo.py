"""Echoes of the prompt template: a model that copies the prompt's own example or instructions
has the copying counted per reply (echoed, echo_replies, echo_rate), and what it stored that way
is never counted as a stored fact."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from builders import marker_backend, one_turn, sweep_scripted, update, write_owners

from memlab.backends.registry import BACKENDS, register_backend
from memlab.backends.scripted import ScriptedBackend
from memlab.core.jsondoc.contract import minimal_update
from memlab.core.jsondoc.echo import EchoCheck, find_echoes
from memlab.core.pipeline.storage import InMemoryStorage
from memlab.core.pipeline.updater import MemoryUpdater
from memlab.core.prompts import get_prompt
from memlab.reporting.compare.trial import try_prompt
from memlab.reporting.display import call_lines
from memlab.reporting.echoes import echo_notes, echo_reason, echo_share
from memlab.reporting.report import build_report
from memlab.runs.run import Run

T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
DEFAULT = get_prompt("default")
# The default prompt's own example of a new fact (default.txt, "Output format").
EXAMPLE = "Prefers dark mode in every editor"


def check(conversation: str = "User: hello") -> EchoCheck:
    return EchoCheck(DEFAULT.template, DEFAULT.placeholders, (conversation,))


def test_the_template_example_is_an_echo_whatever_its_case_and_punctuation() -> None:
    assert EXAMPLE in DEFAULT.template  # the premise of this file
    assert check().is_echo(EXAMPLE)
    assert check().is_echo("prefers DARK mode, in every editor!")
    # The other example of the template, and an instruction copied as a summary.
    assert check().is_echo("Prefers Python type hints on all public functions")
    assert check().is_echo("The user's job, role, company, projects and tools.")
    # Mostly copied (9 of 11 words): still an echo.
    assert check().is_echo("At Acme: the user's job, role, company, projects and tools")


def test_text_the_user_also_said_is_not_an_echo() -> None:
    said = "User: I prefer dark mode in every editor, honestly."
    assert not check(said).is_echo(EXAMPLE)


@pytest.mark.parametrize(
    "fact",
    [
        "Prefers dark chocolate to milk chocolate",  # two words of the example
        "Works in dark mode",  # fewer than five words
        "Lives in Leeds with two cats",
        # Five words of an instruction ("what the user is working on ..."), the rest its own.
        "The user is working on a Rust compiler for embedded boards",
    ],
)
def test_text_mostly_its_own_is_not_an_echo(fact: str) -> None:
    assert not check().is_echo(fact)


def test_conversation_text_in_the_rendered_prompt_never_makes_an_echo() -> None:
    # The placeholders' values are not the template's own text: a fact taken from the
    # conversation is no echo, even though the rendered prompt contains it.
    said = "User: my team ships the billing service every second Tuesday"
    assert not check(said).is_echo("Team ships the billing service every second Tuesday")


def test_find_echoes_lists_echoing_facts_and_summaries_and_changes_nothing() -> None:
    update_ = minimal_update()
    update_["newFacts"] = [
        {"content": EXAMPLE, "category": "preference", "confidence": 0.9},
        {"content": "Lives in Leeds", "category": "context", "confidence": 0.9},
    ]
    update_["user"]["workContext"] = {
        "summary": "The user's job, role, company, projects and tools.",
        "shouldUpdate": True,
    }
    # A section left unchanged is not checked: its text is not written.
    update_["user"]["topOfMind"] = {"summary": EXAMPLE, "shouldUpdate": False}
    before = json.dumps(update_, sort_keys=True)
    echoed = find_echoes(update_, check())
    assert json.dumps(update_, sort_keys=True) == before
    assert echoed == [
        {"content": EXAMPLE, "category": "preference", "confidence": 0.9},
        {
            "content": "The user's job, role, company, projects and tools.",
            "section": "user.workContext",
        },
    ]


def test_the_updater_records_each_echo_with_the_id_it_was_stored_under() -> None:
    storage = InMemoryStorage()
    backend = ScriptedBackend([update(EXAMPLE, "Lives in Leeds"), update(EXAMPLE)])
    updater = MemoryUpdater(backend=backend, storage=storage)
    first = updater.run_update([{"role": "human", "content": "I live in Leeds."}], "t1")
    stored = {f["content"]: f["id"] for f in storage.load()["facts"]}
    # The memory is what the merge made of the reply: measuring does not change the pipeline.
    assert set(stored) == {EXAMPLE, "Lives in Leeds"}
    record = first.to_record()
    assert record["n_echoed"] == 1
    assert record["applied"]["echoed"] == [
        {"id": stored[EXAMPLE], "content": EXAMPLE, "confidence": 0.9}
    ]
    # Proposed again, with the echo now in the memory the prompt shows: still an echo (a
    # duplicate, so not stored twice, and no id).
    second = updater.run_update([{"role": "human", "content": "Thanks."}], "t2").to_record()
    assert second["n_echoed"] == 1
    assert second["n_skipped_duplicate"] == 1
    assert second["applied"]["echoed"] == [{"content": EXAMPLE, "confidence": 0.9}]


def echo_run(
    tmp_path: Path, axes: dict[str, list[str]] | None = None
) -> tuple[Run, ScriptedBackend]:
    """Two owners, two sessions each. Every reply but bob's second carries the example; the
    first sessions also state the owner's city (the gold fact)."""
    dataset, backend = echo_dataset(tmp_path)
    grid: dict[str, object] = {"name": "echo", "base": {"backend": "scripted"}}
    if axes:
        grid["axes"] = axes
    return sweep_scripted(dataset, grid, backend, tmp_path / "runs"), backend


def echo_dataset(tmp_path: Path) -> tuple[Path, ScriptedBackend]:
    """The dataset of :func:`echo_run` and its scripted model, whose replies carry the default
    prompt's example whatever the prompt (an echo only under a prompt that holds it)."""
    owners = []
    for user, city in (("ann", "Leeds"), ("bob", "Porto")):
        gold = [{"id": "g1", "content": f"Lives in {city}", "category": "context"}]
        owners.append(
            {
                "user_id": user,
                "sessions": [
                    one_turn(f"{user}-1", T0, f"I live in {city}.", facts=gold),
                    one_turn(f"{user}-2", T0 + timedelta(days=1), f"Thanks from {user}."),
                ],
            }
        )
    dataset = write_owners(tmp_path / "owners.jsonl", owners)
    backend = marker_backend(
        {
            "I live in Leeds": update(EXAMPLE, "Lives in Leeds"),
            "I live in Porto": update(EXAMPLE, "Lives in Porto"),
            "Thanks from ann": update(EXAMPLE),
            "Thanks from bob": update(),
        }
    )
    return dataset, backend


def test_a_scripted_model_echoing_the_example_is_counted_and_not_a_stored_fact(
    tmp_path: Path,
) -> None:
    """By hand: replies 4; replies with an echo 3 (ann's two, bob's first); echo_rate 3/4. The
    memory stores the example once per owner (ann's second proposal is a duplicate), so each
    holds 2 facts, but only the cities count as stored facts: final facts 2, recall 2/2,
    precision 2/2 (with the echoes counted, precision would be 2/4)."""
    run, _ = echo_run(tmp_path)
    row = run.summary.iloc[0]
    assert row["echoed"] == 3
    assert math.isclose(row["echo_rate"], 3 / 4)
    assert row["final_facts"] == 2
    assert math.isclose(row["recall"], 1.0)
    assert math.isclose(row["precision"], 1.0)
    sessions = run.sessions.sort_values(["user_id", "session_index"])
    assert sessions["echoed"].tolist() == [1, 1, 1, 0]
    calls = run.calls.sort_values(["user_id", "session_index"])
    assert calls["n_echoed"].tolist() == [1, 1, 1, 0]
    lane = next(iter(run.lanes))
    for user in ("ann", "bob"):
        assert EXAMPLE in {f["content"] for f in run.final_memory(lane, user)["facts"]}
    assert sessions["facts"].tolist() == [1, 1, 1, 1]  # the echo is in memory, not counted


def test_the_echo_is_named_where_a_user_reads_the_run(tmp_path: Path) -> None:
    run, _ = echo_run(tmp_path)
    lane = next(iter(run.lanes))
    assert math.isclose(echo_share(run, lane), 3 / 4)
    assert math.isnan(echo_share(run, "no-such-lane"))
    reason = echo_reason(run, lane)
    assert reason == f'3 of 4 replies (75.0%) echo the prompt: "{EXAMPLE}" (×3)'
    assert any(reason in line for line in call_lines(run))  # memlab run's summary
    paths = build_report([run], tmp_path / "report")
    summary = paths.markdown.read_text(encoding="utf-8")
    assert "Replies echo the prompt's own text" in summary
    assert "replies echoing the prompt" in summary  # the metric table's row


def test_a_prompt_trial_says_which_side_echoes(tmp_path: Path) -> None:
    """The concise prompt has no dark-mode example: the same replies echo nothing there."""
    run, backend = echo_run(tmp_path)
    assert EXAMPLE not in get_prompt("concise").template
    trial = try_prompt(run, "concise", owners="all", backend_factory=lambda _spec: backend)
    assert trial.echoes[0] == f"baseline: {echo_reason(run, next(iter(run.lanes)))}"
    assert len(trial.echoes) == 2  # the baseline's line, then what it means
    assert "baseline: 3 of 4 replies" in trial._repr_html_()


def test_a_clean_run_has_no_echo_lines(tmp_path: Path) -> None:
    dataset = write_owners(
        tmp_path / "owners.jsonl",
        [{"user_id": "ann", "sessions": [one_turn("ann-1", T0, "I live in Leeds.")]}],
    )
    backend = marker_backend({"I live in Leeds": update("Lives in Leeds")})
    grid = {"name": "clean", "base": {"backend": "scripted"}}
    run = sweep_scripted(dataset, grid, backend, tmp_path / "runs")
    lane = next(iter(run.lanes))
    assert echo_share(run, lane) == 0.0
    assert echo_reason(run, lane) is None
    assert echo_notes([run]) == []


def test_a_trial_against_an_echoing_baseline_is_inconclusive_and_names_the_echo(
    tmp_path: Path,
) -> None:
    """The baseline echoes in 3 of 4 replies (75%, above the 20% the checks allow): a trial of
    another prompt cannot say what the prompt changes, and says why."""
    run, backend = echo_run(tmp_path)
    trial = try_prompt(run, "concise", owners="all", backend_factory=lambda _spec: backend)
    echoed = [r for r in trial.reasons if r.kind == "prompt echoed"]
    assert len(echoed) == 1
    assert "echoes the prompt's own text in 75% (baseline) and 0% (candidate)" in echoed[0].text


def test_an_ab_verdict_names_the_echo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The default prompt against concise, replies that copy the default's example: the
    comparison is inconclusive and says the model echoes the prompt (3 of 4 replies, 75%, on
    the baseline; the concise template holds no example, so nothing echoes there)."""
    from memlab.cli.main import main

    run, _ = echo_run(tmp_path, {"prompt": ["default", "concise"]})
    assert main(["compare", str(run.path), "--resamples", "200"]) == 0
    out = capsys.readouterr().out.replace("\n  ", " ")
    assert "the model echoes the prompt's own text" in out
    verdict = [line for line in out.splitlines() if line.startswith("verdict:")]
    assert verdict and "inconclusive" in verdict[0] and "echo" in verdict[0], verdict


@pytest.fixture
def echoing_backend(tmp_path: Path) -> Iterator[Path]:
    """The echo dataset, its scripted model registered as backend ``echoing`` for the
    command line, unregistered afterwards."""
    dataset, backend = echo_dataset(tmp_path)
    register_backend("echoing", lambda _argument, **_options: backend)
    try:
        yield dataset
    finally:
        BACKENDS.unregister("echoing")


def test_memlab_ab_against_an_echoing_baseline_is_inconclusive_and_names_the_echo(
    echoing_backend: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``memlab ab default concise`` with replies that copy the default prompt's example: the
    baseline echoes in 3 of 4 replies (75%), the concise template holds no example (0%), so
    every primary metric's verdict is inconclusive and says the model echoes the prompt;
    without --allow-inconclusive the command exits 1."""
    from memlab.cli.main import main

    args = ["ab", "default", "concise", "--dataset", str(echoing_backend), "--backend"]
    args += ["echoing", "--runs-dir", str(tmp_path / "runs"), "--workers", "1", "--no-progress"]
    assert main([*args, "--resamples", "200"]) == 1
    out = capsys.readouterr().out
    block = out.split("verdict per primary metric (baseline -> candidate):\n", 1)[1]
    # A verdict wraps onto lines indented further; each metric's starts at two spaces.
    verdicts = [line for line in block.replace("\n    ", " ").splitlines() if "->" in line]
    assert len(verdicts) == 3, out  # parse failure rate, recall, precision (macro)
    for line in verdicts:
        assert ": inconclusive: " in line and line.endswith("the model echoes the prompt"), out
    assert "echoes the prompt's own text in 75% (baseline) and 0% (candidate)" in " ".join(
        out.split()
    ), out
