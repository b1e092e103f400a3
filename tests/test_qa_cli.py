"""``memlab qa``, and memory QA in ``memlab gate``, ``memlab report`` and run files."""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import pytest

from memlab.cli.main import main
from memlab.datasets import resolve_dataset
from memlab.grids.grid import Grid
from memlab.matching.base import LexicalMatcher
from memlab.postrun.rescoring import rescore
from memlab.reporting.report import build_report
from memlab.runs.run import Run, load_run
from memlab.runs.rundir import QA_ANSWERS, QA_MANIFEST
from memlab.scoring.qa.qa_metrics import cause_table
from memlab.scoring.qa.qa_verdicts import error_counts
from memlab.sweeps.driver import sweep

OWNERS = ["amara", "daniel", "hana"]


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> Run:
    root = tmp_path_factory.mktemp("qa-cli")
    grid = Grid.from_mapping(
        {
            "name": "plain",
            "owners": OWNERS,
            "base": {"backend": "sim:careful"},
            "axes": {"fact_confidence_threshold": [0.5, 0.95]},
        }
    )
    return sweep(resolve_dataset("personas"), grid, runs_dir=root / "runs", progress=False)


@pytest.fixture
def run_dir(swept: Run, tmp_path: Path) -> Path:
    target = tmp_path / "runs" / "plain"
    shutil.copytree(swept.path, target)
    return target


def test_qa_adds_answers_and_prints_them(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["qa", str(run_dir), "--answer-backend", "sim:careful", "--no-progress"]
    assert main([*args, "--judges", "strict,lenient", "--conditions", "memory,none"]) == 0
    out = capsys.readouterr().out
    assert "headline judge strict (judges: strict, lenient)" in out
    assert "why answers from memory are wrong" in out
    run = load_run(run_dir)
    assert set(run.qa_answers["condition"]) == {"memory", "none"}
    assert set(run.qa_answers["user_id"]) == set(OWNERS)
    manifest = json.loads((run_dir / QA_MANIFEST).read_text(encoding="utf-8"))
    assert manifest["complete"] and manifest["spec"]["judges"] == ["strict", "lenient"]
    assert "qa_accuracy" in run.summary.columns
    # The summary on disk is rewritten with the QA metrics.
    assert "qa_accuracy" in (run_dir / "summary.csv").read_text(encoding="utf-8")


def test_gate_counts_qa_under_the_judge_it_is_told(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["qa", str(run_dir), "--answer-backend", "sim:careful", "--no-progress"]) == 0
    run = load_run(run_dir)
    answers = run.qa_answers
    mine = answers[(answers["condition"] == "memory") & (answers["kind"] == "answerable")]
    for judge in ("strict", "lenient"):
        # No verdict at all: an abstention, wrong without a judge.
        right = mine["verdicts"].map(lambda v, j=judge: (v.get(j) or {}).get("answer") is True)
        worst = min(right.groupby(mine["lane_id"]).mean())
        capsys.readouterr()
        flag = ["--min-qa-accuracy", str(worst)]
        assert main(["gate", str(run_dir), "--judge", judge, *flag]) == 0
        above = ["--min-qa-accuracy", str(min(1.0, worst + 0.001))]
        assert main(["gate", str(run_dir), "--judge", judge, *above]) == 1
        assert "FAILED" in capsys.readouterr().out
    assert main(["gate", str(run_dir), "--judge", "nobody", "--min-qa-accuracy", "0.1"]) == 2
    assert "no judge 'nobody'; judges: strict, lenient" in capsys.readouterr().err


def test_bad_qa_settings_exit_2_with_one_line(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["qa", str(run_dir), "--no-progress"]) == 2
    assert "no qa: key; give --answer-backend" in capsys.readouterr().err
    args = ["qa", str(run_dir), "--answer-backend", "sim:careful", "--no-progress"]
    assert main([*args, "--judges", "lenient,nobody"]) == 2
    err = capsys.readouterr().err
    assert "nobody" in err and err.count("\n") == 1
    assert main([*args, "--conditions", "memory,telepathy"]) == 2
    assert "conditions" in capsys.readouterr().err
    assert not (run_dir / QA_ANSWERS).exists()  # nothing written by a refused step


def test_report_has_a_memory_qa_section(run_dir: Path, tmp_path: Path) -> None:
    assert main(["qa", str(run_dir), "--answer-backend", "sim:careful", "--no-progress"]) == 0
    run = load_run(run_dir)
    paths = build_report([run], tmp_path / "report")
    markdown = Path(paths.markdown).read_text(encoding="utf-8")
    assert "## Memory QA" in markdown
    for title in ("Answerable questions per condition", "Judge band", "Why answers from memory"):
        assert title in markdown
    html = Path(paths.html).read_text(encoding="utf-8")
    assert html.count("<img alt='Why answers from memory are wrong'") == 1


def test_a_report_counts_the_answers_without_a_verdict_once_per_run(
    run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    args = ["qa", str(run_dir), "--answer-backend", "sim:careful", "--no-progress"]
    assert main([*args, "--judges", "strict,lenient"]) == 0
    run = load_run(run_dir)
    calls: list[tuple[str, ...]] = []

    def counting(answers: pd.DataFrame, judges: Sequence[str]) -> dict[str, int]:
        calls.append(tuple(judges))
        return error_counts(answers, judges)

    # Wherever a module holds the function (before or after it is imported by name).
    for name, module in list(sys.modules.items()):
        if name.startswith("memlab.") and getattr(module, "error_counts", None) is error_counts:
            monkeypatch.setattr(module, "error_counts", counting)
    try:
        build_report([run], tmp_path / "report")
    finally:
        # A module first imported while the double was in place took it by name; monkeypatch
        # restores only what it patched, so give that module the real function back.
        for module in list(sys.modules.values()):
            if getattr(module, "error_counts", None) is counting:
                module.error_counts = error_counts  # type: ignore[attr-defined]
    assert calls == [("strict", "lenient")]


def test_compare_says_which_qa_differences_hold_under_every_judge(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["qa", str(run_dir), "--answer-backend", "sim:careful", "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["compare", str(run_dir), "--resamples", "500"]) == 0
    out = capsys.readouterr().out
    assert "memory QA under every judge" in out
    tail = out.split("memory QA under every judge")[1]
    assert "verdict:strict" in tail and "verdict:lenient" in tail
    assert "qa_accuracy" in tail


class _Blind:
    """A matcher that finds no gold fact in any stored fact."""

    name = "blind"

    def covers(self, stored: str, gold: str) -> bool:
        return False


def test_rescore_scores_the_fates_of_answers_from_memory_again(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["qa", str(run_dir), "--answer-backend", "sim:careful", "--no-progress"]) == 0
    before = load_run(run_dir).qa_answers
    memory = before["condition"] == "memory"
    assert before.loc[memory, "fate"].isin(["injected", "not_injected"]).sum() > 10
    rescore(run_dir, matcher=_Blind())
    blind = load_run(run_dir)
    after = blind.qa_answers
    # No stored fact holds any evidence now: each fate is a loss (or no evidence).
    held = after.loc[memory, "evidence_fates"].map(
        lambda d: {f for f in (d or {}).values()} & {"injected", "not_injected"}
    )
    assert not held.map(bool).any()
    assert not after.loc[memory, "fate"].isin(["injected", "not_injected"]).any()
    assert blind.qa_manifest["matcher"] == "blind"
    assert cause_table(after, blind.judge)["answered_wrong"].sum() == 0
    kept = ["answer", "verdicts", "condition", "question_id"]
    assert after[kept].equals(before[kept])  # answers and verdicts are not touched
    # The default matcher again, from the command line: the fates the QA step gave.
    assert main(["rescore", str(run_dir)]) == 0
    again = load_run(run_dir).qa_answers
    assert list(again["fate"]) == list(before["fate"])
    assert list(again["evidence_fates"]) == list(before["evidence_fates"])


ANSWER_TEXT = "Known facts:\n{memory}\n\nQuestion: {question}\nAnswer in a few words."
PICKY_YAML = (
    "picky:\n"
    "  description: the same value, nothing else\n"
    "  template: |\n"
    "    Q: {question}\n"
    "    Reference: {gold_answer}\n"
    "    Answer: {answer}\n"
    '    Reply {{"label": "CORRECT"}} or {{"label": "WRONG"}}.\n'
)


def test_qa_takes_answer_and_judge_prompt_files(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    answer = tmp_path / "mine.txt"
    answer.write_text(ANSWER_TEXT, encoding="utf-8")
    judges = tmp_path / "judges.yaml"
    judges.write_text(PICKY_YAML, encoding="utf-8")
    cache = tmp_path / "cache"
    args = ["qa", str(run_dir), "--answer-backend", "scripted", "--no-progress"]
    # The scripted judge's replies name no verdict: allowed here, where prompt files are tested.
    args += ["--cache-dir", str(cache), "--conditions", "memory", "--max-judge-errors", "1"]
    files = ["--answer-prompt", str(answer), "--judge-prompts", str(judges)]
    assert main([*args, *files, "--judges", "picky,strict"]) == 0
    run = load_run(run_dir)
    identity = run.qa_manifest["identity"]
    # Content-addressed: the prompts are known by the hash of their text.
    assert identity["answer_prompt"] == {
        "name": "mine",
        "sha256": hashlib.sha256(ANSWER_TEXT.encode()).hexdigest(),
    }
    assert set(identity["judges"]) == {"picky", "strict"}
    assert run.judges == ["picky", "strict"]
    assert set(run.qa_answers["verdicts"].map(lambda v: tuple(sorted(v)))) == {("picky", "strict")}
    # The same files again: every answer from the cache; an edited answer prompt: none.
    assert main([*args, *files, "--judges", "picky,strict"]) == 0
    assert load_run(run_dir).qa_answers["cached"].all()
    answer.write_text(ANSWER_TEXT.replace("a few words", "one word"), encoding="utf-8")
    assert main([*args, *files, "--judges", "picky,strict"]) == 0
    edited = load_run(run_dir)
    assert not edited.qa_answers["cached"].any()
    assert (
        edited.qa_manifest["identity"]["answer_prompt"]["sha256"]
        != identity["answer_prompt"]["sha256"]
    )
    # A judge given as a file of one prompt is that prompt.
    assert main([*args, "--judges", f"{judges},lenient"]) == 0
    assert load_run(run_dir).judges == ["picky", "lenient"]


def test_a_bad_prompt_file_is_one_line_naming_file_line_and_field(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["qa", str(run_dir), "--answer-backend", "sim:careful", "--no-progress"]
    bad = tmp_path / "bad.txt"
    bad.write_text("Facts:\n{memory}\nAnswer it.\n", encoding="utf-8")  # no {question}
    assert main([*args, "--answer-prompt", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {bad}:1: template: invalid prompt template: missing the ")
    assert err.count("\n") == 1
    judges = tmp_path / "judges.yaml"
    judges.write_text(PICKY_YAML.replace("Answer: {answer}", "Answer: {reply}"), "utf-8")
    assert main([*args, "--judge-prompts", str(judges), "--judges", "picky"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {judges}:3: picky.template: invalid prompt template: ")
    assert "{reply}" in err and err.count("\n") == 1
    two = tmp_path / "two.yaml"
    two.write_text(PICKY_YAML + PICKY_YAML.replace("picky:", "fussy:"), "utf-8")
    assert main([*args, "--judges", str(two)]) == 2
    assert "defines 2 prompts (picky, fussy)" in capsys.readouterr().err
    missing = tmp_path / "nowhere" / "x.txt"
    assert main([*args, "--answer-prompts", str(missing)]) == 2
    assert str(missing) in capsys.readouterr().err
    assert not (run_dir / QA_ANSWERS).exists()  # nothing written by a refused step


def test_fates_use_the_matcher_that_scored_the_run_unless_told(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["rescore", str(run_dir), "--matcher", "lexical"]) == 0
    recorded = json.loads((run_dir / "environment.json").read_text(encoding="utf-8"))
    assert recorded["matcher"]["name"] == "lexical"
    capsys.readouterr()
    args = ["qa", str(run_dir), "--answer-backend", "sim:careful", "--no-progress"]
    assert main([*args, "--conditions", "memory"]) == 0
    assert "evidence matched by the lexical matcher" in capsys.readouterr().out
    run = load_run(run_dir)
    assert run.qa_manifest["matcher"] == "lexical"
    # The fates are those the lexical matcher gives (rescoring with it names it explicitly).
    fates = list(run.qa_answers["evidence_fates"])
    rescore(run_dir, matcher=LexicalMatcher())
    assert list(load_run(run_dir).qa_answers["evidence_fates"]) == fates
    # --matcher says otherwise.
    assert main([*args, "--conditions", "memory", "--matcher", "default-lexical"]) == 0
    assert "evidence matched by the default-lexical matcher" in capsys.readouterr().out
    assert load_run(run_dir).qa_manifest["matcher"] == "default-lexical"


def test_qa_on_a_max_sessions_run_leaves_out_later_questions_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A run that replayed the first sessions only (as the demo's real-model part does):
    questions asked after a later session are left out, counted and said, not a crash."""
    from memlab.datasets.loader import load_dataset

    kept_sessions = 3
    grid = Grid.from_mapping(
        {
            "name": "short",
            "owners": ["amara", "daniel"],
            "max_sessions": kept_sessions,
            "base": {"backend": "sim:careful"},
        }
    )
    data = resolve_dataset("personas")
    run = sweep(data, grid, runs_dir=tmp_path / "runs", progress=False)
    # Counted from the dataset: questions whose session index is past the cut.
    owners = [o for o in load_dataset(data) if o.user_id in {"amara", "daniel"}]
    late = [
        (o.user_id, q.id)
        for o in owners
        for q in o.questions
        if o.session_index(q.after_session) >= kept_sessions
    ]
    early = {
        (o.user_id, q.id)
        for o in owners
        for q in o.questions
        if o.session_index(q.after_session) < kept_sessions
    }
    assert late and early
    args = ["qa", str(run.path), "--answer-backend", "sim:careful", "--no-progress"]
    assert main([*args, "--conditions", "memory"]) == 0
    said = [r.getMessage() for r in caplog.records if "left out" in r.getMessage()]
    assert len(said) == 1
    assert f"{len(late)} question(s) left out" in said[0] and "max_sessions 3" in said[0]
    manifest = json.loads((run.path / QA_MANIFEST).read_text(encoding="utf-8"))
    assert manifest["questions_left_out"] == len(late)
    answers = load_run(run.path).qa_answers
    assert set(zip(answers["user_id"], answers["question_id"], strict=True)) == early
