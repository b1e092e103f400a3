"""Every question of a QA step is accounted for.

- Two questions with the same text after the same session (LoCoMo asks some twice, once
  answerable and once adversarial) share one answer request, and each is graded against its
  own answer key: the judge is asked about both references.
- A failed answer call stays in the accuracy table: it is a question, counted wrong, and the
  table says how many failed.
- An abstention on an answerable question is wrong without a judge.

The backend here is a plain function of the prompt (an instrument of this test): it answers
every question with one text and judges CORRECT exactly when the reference appears in the
answer, so each expected verdict follows from the references written below.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from memlab.cli.main import main
from memlab.core.pipeline.llm import BackendError, Completion, CompletionRequest
from memlab.datasets import resolve_dataset
from memlab.grids.grid import Grid
from memlab.grids.qa_spec import QASpec
from memlab.postrun.qa_step import IncompleteQAError, JudgeErrorsError, add_qa
from memlab.qa.qa_prompts import ABSTAIN_REFERENCE, judge_prompts
from memlab.reporting.qa.qa_section import qa_markdown, qa_section, qa_text
from memlab.scoring.qa.qa_metrics import accuracy_table
from memlab.scoring.qa.qa_verdicts import error_counts
from memlab.sweeps.driver import sweep

STRICT = judge_prompts().get("strict")
OWNER = "amara"


class _Agent:
    """Answers ``answer`` to every question (``abstain``: to those whose text contains it,
    "I don't know"; ``fail``: to those, a refused connection) and judges CORRECT when the
    reference appears in the answer; records what each judge request graded."""

    name = "agent"
    model = "agent-model"

    def __init__(
        self, answer: str, *, abstain: str = "", fail: str = "", unreadable: str = ""
    ) -> None:
        self.answer, self.abstain, self.fail = answer, abstain, fail
        self.unreadable = unreadable
        self.graded: list[tuple[str, str]] = []
        self.asked: list[str] = []
        self._lock = threading.Lock()

    def complete(self, request: CompletionRequest) -> Completion:
        prompt = "\n".join(str(m.get("content", "")) for m in request.messages)
        graded = STRICT.parse(prompt)
        if graded is not None:
            with self._lock:
                self.graded.append((graded["question"], graded["gold_answer"]))
            if self.unreadable and self.unreadable in graded["question"]:
                return Completion("It could be CORRECT or WRONG.")
            right = graded["gold_answer"] in graded["answer"]
            return Completion(json.dumps({"label": "CORRECT" if right else "WRONG"}))
        with self._lock:
            self.asked.append(prompt)
        if self.fail and self.fail in prompt:
            raise BackendError("connection refused")
        if self.abstain and self.abstain in prompt:
            return Completion("I don't know.")
        return Completion(self.answer)


def _dataset(tmp_path: Path) -> tuple[Path, dict[str, Any], dict[str, Any]]:
    """Personas' first owner with its first answerable question asked a second time, as an
    adversarial question (same text, same session, no answer)."""
    source = resolve_dataset("personas")
    lines = [json.loads(line) for line in Path(source).read_text(encoding="utf-8").splitlines()]
    owner = next(line for line in lines if line["user_id"] == OWNER)
    first = next(q for q in owner["questions"] if q["kind"] == "answerable")
    again = {
        "id": f"{first['id']}-again",
        "question": first["question"],
        "category": "adversarial",
        "kind": "adversarial",
        "after_session": first["after_session"],
    }
    owner["questions"].append(again)
    path = tmp_path / "twice.jsonl"
    path.write_text(json.dumps(owner) + "\n", encoding="utf-8")
    return path, first, again


@pytest.fixture
def swept(tmp_path: Path) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    path, first, again = _dataset(tmp_path)
    grid = Grid.from_mapping({"name": "twice", "base": {"backend": "sim:careful"}})
    run = sweep(path, grid, runs_dir=tmp_path / "runs", progress=False)
    return run, first, again


def test_a_question_asked_twice_is_graded_against_each_key(swept: Any) -> None:
    run, first, again = swept
    agent = _Agent(f"It is {first['answer']}.")
    spec = QASpec(answer_backend="agent", judges=["strict"], conditions=["memory"])
    done = add_qa(run, spec, backend_factory=lambda _: agent, progress=False, max_workers=4)
    rows = done.qa_answers.set_index("question_id")
    # One answer request for the two questions (the same prompt), two gradings of it.
    prompts = [p for p in agent.asked if first["question"] in p]
    assert len(prompts) == len(set(prompts)) == 1
    assert (first["question"], first["answer"]) in agent.graded
    assert (first["question"], ABSTAIN_REFERENCE) in agent.graded
    assert rows.loc[first["id"], "answer"] == rows.loc[again["id"], "answer"]
    assert rows.loc[first["id"], "verdicts"] == {"strict": {"answer": True}}
    assert rows.loc[again["id"], "verdicts"] == {"strict": {"answer": False}}


def test_a_failed_answer_stays_a_wrong_answer_in_the_table(swept: Any) -> None:
    run, first, _ = swept
    agent = _Agent(f"It is {first['answer']}.", fail=first["question"])
    spec = QASpec(answer_backend="agent", judges=["strict"], conditions=["memory"])
    with pytest.raises(IncompleteQAError) as raised:
        add_qa(run, spec, backend_factory=lambda _: agent, progress=False, max_workers=4)
    answers = raised.value.run.qa_answers
    answerable = answers[answers["kind"] == "answerable"]
    failed = int(answerable["error"].notna().sum())
    assert failed == 1  # the one question whose text the agent refuses
    (row,) = accuracy_table(answers, judges=["strict"]).to_dict("records")
    # Every answerable question is in the table, the failed one counted wrong and counted.
    assert row["questions"] == len(answerable)
    assert row["answer_errors"] == failed
    golds = _gold(answerable, run)
    right = sum(
        isinstance(answer, str) and gold in answer
        for gold, answer in zip(golds, answerable["answer"], strict=True)
    )
    assert row["accuracy"] == pytest.approx(right / len(answerable))
    counts = error_counts(answers, ["strict"])
    assert counts["answer_errors"] == int(answers["error"].notna().sum()) >= 1


def test_an_abstention_on_an_answerable_question_is_not_sent_to_a_judge(swept: Any) -> None:
    run, first, _ = swept
    agent = _Agent(f"It is {first['answer']}.", abstain=first["question"])
    spec = QASpec(answer_backend="agent", judges=["strict"], conditions=["memory"])
    done = add_qa(run, spec, backend_factory=lambda _: agent, progress=False, max_workers=4)
    rows = done.qa_answers.set_index("question_id")
    assert rows.loc[first["id"], "answer"] == "I don't know."
    # The answerable question's abstention: no judge asked, wrong; the adversarial one: judged.
    assert (first["question"], first["answer"]) not in agent.graded
    assert (first["question"], ABSTAIN_REFERENCE) in agent.graded
    assert rows.loc[first["id"], "verdicts"] == {}
    table = accuracy_table(done.qa_answers, judges=["strict"])
    others = done.qa_answers[
        (done.qa_answers["kind"] == "answerable") & (done.qa_answers["question_id"] != first["id"])
    ]
    (row,) = table.to_dict("records")
    assert row["questions"] == len(others) + 1
    assert row["judge_errors"] == 0 and row["answer_errors"] == 0
    golds = _gold(others, run)
    expected = sum(gold in str(a) for gold, a in zip(golds, others["answer"], strict=True))
    assert row["accuracy"] == pytest.approx(expected / (len(others) + 1))


def _gold(answers: Any, run: Any) -> list[str]:
    """The file's answer of each row's question, read from the dataset file."""
    lines = Path(run.dataset_path).read_text(encoding="utf-8").splitlines()
    by_id = {q["id"]: q.get("answer") for line in lines for q in json.loads(line)["questions"]}
    return [str(by_id[q]) for q in answers["question_id"]]


def test_unreadable_verdicts_fail_the_step_and_the_gate_unless_allowed(
    swept: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    run, first, again = swept
    agent = _Agent(f"It is {first['answer']}.", unreadable=first["question"])
    spec = QASpec(answer_backend="agent", judges=["strict"], conditions=["memory"])
    with pytest.raises(JudgeErrorsError) as raised:
        add_qa(run, spec, backend_factory=lambda _: agent, progress=False, max_workers=4)
    answers = raised.value.run.qa_answers
    # The two questions with that text: neither has a verdict, both are counted.
    assert raised.value.counts["judge_errors:strict"] == 2
    assert (
        answers.set_index("question_id")
        .loc[[first["id"], again["id"]], "verdicts"]
        .map(lambda v: v["strict"]["answer"])
        .isna()
        .all()
    )
    allowed = add_qa(
        run, spec, backend_factory=lambda _: agent, progress=False, max_judge_errors=1.0
    )
    # The rate counts every kind of question: the two without a verdict among all asked.
    share = 2 / len(allowed.qa_answers)
    capsys.readouterr()
    assert main(["gate", str(run.path), "--max-judge-errors", f"{share / 2}"]) == 1
    assert "FAILED" in capsys.readouterr().out
    assert main(["gate", str(run.path), "--max-judge-errors", f"{share}"]) == 0


def test_the_qa_section_names_who_answered_and_splits_real_from_simulated(
    tmp_path: Path,
) -> None:
    path, first, _ = _dataset(tmp_path)
    grid = Grid.from_mapping({"name": "mixed", "axes": {"backend": ["scripted", "sim:careful"]}})
    run = sweep(path, grid, runs_dir=tmp_path / "runs", progress=False)
    agent = _Agent(f"It is {first['answer']}.")
    spec = QASpec(answer_backend="agent", judges=["strict"], conditions=["memory"])
    done = add_qa(run, spec, backend_factory=lambda _: agent, progress=False)
    text = qa_text(done)
    assert "answered by agent (agent-model), judged by agent (agent-model);" in text
    section = qa_section([done])
    assert section is not None
    lines = qa_markdown(section)
    # One table per kind of lane: the scripted lane is real, the other simulated.
    for title in ("Answerable questions per condition", "Why answers from memory are wrong"):
        assert any(line.endswith(f"{title} (real model)") for line in lines), title
        assert any(line.endswith(f"{title} ([simulated])") for line in lines), title


def test_a_gate_on_a_run_with_unreadable_verdicts_says_how_many_and_how_counted(
    swept: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    run, first, _ = swept
    agent = _Agent(f"It is {first['answer']}.", unreadable=first["question"])
    spec = QASpec(answer_backend="agent", judges=["strict"], conditions=["memory"])
    done = add_qa(run, spec, backend_factory=lambda _: agent, progress=False, max_judge_errors=1.0)
    capsys.readouterr()
    # A threshold every run meets: the gate passes, but not silently about the two answers
    # (the question asked twice) its judge could not read, which count as wrong.
    assert main(["gate", str(run.path), "--min-qa-accuracy", "0"]) == 0
    out = capsys.readouterr().out
    line = (
        f"WARNING {run.name}: 2 of {len(done.qa_answers)} answers have no verdict from judge "
        "strict (its call failed or its reply named no single verdict): each counts as a "
        "wrong answer"
    )
    assert line in out, out
    assert out.splitlines()[-1] == "gate passed"


def test_compare_calls_no_judged_difference_robust_when_the_judges_could_not_be_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, first, _ = _dataset(tmp_path)
    grid = Grid.from_mapping(
        {"name": "two", "base": {"backend": "sim:careful"}, "axes": {"max_facts": [100, 50]}}
    )
    run = sweep(path, grid, runs_dir=tmp_path / "runs", progress=False)
    # Every question holds a space: no judge reply names a single verdict, far above the
    # share of unreadable verdicts a comparison tolerates.
    agent = _Agent(f"It is {first['answer']}.", unreadable=" ")
    spec = QASpec(answer_backend="agent", judges=["strict", "lenient"], conditions=["memory"])
    add_qa(run, spec, backend_factory=lambda _: agent, progress=False, max_judge_errors=1.0)
    capsys.readouterr()
    assert main(["compare", str(run.path), "--wide", "--resamples", "200"]) == 0
    out = capsys.readouterr().out
    judged = out[out.index("memory QA under every judge") :].splitlines()[2:]
    assert len(judged) == 3, judged  # qa_accuracy, abstain and adversarial accuracy
    assert all("inconclusive: " in row and "judge verdicts unreadable" in row for row in judged), (
        judged
    )
