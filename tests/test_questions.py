"""Questions in the dataset format: validation by file, line and field; stats; bundled personas."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from builders import write_owners

from memlab.cli.main import main
from memlab.datasets import Question, load_dataset, resolve_dataset
from memlab.datasets.loader import dataset_stats, validate_dataset
from memlab.datasets.models import Owner
from memlab.grids.grid import Grid
from memlab.sweeps.driver import sweep

REPO = Path(__file__).resolve().parents[1]
SMOKE = REPO / "datasets" / "smoke.jsonl"


def _ana() -> dict[str, Any]:
    """Smoke's first owner (three sessions; ana.job_logistics retracted in the third)."""
    line = SMOKE.read_text(encoding="utf-8").splitlines()[0]
    data: dict[str, Any] = json.loads(line)
    return data


def _question(**changes: Any) -> dict[str, Any]:
    question: dict[str, Any] = {
        "id": "q1",
        "question": "Where does Ana work now?",
        "answer": "At a fintech",
        "category": "changed",
        "kind": "answerable",
        "after_session": 2,
        "evidence": {"facts": ["ana.job_fintech"], "turns": [{"session": "ana-03", "message": 0}]},
    }
    question.update(changes)
    return {k: v for k, v in question.items() if v is not None}


def _errors(tmp_path: Path, *questions: dict[str, Any]) -> list[str]:
    owner = _ana()
    owner["questions"] = list(questions)
    path = write_owners(tmp_path / "q.jsonl", [owner])
    return [str(error) for error in validate_dataset(path)]


def test_a_valid_question_loads_with_its_session_resolved(tmp_path: Path) -> None:
    owner = _ana()
    owner["questions"] = [_question(), _question(id="q2", after_session="ana-01", answer="x")]
    owner["questions"][1]["evidence"] = {"facts": ["ana.job_logistics"]}
    (loaded,) = load_dataset(write_owners(tmp_path / "q.jsonl", [owner]))
    first, second = loaded.questions
    assert loaded.session_index(first.after_session) == 2
    assert loaded.session_index(second.after_session) == 0
    assert [q.id for q in loaded.questions_after(2)] == ["q1"]
    assert first.evidence.turns[0].message == 0
    assert not first.expects_abstention


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        (_question(answer=None), "questions[0].answer: missing required field"),
        (
            _question(kind="abstain"),
            "questions[0].answer: an abstain question has no answer",
        ),
        (_question(kind="maybe"), "questions[0].kind: 'maybe' is not one of"),
        (_question(after_session=True), "questions[0].after_session: must be a session index"),
        (_question(after_session=-1), "questions[0].after_session: must be a session index"),
        (_question(after_session=3), "questions[0].after_session: session index 3 is out of range"),
        (
            _question(after_session="ana-09"),
            "questions[0].after_session: no session has the thread",
        ),
        (_question(extra=1), "questions[0].extra: unknown field"),
        (_question(wrong_answer="at a FINTECH "), "questions[0].wrong_answer: is the same as"),
        (
            _question(evidence={"facts": ["nope"]}),
            "questions[0].evidence.facts[0]: unknown gold fact id 'nope'",
        ),
        (
            _question(after_session=0, evidence={"facts": ["ana.job_fintech"]}),
            "questions[0].evidence.facts[0]: gold fact 'ana.job_fintech' is revealed in "
            "sessions[2], after the question is asked (after sessions[0])",
        ),
        (
            _question(evidence={"facts": ["ana.job_logistics"]}),
            "questions[0].evidence.facts[0]: gold fact 'ana.job_logistics' is retracted by "
            "sessions[2] before the question is asked",
        ),
        (
            _question(evidence={"turns": [{"session": 5, "message": 0}]}),
            "questions[0].evidence.turns[0].session: session index 5 is out of range",
        ),
        (
            _question(after_session=0, evidence={"turns": [{"session": "ana-03", "message": 0}]}),
            "questions[0].evidence.turns[0].session: sessions[2] comes after the question",
        ),
        (
            _question(evidence={"turns": [{"session": 0, "message": 99}]}),
            "questions[0].evidence.turns[0].message: message index 99 is out of range",
        ),
        (
            _question(evidence={"turns": [{"session": 0}]}),
            "questions[0].evidence.turns[0].message: missing required field",
        ),
    ],
)
def test_question_errors_name_file_line_and_field(
    tmp_path: Path, question: dict[str, Any], expected: str
) -> None:
    errors = _errors(tmp_path, question)
    assert any(e.startswith(f"{tmp_path / 'q.jsonl'}:1: {expected}") for e in errors), errors


def test_a_retracted_fact_may_be_the_evidence_of_an_abstain_question(tmp_path: Path) -> None:
    abstain = _question(kind="abstain", answer=None, evidence={"facts": ["ana.job_logistics"]})
    assert _errors(tmp_path, abstain) == []


def test_duplicate_question_ids(tmp_path: Path) -> None:
    errors = _errors(tmp_path, _question(), _question(answer="y"))
    assert errors == [
        f"{tmp_path / 'q.jsonl'}:1: questions[1].id: duplicate question id 'q1' "
        "(already used by questions[0])"
    ]


def test_adversarial_questions_may_have_an_answer_and_a_trap() -> None:
    question = Question.model_validate(
        _question(kind="adversarial", answer="No", wrong_answer="Yes")
    )
    assert question.expects_abstention and question.wrong_answer == "Yes"


def test_an_owner_without_questions_is_written_as_before() -> None:
    owner = Owner.model_validate(_ana())
    assert "questions" not in json.loads(owner.to_json_line())
    with_questions = owner.model_copy(update={"questions": [Question.model_validate(_question())]})
    assert json.loads(with_questions.to_json_line())["questions"][0]["id"] == "q1"


def test_active_gold_facts_follow_reveals_and_retractions() -> None:
    owner = Owner.model_validate(_ana())
    before = {f.id for f in owner.active_gold_facts(1)}
    after = {f.id for f in owner.active_gold_facts(2)}
    assert "ana.job_logistics" in before and "ana.job_logistics" not in after
    assert "ana.job_fintech" in after and "ana.job_fintech" not in before


def test_stats_and_cli_count_questions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    owner = _ana()
    owner["questions"] = [
        _question(),
        _question(id="q2", kind="abstain", answer=None, evidence=None, category="never-said"),
    ]
    path = write_owners(tmp_path / "q.jsonl", [owner])
    stats = dataset_stats(load_dataset(path))
    assert stats["questions"] == 2
    assert stats["questions_by_kind"] == {"answerable": 1, "abstain": 1, "adversarial": 0}
    assert stats["questions_by_category"] == {"changed": 1, "never-said": 1}
    assert stats["questions_without_evidence"] == 1
    assert main(["datasets", "stats", str(path)]) == 0
    rows = {
        line.rsplit(None, 1)[0].strip(): line.split()[-1]
        for line in capsys.readouterr().out.splitlines()
        if line.strip()
    }
    assert rows["questions"] == "2"
    assert rows["category never-said"] == "1"
    bad = copy.deepcopy(owner)
    bad["questions"][0]["after_session"] = "ana-09"
    write_owners(path, [bad])
    assert main(["datasets", "validate", str(path)]) == 1
    assert f"{path}:1: questions[0].after_session: no session" in capsys.readouterr().out


# ---------------------------------------------------------------------- bundled personas


@pytest.fixture(scope="module")
def personas() -> list[Owner]:
    return load_dataset(resolve_dataset("personas"))


def test_personas_questions_cover_every_owner_and_kind(personas: list[Owner]) -> None:
    assert all(len(owner.questions) >= 4 for owner in personas)
    questions = [q for owner in personas for q in owner.questions]
    categories = Counter(q.category for q in questions)
    assert set(categories) == {"current", "changed", "never-said", "preference", "injected"}
    assert all(categories[c] >= 5 for c in categories)
    kinds = Counter(q.kind for q in questions)
    assert kinds["abstain"] == categories["never-said"]
    assert kinds["adversarial"] == categories["injected"]
    texts = [q.question for q in questions]
    assert len(texts) == len(set(texts))  # the simulated model tells questions apart by text


def test_personas_changed_questions_cite_a_fact_that_replaced_a_retracted_one(
    personas: list[Owner],
) -> None:
    for owner in personas:
        for question in owner.questions:
            asked = owner.session_index(question.after_session)
            active = {f.id for f in owner.active_gold_facts(asked)}
            assert set(question.evidence.facts) <= active, question.id
            if question.category != "changed":
                continue
            (fact_id,) = question.evidence.facts
            revealed_in = next(
                i for i, s in enumerate(owner.sessions) if fact_id in {f.id for f in s.labels.facts}
            )
            # The session revealing the new value retracts the old one, which the question
            # offers as its wrong answer.
            assert owner.sessions[revealed_in].labels.retracts, question.id
            assert question.wrong_answer, question.id


def test_personas_never_said_and_injected_questions(personas: list[Owner]) -> None:
    for owner in personas:
        for question in owner.questions:
            if question.kind == "abstain":
                assert question.answer is None and question.evidence.is_empty()
            if question.kind == "adversarial":
                (turn,) = question.evidence.turns
                session = owner.sessions[owner.session_index(turn.session)]
                assert "injection" in session.labels.tags
                said = session.messages[turn.message].text.casefold()
                assert any(s.casefold() in said for s in session.labels.must_not_store)


def test_personas_jsonl_is_built_from_its_source() -> None:
    build = REPO / "datasets" / "personas_src" / "build.py"
    done = subprocess.run(
        [sys.executable, str(build), "--check"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr


def test_questions_do_not_change_a_replay(tmp_path: Path) -> None:
    owner = _ana()
    dataset = write_owners(tmp_path / "d.jsonl", [owner])
    grid = Grid.from_mapping({"name": "q", "base": {"backend": "sim:careful"}})
    sweep(dataset, grid, runs_dir=tmp_path / "runs", progress=False)
    owner["questions"] = [_question()]
    write_owners(dataset, [owner])
    rerun = sweep(dataset, grid, runs_dir=tmp_path / "runs", progress=False)
    assert rerun.lane_status.iloc[0][["reused", "replayed"]].tolist() == [1, 0]


LONG = 1001  # one character over the bound of docs/dataset-format.md


@pytest.mark.parametrize(
    ("question", "field"),
    [
        (_question(question="W" * LONG), "question"),
        (_question(answer="a" * LONG), "answer"),
        (_question(wrong_answer="b" * LONG), "wrong_answer"),
        (
            _question(audit={"error_type": "X", "original_answer": "c" * LONG}),
            "audit.original_answer",
        ),
    ],
)
def test_questions_and_answers_have_a_length_bound(
    tmp_path: Path, question: dict[str, Any], field: str
) -> None:
    """A question or a reference answer longer than 1000 characters is one error naming the
    file, line and field (the scoring of every answer costs time in proportion to them)."""
    (error,) = _errors(tmp_path, question)
    assert error == (
        f"{tmp_path / 'q.jsonl'}:1: questions[0].{field}: is {LONG} characters; at most 1000 "
        "are allowed (shorten it)"
    )


def test_the_bound_holds_for_questions_built_in_code_and_a_megabyte_answer_is_quick(
    tmp_path: Path,
) -> None:
    from pydantic import ValidationError

    from memlab.datasets.questions import MAX_ANSWER_CHARS, MAX_QUESTION_CHARS

    with pytest.raises(ValidationError, match="at most 1000 characters"):
        Question.model_validate({**_question(), "answer": "a" * (MAX_ANSWER_CHARS + 1)})
    Question.model_validate({**_question(), "question": "W" * MAX_QUESTION_CHARS})
    (error,) = _errors(tmp_path, _question(answer="word " * 2_000_000))
    assert "questions[0].answer: is 10000000 characters" in error


def test_the_schema_file_repeats_the_length_bounds() -> None:
    from memlab.datasets.loader import dataset_schema
    from memlab.datasets.questions import MAX_ANSWER_CHARS, MAX_QUESTION_CHARS

    defs = dataset_schema()["$defs"]
    assert defs["questionText"]["maxLength"] == MAX_QUESTION_CHARS
    assert defs["answerText"]["maxLength"] == MAX_ANSWER_CHARS
    audit = defs["question"]["properties"]["audit"]["properties"]["original_answer"]
    assert audit["maxLength"] == MAX_ANSWER_CHARS


def test_questions_after_sessions_cut_from_the_owner_are_asked_nowhere(
    personas: list[Owner],
) -> None:
    """``--max-sessions`` cuts sessions, not questions: a question after a cut session is
    asked after none of the sessions left (``memlab qa`` then asks the others)."""
    owner = next(o for o in personas if len(o.sessions) > 3)
    thread_ids = [s.thread_id for s in owner.sessions[:3]]
    kept = [
        q.id
        for q in owner.questions
        if q.after_session in thread_ids or q.after_session in range(3)
    ]
    assert 0 < len(kept) < len(owner.questions)
    cut = owner.model_copy(update={"sessions": owner.sessions[:3]})
    asked = [q.id for index in range(3) for q in cut.questions_after(index)]
    assert sorted(asked) == sorted(kept)
