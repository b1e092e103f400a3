"""Rescoring a finished run with another matcher: same numbers as a fresh sweep, no replay."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from builders import marker_backend, one_turn, update, write_owners

from memlab._version import __version__
from memlab.backends.caching.cache import CachedBackend
from memlab.backends.scripted import ScriptedBackend
from memlab.cli.main import main
from memlab.core.pipeline.llm import CompletionRequest
from memlab.grids.grid import Grid
from memlab.matching.base import FactMatcher, LexicalMatcher
from memlab.matching.judge import LLMJudgeMatcher
from memlab.matching.matchers import default_matcher
from memlab.postrun.rescoring import RescoreError, rescore
from memlab.reporting.report import build_report
from memlab.runs.run import load_run
from memlab.sweeps.driver import sweep

T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)

# The model's replies: a polarity flip and a terse paraphrase of verbose gold facts.
REPLIES = {
    "[s:1]": update("Enjoys classical music", "Dislikes VR games because they cause nausea"),
    "[s:2]": update("Lives in Porto", "Follows a vegetarian diet"),
}


def gold(gid: str, content: str) -> dict[str, str]:
    return {"id": gid, "content": content, "category": "preference"}


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    owner = {
        "user_id": "ann",
        "sessions": [
            one_turn(
                "ann-1",
                T0,
                "Music and games. [s:1]",
                facts=[
                    gold("g1", "I don't enjoy classical music at all."),
                    gold("g2", "I strongly dislike VR games because they make me feel nauseous."),
                ],
            ),
            one_turn(
                "ann-2",
                T0 + timedelta(days=1),
                "Home and food. [s:2]",
                facts=[gold("g3", "I live in Lisbon."), gold("g4", "I'm a vegetarian.")],
                retracts=["g2"],
            ),
        ],
    }
    path = tmp_path / "tiny.jsonl"
    write_owners(path, [owner])
    return path


def run_sweep(dataset: Path, runs: Path, name: str, matcher: FactMatcher) -> tuple[Any, Any]:
    backend = marker_backend(REPLIES)
    grid = Grid.from_mapping({"name": name, "axes": {"max_facts": [10, 20]}})
    run = sweep(
        dataset,
        grid,
        runs_dir=runs,
        backend_factory=lambda spec: backend,
        progress=False,
        matcher=matcher,
    )
    return run, backend


def test_rescoring_gives_the_numbers_of_a_fresh_sweep(dataset: Path, tmp_path: Path) -> None:
    lexical_run, backend = run_sweep(dataset, tmp_path / "runs", "a", LexicalMatcher())
    calls_before = (lexical_run.path / "calls.jsonl").read_bytes()
    lexical_final = lexical_run.sessions.set_index(["lane_id", "session_index"])
    calls_made = backend.call_count
    assert lexical_run.environment["matcher"] == {"name": "lexical", "version": __version__}

    rescored = rescore(lexical_run.path, default_matcher())
    fresh, _ = run_sweep(dataset, tmp_path / "runs", "b", default_matcher())

    assert backend.call_count == calls_made  # no replay, no memory-update call
    assert (lexical_run.path / "calls.jsonl").read_bytes() == calls_before
    pd.testing.assert_frame_equal(rescored.sessions, fresh.sessions)
    pd.testing.assert_frame_equal(rescored.summary, fresh.summary)
    on_disk = pd.read_csv(rescored.path / "summary.csv", index_col=0)
    assert on_disk["recall"].tolist() == pytest.approx(fresh.summary["recall"].tolist())

    # The matchers disagree here, so the comparison above can fail.
    final = rescored.sessions.set_index(["lane_id", "session_index"])
    lane = next(iter(rescored.lanes))
    # Lexical: "Enjoys classical music" covers "I don't enjoy classical music"; the VR fact is
    # missed. Default: the flip is vetoed, the paraphrase counts.
    assert lexical_final.loc[(lane, 0), "gold_covered"] == 1
    assert final.loc[(lane, 0), "gold_covered"] == 1
    assert lexical_final.loc[(lane, 1), "retracted_held"] == 0
    assert final.loc[(lane, 1), "retracted_held"] == 1  # the retracted VR fact is still held
    assert final.loc[(lane, 1), "gold_covered"] == 1  # vegetarian; Lisbon != Porto
    assert lexical_final.loc[(lane, 1), "gold_covered"] == 2  # flip and "Lives in Porto" count
    recorded = {"name": default_matcher().name, "version": __version__}
    assert rescored.environment["matcher"] == fresh.environment["matcher"] == recorded
    assert "rescored_at" in rescored.environment and "packages" in rescored.environment


def judge_backend() -> ScriptedBackend:
    """Lenient: yes when stored and gold share a word of 5+ letters; strict: also no "not"."""

    def answer(request: CompletionRequest) -> str:
        prompt = str(request.messages[-1]["content"])
        gold_text = prompt.split("GOLD: ")[1].split("\n")[0].casefold()
        stored = prompt.split("STORED: ")[1].split("\n")[0].casefold()
        gold_words = {w.strip(".,") for w in gold_text.split()}
        shared = {w for w in stored.split() if len(w) >= 5} & gold_words
        strict = "every claim" in prompt
        return "yes" if shared and not (strict and "don't" in gold_text) else "no"

    return ScriptedBackend(function=answer)


def test_a_judged_run_reports_each_prompt_and_their_agreement(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run, _ = run_sweep(dataset, tmp_path / "runs", "a", LexicalMatcher())
    backend = judge_backend()
    cache = tmp_path / "judge-cache"
    judged = rescore(run.path, LLMJudgeMatcher(CachedBackend(backend, cache)))
    record = judged.environment["matcher"]
    assert record["name"] == "judge:scripted"
    judge = record["judge"]
    assert judge["prompts"] == ["lenient", "strict"]
    # Judged pairs (sharing a word): classical music (the prompts differ), VR games and
    # vegetarian (both yes), Lisbon/Porto (both no).
    assert (judge["pairs_judged"], judge["agreement"]) == (4, 0.75)
    for lane in judged.lanes:
        by_prompt = judge["lanes"][lane]
        assert by_prompt["lenient"]["recall"] == pytest.approx(2 / 3)  # classical, vegetarian
        assert by_prompt["strict"]["recall"] == pytest.approx(1 / 3)  # vegetarian
        assert by_prompt["strict"]["retracted_held"] == 1
    assert judged.summary["recall"].tolist() == pytest.approx([2 / 3, 2 / 3])  # lenient
    calls = backend.call_count
    assert calls == 8  # four pairs x two prompts, shared by both lanes

    # Again from the cache: the same numbers and no call.
    again = rescore(run.path, LLMJudgeMatcher(CachedBackend(backend, cache)))
    assert backend.call_count == calls
    assert again.environment["matcher"]["judge"] == judge

    paths = build_report([again], tmp_path / "report")
    text = paths.markdown.read_text(encoding="utf-8")
    assert "fact matcher of a: judge:scripted, not calibrated here" in text
    assert "judge prompts in a agree on 75.0% of 4 pairs" in text


def test_a_failed_rescore_changes_nothing(dataset: Path, tmp_path: Path) -> None:
    run, _ = run_sweep(dataset, tmp_path / "runs", "a", LexicalMatcher())
    files = ("sessions.jsonl", "summary.csv", "environment.json")
    before = {name: (run.path / name).read_bytes() for name in files}
    dataset.unlink()
    with pytest.raises(RescoreError, match=r"dataset recorded in grid\.yaml is missing"):
        rescore(run.path, default_matcher())
    assert {name: (run.path / name).read_bytes() for name in files} == before


def test_rescore_command_and_report_note(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run, _ = run_sweep(dataset, tmp_path / "runs", "a", default_matcher())
    assert main(["rescore", str(run.path), "--matcher", "lexical"]) == 0
    out = capsys.readouterr().out
    assert "rescored with matcher lexical" in out and "recall" in out
    paths = build_report([run], tmp_path / "report")
    text = paths.markdown.read_text(encoding="utf-8")
    assert "fact matcher of a: lexical, agreement " in text
    assert "with hand labels on the calibration test split (588 pairs; by style: " in text
    assert "compact 59.5% (wrong pairs accepted 42.6%); longform " in text
    assert "; preference " in text  # the third style, sorted last
    assert main(["rescore", str(tmp_path / "no-run")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1
    (run.path / "environment.json").write_text("{}", encoding="utf-8")
    paths = build_report([load_run(run.path)], tmp_path / "report2")
    assert "fact matcher of a: not recorded" in paths.markdown.read_text(encoding="utf-8")
