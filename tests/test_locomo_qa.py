"""LoCoMo's questions and the audited answer key.

The first tests use small hand-written samples; the others read the shared copy of LoCoMo and
of its answer-key audit (CC BY-NC 4.0, never committed) and are skipped without it. Expected
counts are computed here from the JSON files themselves, not through the importer.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from builders import locomo_sample

from memlab.cli.main import main
from memlab.datasets.locomo import (
    LocomoFormatError,
    convert_conversation,
    convert_locomo,
    import_locomo,
)
from memlab.datasets.locomo_qa import LocomoAuditError
from memlab.datasets.models import Owner
from memlab.datasets.questions import Question

SHARED = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "locomo"
LOCOMO = SHARED / "locomo10.json"
AUDIT = SHARED / "audit" / "errors.json"

needs_locomo = pytest.mark.skipif(
    not (LOCOMO.is_file() and AUDIT.is_file()),
    reason=f"LoCoMo and its answer-key audit not available under {SHARED} (CC BY-NC 4.0, "
    "never committed); copy data/locomo10.json of github.com/snap-research/LoCoMo and "
    "errors.json of github.com/dial481/locomo-audit (into audit/) there to run these tests",
)

# LoCoMo's category numbers, as its evaluation code and the published tables use them.
CATEGORY_NAMES = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}


def _sample(*qa: dict[str, Any]) -> dict[str, Any]:
    sample = locomo_sample()
    sample["qa"] = list(qa)
    return sample


def _by_id(owners: list[Owner]) -> dict[str, tuple[str, Question]]:
    return {q.id: (o.user_id, q) for o in owners for q in o.questions}


def test_questions_go_to_the_owner_they_are_about() -> None:
    owners = convert_conversation(
        _sample(
            {
                "question": "Where did Ann move?",
                "answer": "Lisbon",
                "evidence": ["D1:1"],
                "category": 4,
            },
            {
                "question": "What did Bob say?",
                "answer": "Nice",
                "evidence": ["D1:02"],
                "category": 1,
            },
            {
                "question": "Who moved?",
                "answer": "Ann",
                "evidence": ["D:1:1", "D9:9", "D"],
                "category": 2,
            },
            {
                "question": "Where did Bob move?",
                "adversarial_answer": "Lisbon",
                "evidence": ["D1:1"],
                "category": 5,
            },
            {"question": "When did Ann move?", "answer": 2024, "evidence": ["D1:1"], "category": 2},
            {
                "question": "Did Ann and Bob talk?",
                "answer": "Yes",
                "evidence": ["D1:2"],
                "category": 3,
            },
        )
    )
    questions = _by_id(owners)
    assert {qid: user for qid, (user, _) in questions.items()} == {
        "conv-1/qa0": "conv-1.Ann",  # names Ann
        "conv-1/qa1": "conv-1.Bob",  # names Bob
        "conv-1/qa2": "conv-1.Ann",  # names nobody: Ann said its evidence
        "conv-1/qa3": "conv-1.Bob",  # adversarial: asked of the one it names
        "conv-1/qa4": "conv-1.Ann",
        "conv-1/qa5": "conv-1.Bob",  # names both: Bob said its evidence
    }
    ann_move = questions["conv-1/qa0"][1]
    assert ann_move.category == "single-hop" and ann_move.kind == "answerable"
    assert ann_move.after_session == "conv-1/session_1"
    assert ann_move.evidence.facts == ["conv-1/Ann/s1/o1"]
    assert [(t.session, t.message) for t in ann_move.evidence.turns] == [("conv-1/session_1", 0)]
    bob_said = questions["conv-1/qa1"][1]
    assert [t.message for t in bob_said.evidence.turns] == [1]  # D1:02 is D1:2
    assert bob_said.evidence.facts == []  # Bob has no observation citing it
    who = questions["conv-1/qa2"][1]
    assert [t.message for t in who.evidence.turns] == [0]  # D:1:1 read, D9:9 and D dropped
    trap = questions["conv-1/qa3"][1]
    assert (trap.kind, trap.answer, trap.wrong_answer) == ("adversarial", None, "Lisbon")
    assert questions["conv-1/qa4"][1].answer == "2024"
    for owner in owners:
        assert owner.consistency_problems() == []


@pytest.mark.parametrize(
    ("item", "problem"),
    [
        ({"question": "Q?", "answer": "A", "evidence": [], "category": 7}, r"qa\[0\]\.category"),
        (
            {"question": "Q?", "answer": "A", "evidence": "D1:1", "category": 4},
            r"qa\[0\]\.evidence",
        ),
        ({"question": "Q?", "evidence": [], "category": 4}, r"qa\[0\]\.answer"),
        ({"answer": "A", "evidence": [], "category": 4}, r"qa\[0\]: expected an object"),
    ],
)
def test_qa_items_of_another_shape_are_refused(item: dict[str, Any], problem: str) -> None:
    with pytest.raises(LocomoFormatError, match=problem):
        convert_conversation(_sample(item))


def _write(
    tmp_path: Path, sample: dict[str, Any], audit: list[dict[str, Any]]
) -> tuple[Path, Path]:
    source = tmp_path / "locomo10.json"
    source.write_text(json.dumps([sample]), encoding="utf-8")
    (tmp_path / "audit").mkdir()
    path = tmp_path / "audit" / "errors.json"
    path.write_text(json.dumps(audit), encoding="utf-8")
    return source, path


def _finding(
    n: int, question: str, error_type: str, answer: str, evidence: list[str]
) -> dict[str, Any]:
    return {
        "question_id": f"locomo_0_qa{n}",
        "question": question,
        "golden_answer": "?",
        "category": 4,
        "error_type": error_type,
        "cited_evidence": [],
        "correct_evidence": evidence,
        "reasoning": "...",
        "correct_answer": answer,
    }


SMALL_QA = (
    {"question": "Where did Ann move?", "answer": "Lisbon", "evidence": ["D1:2"], "category": 4},
    {"question": "What did Bob say?", "answer": "Nice", "evidence": ["D1:1"], "category": 4},
    {"question": "Did Ann move?", "answer": "Yes", "evidence": ["D1:1"], "category": 4},
)


def test_the_audited_key_changes_answers_unless_only_the_citation_was_wrong(
    tmp_path: Path,
) -> None:
    audit = [
        _finding(0, "Where did Ann move?", "HALLUCINATION", "Porto", ["D1:1"]),
        _finding(1, "What did Bob say?", "WRONG_CITATION", "Nice (answer is correct)", ["D1:2"]),
    ]
    source, _ = _write(tmp_path, _sample(*SMALL_QA), audit)
    summary = import_locomo(source, tmp_path / "out.jsonl", answer_key="audited")
    assert (summary.questions, summary.audited, summary.answers_changed) == (3, 2, 1)
    assert "answer key audited: 2 questions audited, 1 answers changed" in str(summary)
    questions = _by_id(convert_locomo(source, answer_key="audited"))
    moved = questions["conv-1/qa0"][1]
    assert moved.answer == "Porto" and moved.answer_changed()
    assert moved.audit is not None and moved.audit.error_type == "HALLUCINATION"
    assert moved.audit.original_answer == "Lisbon"
    assert moved.audit.original_evidence is not None
    assert [t.message for t in moved.audit.original_evidence.turns] == [1]
    assert [t.message for t in moved.evidence.turns] == [0]
    said = questions["conv-1/qa1"][1]
    assert said.answer == "Nice" and not said.answer_changed()  # the remark is not the answer
    assert [t.message for t in said.evidence.turns] == [1]
    untouched = questions["conv-1/qa2"][1]
    assert untouched.audit is None and untouched.answer == "Yes"
    original = _by_id(convert_locomo(source))
    assert all(q.audit is None for _, q in original.values())
    assert original["conv-1/qa0"][1].answer == "Lisbon"


@pytest.mark.parametrize(
    ("audit", "problem"),
    [
        ([_finding(0, "Where did Ann go?", "HALLUCINATION", "Porto", [])], "another version"),
        ([_finding(9, "Where did Ann move?", "HALLUCINATION", "Porto", [])], "another version"),
        ([{"question_id": "qa0"}], r"\[0\]\.question: expected a non-empty string"),
        ([{**_finding(0, "Q", "X", "A", []), "question_id": "qa0"}], "locomo_<conversation>"),
        ([{**_finding(0, "Q", "X", "A", []), "correct_evidence": "D1:1"}], "correct_evidence"),
        ([_finding(0, "Q", "X", "A", []), _finding(0, "Q", "X", "A", [])], "audited twice"),
        ({"not": "a list"}, "expected a JSON list"),
    ],
)
def test_an_audit_of_another_shape_or_source_is_refused(
    tmp_path: Path, audit: Any, problem: str
) -> None:
    source, _ = _write(tmp_path, _sample(*SMALL_QA), audit)
    with pytest.raises(LocomoAuditError, match=problem):
        convert_locomo(source, answer_key="audited")


def test_cli_answer_key_errors_are_one_line_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, _ = _write(tmp_path, _sample(*SMALL_QA), [])
    out = tmp_path / "out.jsonl"
    missing = ["--answer-key", "audited", "--audit", str(tmp_path / "nope.json")]
    assert main(["datasets", "import-locomo", str(source), "--out", str(out), *missing]) == 2
    err = capsys.readouterr().err.strip()
    assert "answer-key audit not found" in err and "\n" not in err
    args = ["datasets", "import-locomo", str(source), "--out", str(out), "--answer-key", "audited"]
    assert main(args) == 0
    assert "3 questions (answer key audited: 0 questions audited" in capsys.readouterr().out


# ---------------------------------------------------------------------- the shared files


@pytest.fixture(scope="module")
def raw() -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(LOCOMO.read_text(encoding="utf-8"))
    return data


@pytest.fixture(scope="module")
def findings() -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(AUDIT.read_text(encoding="utf-8"))
    return data


@pytest.fixture(scope="module")
def original() -> dict[str, tuple[str, Question]]:
    return _by_id(convert_locomo(LOCOMO))


@pytest.fixture(scope="module")
def audited() -> dict[str, tuple[str, Question]]:
    return _by_id(convert_locomo(LOCOMO, answer_key="audited", audit=AUDIT))


def _item(raw: list[dict[str, Any]], question_id: str) -> tuple[int, dict[str, Any]]:
    sample_id, _, n = question_id.rpartition("/qa")
    index = next(i for i, s in enumerate(raw) if s["sample_id"] == sample_id)
    return index, raw[index]["qa"][int(n)]


def _turns_named(
    raw: list[dict[str, Any]], index: int, evidence: list[str]
) -> tuple[list[tuple[str, int]], int]:
    """The (session thread id, message index) of each dialogue id, and how many name none."""
    conv = raw[index]["conversation"]
    found: list[tuple[str, int]] = []
    missing = 0
    for session, turn in re.findall(r"D:?(\d+):0*(\d+)", " ".join(evidence)):
        dia_id = f"D{int(session)}:{int(turn)}"
        turns = conv.get(f"session_{int(session)}") or []
        hits = [k for k, t in enumerate(turns) if t["dia_id"] == dia_id]
        if hits:
            found.append((f"{raw[index]['sample_id']}/session_{int(session)}", hits[0]))
        else:
            missing += 1
    return list(dict.fromkeys(found)), missing


def _audited_id(raw: list[dict[str, Any]], finding: dict[str, Any]) -> str:
    match = re.fullmatch(r"locomo_(\d+)_qa(\d+)", finding["question_id"])
    assert match is not None
    return f"{raw[int(match.group(1))]['sample_id']}/qa{match.group(2)}"


@needs_locomo
def test_every_qa_item_is_imported_with_its_category(
    raw: list[dict[str, Any]], original: dict[str, tuple[str, Question]]
) -> None:
    items = [item for sample in raw for item in sample["qa"]]
    assert len(items) == len(original) == 1986
    expected = Counter(CATEGORY_NAMES[item["category"]] for item in items)
    assert Counter(q.category for _, q in original.values()) == expected
    assert Counter(q.kind for _, q in original.values()) == {
        "answerable": sum(1 for item in items if item["category"] != 5),
        "adversarial": sum(1 for item in items if item["category"] == 5),
    }
    for question_id, (user_id, question) in original.items():
        index, item = _item(raw, question_id)
        assert question.question == item["question"].strip()
        if item["category"] == 5:
            assert question.wrong_answer == str(item["adversarial_answer"]).strip()
        else:
            assert question.answer == str(item["answer"]).strip()
        conv = raw[index]["conversation"]
        speakers = (conv["speaker_a"], conv["speaker_b"])
        named = [s for s in speakers if re.search(rf"\b{re.escape(s)}\b", question.question)]
        if len(named) == 1:
            assert user_id == f"{raw[index]['sample_id']}.{named[0]}", question_id
        sessions = [int(k[8:]) for k, v in conv.items() if re.fullmatch(r"session_\d+", k) and v]
        assert question.after_session == f"{raw[index]['sample_id']}/session_{max(sessions)}"


@needs_locomo
def test_evidence_ids_become_the_turns_they_name(
    raw: list[dict[str, Any]], original: dict[str, tuple[str, Question]]
) -> None:
    unresolved = 0
    for question_id, (_, question) in original.items():
        index, item = _item(raw, question_id)
        expected, missing = _turns_named(raw, index, item["evidence"])
        unresolved += missing
        assert [(str(t.session), t.message) for t in question.evidence.turns] == expected
    assert unresolved == 2  # D10:19 of conv-42 and D4:36 of conv-47 name no turn


@needs_locomo
def test_the_audited_key_changes_exactly_the_audited_answers(
    raw: list[dict[str, Any]],
    findings: list[dict[str, Any]],
    original: dict[str, tuple[str, Question]],
    audited: dict[str, tuple[str, Question]],
) -> None:
    by_id = {_audited_id(raw, finding): finding for finding in findings}
    assert len(by_id) == len(findings) == 156
    # The audit's own classification: WRONG_CITATION means the answer is right.
    wrong_answers = {qid for qid, f in by_id.items() if f["error_type"] != "WRONG_CITATION"}
    changed = {qid for qid in original if original[qid][1].answer != audited[qid][1].answer}
    assert changed == wrong_answers
    assert len(changed) == 99  # "99 of 1,540 non-adversarial questions" (the audit's SOURCE)
    for qid in changed:
        assert audited[qid][1].answer == by_id[qid]["correct_answer"].strip()
    assert {qid for qid, (_, q) in audited.items() if q.audit is not None} == set(by_id)
    assert all(original[qid][0] == audited[qid][0] for qid in original)  # same owners
    error_types = Counter(q.audit.error_type for _, q in audited.values() if q.audit is not None)
    assert error_types == Counter(f["error_type"] for f in findings)
    audited_categories = Counter(q.category for _, q in audited.values() if q.audit is not None)
    assert audited_categories == Counter(CATEGORY_NAMES[f["category"]] for f in findings)


@needs_locomo
def test_audited_questions_take_the_corrected_evidence(
    raw: list[dict[str, Any]],
    findings: list[dict[str, Any]],
    original: dict[str, tuple[str, Question]],
    audited: dict[str, tuple[str, Question]],
) -> None:
    for finding in findings:
        qid = _audited_id(raw, finding)
        index, _ = _item(raw, qid)
        expected, _ = _turns_named(raw, index, finding["correct_evidence"])
        question = audited[qid][1]
        assert [(str(t.session), t.message) for t in question.evidence.turns] == expected
        assert question.audit is not None
        assert question.audit.original_evidence == original[qid][1].evidence
        assert question.audit.original_answer == original[qid][1].answer


def test_the_original_key_records_the_audit_when_given_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    audit = [
        _finding(0, "Where did Ann move?", "HALLUCINATION", "Porto", ["D1:1"]),
        _finding(1, "What did Bob say?", "WRONG_CITATION", "Nice (answer is correct)", ["D1:2"]),
    ]
    source, path = _write(tmp_path, _sample(*SMALL_QA), audit)
    out = tmp_path / "out.jsonl"
    args = ["datasets", "import-locomo", str(source), "--out", str(out), "--audit", str(path)]
    assert main(args) == 0
    said = capsys.readouterr().out
    assert "answer key original, audit recorded: 2 questions audited" in said
    questions = _by_id(convert_locomo(source, audit=path))
    kept = questions["conv-1/qa0"][1]
    # LoCoMo's answer and evidence stay; the audit's answer is recorded beside them.
    assert kept.answer == "Lisbon" and [t.message for t in kept.evidence.turns] == [1]
    assert kept.audit is not None and kept.audit.audited_answer == "Porto"
    assert not kept.answer_changed() and kept.audit_differs()
    citation = questions["conv-1/qa1"][1]
    assert citation.audit is not None and not citation.audit_differs()
    assert questions["conv-1/qa2"][1].audit is None
    # The audited key of the same file differs on the same questions.
    audited = _by_id(convert_locomo(source, answer_key="audited", audit=path))
    assert [q.audit_differs() for _, q in audited.values()] == [True, False, False]
    # Without --audit the original key records nothing, as before.
    assert all(q.audit is None for _, q in _by_id(convert_locomo(source)).values())


def test_out_may_not_be_the_audit_read_beside_the_source(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--out`` naming the audit by any path is refused before anything is read or written:
    the default audit beside the source, the same file by ``--audit``, a link, a hard link."""
    source, audit = _write(tmp_path, _sample(*SMALL_QA), [])
    before = audit.read_bytes()
    link, hard = tmp_path / "link.json", tmp_path / "hard.json"
    link.symlink_to(audit)
    os.link(audit, hard)
    base = ["datasets", "import-locomo", str(source), "--answer-key", "audited"]
    for extra in ([], ["--audit", str(audit)], ["--audit", str(link)]):
        for dest in (audit, tmp_path / "audit" / ".." / "audit" / "errors.json", link, hard):
            assert main([*base, "--out", str(dest), *extra]) == 2
            err = capsys.readouterr().err.strip()
            assert err.startswith("error: --out") and "is the audit file" in err, err
            assert "\n" not in err
    assert audit.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["audit", "hard.json", "link.json",
                                                          "locomo10.json"]  # fmt: skip
    # With the original key the audit is not read, so it is no input to protect... and the
    # source still is.
    assert main([*base[:3], "--out", str(hard)]) == 0
    assert main([*base[:3], "--out", str(source)]) == 2
    assert "is the source file" in capsys.readouterr().err


@pytest.mark.parametrize("bad", ["junk", "D99:999", "D1:7"])
def test_audit_evidence_that_names_no_turn_is_refused(tmp_path: Path, bad: str) -> None:
    """The audit's evidence is a correction: a piece naming no turn would leave the question
    with less evidence than the audit says, so the entry is refused by its place."""
    audit = [_finding(1, "What did Bob say?", "HALLUCINATION", "Nice", ["D1:1", bad])]
    source, path = _write(tmp_path, _sample(*SMALL_QA), audit)
    out = tmp_path / "out.jsonl"
    with pytest.raises(LocomoAuditError) as info:
        import_locomo(source, out, answer_key="audited")
    message = str(info.value)
    assert f"{path}: [0].correct_evidence: '{bad}' names no turn of conv-1/qa1" in message
    assert "\n" not in message and not out.exists()
