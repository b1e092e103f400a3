"""``memlab run --qa`` (one configuration with memory QA, no grid file) and the QA token
limits of ``memlab qa``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memlab.cli.main import main
from memlab.datasets import load_dataset, resolve_dataset
from memlab.runs.run import load_run
from memlab.runs.rundir import QA_MANIFEST

RUN = ["run", "personas", "--backend", "sim:careful", "--max-owners", "2", "--no-progress"]


def owners_and_questions(count: int) -> tuple[list[str], int]:
    owners = load_dataset(resolve_dataset("personas"))[:count]
    return [o.user_id for o in owners], sum(len(o.questions) for o in owners)


def test_run_with_qa_asks_every_question_answered_by_the_runs_backend(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [*RUN, "--runs-dir", str(tmp_path), "--name", "qa", "--qa", "--judges", "strict"]
    assert main([*args, "--conditions", "memory,none", "--answer-max-tokens", "40"]) == 0
    assert "why answers from memory are wrong" in capsys.readouterr().out
    run = load_run(tmp_path / "qa")
    answers = run.qa_answers
    users, questions = owners_and_questions(2)
    assert set(answers["user_id"]) == set(users)
    # Every question under both conditions, once per lane (one lane).
    assert len(answers) == 2 * questions
    assert set(answers["condition"]) == {"memory", "none"}
    spec = json.loads((tmp_path / "qa" / QA_MANIFEST).read_text(encoding="utf-8"))["spec"]
    assert spec["answer_backend"] == "sim:careful"  # the run's backend, not given again
    assert spec["judges"] == ["strict"] and spec["max_tokens"] == 40
    assert run.grid.qa is not None and run.grid.qa.max_tokens == 40


def test_run_without_qa_has_no_answers_and_qa_options_need_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*RUN, "--runs-dir", str(tmp_path), "--name", "plain"]) == 0
    assert load_run(tmp_path / "plain").qa_manifest == {}
    capsys.readouterr()
    assert main([*RUN, "--runs-dir", str(tmp_path), "--name", "x", "--judges", "strict"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--judges" in err and "add --qa" in err
    assert not (tmp_path / "x").exists()  # refused before anything was replayed


def test_qa_takes_token_limits_and_refuses_bad_ones_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*RUN, "--runs-dir", str(tmp_path), "--name", "r"]) == 0
    run_dir = str(tmp_path / "r")
    qa = ["qa", run_dir, "--answer-backend", "sim:careful", "--no-progress"]
    for bad in (["--max-tokens", "0"], ["--max-tokens", "8193"], ["--judge-max-tokens", "x"]):
        capsys.readouterr()
        assert main([*qa, *bad]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and bad[0] in err and "Traceback" not in err
    assert not (tmp_path / "r" / QA_MANIFEST).exists()
    assert main([*qa, "--max-tokens", "17", "--judge-max-tokens", "9"]) == 0
    spec = json.loads((tmp_path / "r" / QA_MANIFEST).read_text(encoding="utf-8"))["spec"]
    assert (spec["max_tokens"], spec["judge_max_tokens"]) == (17, 9)
