"""The judge calibration set and ``memlab judge audit``.

Expected numbers come from the set's own labels counted here, from confusion tables worked out
by hand, from the simulated judge's declared leniency and its provenance, and from what a
scripted OpenAI-compatible server was told to reply.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeServer

from memlab.backends.scripted import ScriptedBackend
from memlab.cli.main import main
from memlab.core.pipeline.llm import BackendError, CompletionRequest, allow_model_requests
from memlab.qa.answer_scores import is_abstention
from memlab.qa.judge_calibration import (
    CALIBRATION_KINDS,
    JudgeCalibrationError,
    JudgeTriple,
    load_judge_calibration,
)
from memlab.qa.qa_prompts import ABSTAIN_REFERENCE, JudgePrompt, judge_prompts
from memlab.scoring.qa.judge_audit import audit_backend, audit_judges, judge_backend
from memlab.simulation.model import SimulatedBackend
from memlab.simulation.qa_replies import JudgeDecision

REGISTRY = judge_prompts()
LENIENT, STRICT = REGISTRY.get("lenient"), REGISTRY.get("strict")
SET = load_judge_calibration()
TRIPLES = SET.triples


def _kappa(agree: int, judge_yes: int, label_yes: int, n: int) -> float:
    """Cohen's kappa from its definition: (p_o - p_e) / (1 - p_e)."""
    p_o = agree / n
    p_e = (judge_yes / n) * (label_yes / n) + (1 - judge_yes / n) * (1 - label_yes / n)
    return (p_o - p_e) / (1 - p_e)


# ---------------------------------------------------------------------- the set


def test_the_set_has_200_triples_of_every_kind_with_both_verdicts_where_a_kind_mixes() -> None:
    assert len(TRIPLES) >= 200
    assert len({t.id for t in TRIPLES}) == len(TRIPLES)
    kinds = Counter(t.kind for t in TRIPLES)
    assert set(kinds) == set(CALIBRATION_KINDS)
    assert min(kinds.values()) >= 8
    verdicts = {k: {t.correct for t in TRIPLES if t.kind == k} for k in kinds}
    for mixed in ("number_date", "multi_part", "abstention", "partial", "yes_no"):
        assert verdicts[mixed] == {True, False}, mixed
    assert verdicts["paraphrase"] == verdicts["extra_correct_detail"] == {True}
    for wrong in ("on_topic_wrong", "off_topic", "extra_wrong_detail", "hedged"):
        assert verdicts[wrong] == {False}, wrong


def test_only_unanswerable_triples_have_no_gold_and_the_judge_sees_the_qa_reference() -> None:
    unknown = [t for t in TRIPLES if t.gold is None]
    assert {t.kind for t in unknown} == {"abstention", "guess_on_unknown"}
    assert all(t.reference == ABSTAIN_REFERENCE for t in unknown)
    # an abstention is right exactly when the gold says it is not known
    for t in TRIPLES:
        if t.kind == "abstention":
            assert t.correct == (t.gold is None), t.id
    assert all(t.as_question().kind == "abstain" for t in unknown)


def test_on_topic_means_wrong_and_neither_off_topic_nor_abstaining() -> None:
    on_topic = {t.id for t in TRIPLES if t.on_topic}
    expected = {
        t.id for t in TRIPLES if not t.correct and t.kind not in ("off_topic", "abstention")
    }
    assert on_topic == expected
    assert not any(t.on_topic for t in TRIPLES if t.correct)


def test_the_abstention_kind_is_exactly_what_is_abstention_detects() -> None:
    flagged = {t.id for t in TRIPLES if is_abstention(t.answer)}
    assert flagged == {t.id for t in TRIPLES if t.kind == "abstention"}


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ("not json", ""),
        ('["a list"]', ""),
        (
            '{"kind": "k", "question": "q", "gold": "g", "answer": "a", "verdict": "WRONG", '
            '"why": "w"}',
            "id",
        ),
        (
            '{"id": "x", "kind": "k", "question": "q", "gold": 3, "answer": "a", '
            '"verdict": "WRONG", "why": "w"}',
            "gold",
        ),
        (
            '{"id": "x", "kind": "k", "question": "q", "gold": "g", "answer": "a", '
            '"verdict": "maybe", "why": "w"}',
            "verdict",
        ),
        (
            '{"id": "x", "kind": "k", "question": "q", "gold": "g", "answer": " ", '
            '"verdict": "WRONG", "why": "w"}',
            "answer",
        ),
    ],
)
def test_a_bad_line_is_named_by_file_line_and_field(tmp_path: Path, line: str, field: str) -> None:
    good = {
        "id": "ok",
        "kind": "k",
        "question": "q",
        "gold": None,
        "answer": "a",
        "verdict": "CORRECT",
        "why": "w",
    }
    path = tmp_path / "set.jsonl"
    path.write_text(json.dumps(good) + "\n\n" + line + "\n", encoding="utf-8")
    with pytest.raises(JudgeCalibrationError) as caught:
        load_judge_calibration(path)
    assert (caught.value.path, caught.value.line, caught.value.field) == (str(path), 3, field)
    assert str(caught.value).startswith(f"{path}:3: ")


def test_a_repeated_id_and_an_empty_file_are_refused(tmp_path: Path) -> None:
    row = {
        "id": "x",
        "kind": "k",
        "question": "q",
        "gold": "g",
        "answer": "a",
        "verdict": "WRONG",
        "why": "w",
    }
    path = tmp_path / "set.jsonl"
    path.write_text(json.dumps(row) + "\n" + json.dumps(row) + "\n", encoding="utf-8")
    with pytest.raises(JudgeCalibrationError, match=r":2: field 'id' 'x' is used twice"):
        load_judge_calibration(path)
    path.write_text("\n", encoding="utf-8")
    with pytest.raises(JudgeCalibrationError, match="no triples"):
        load_judge_calibration(path)


# ---------------------------------------------------------------------- tallies by hand


def _triple(i: int, correct: bool, kind: str) -> JudgeTriple:
    return JudgeTriple(f"t{i}", kind, f"Question {i}?", f"Gold {i}.", f"Answer {i}.", correct, "")


def test_agreement_kappa_and_unreadable_and_failed_replies_on_a_hand_built_table() -> None:
    # (triple, the scripted judge's reply; None: the call fails)
    script: list[tuple[JudgeTriple, str | None]] = [
        *[(_triple(i, True, "paraphrase"), '{"label": "CORRECT"}') for i in range(5)],
        (_triple(5, True, "paraphrase"), '```json\n{"label": "WRONG"}\n```'),
        (_triple(6, True, "paraphrase"), None),
        (_triple(7, False, "on_topic_wrong"), "CORRECT"),
        (_triple(8, False, "on_topic_wrong"), '{"label": "CORRECT"}'),
        (_triple(9, False, "off_topic"), '{"label": "WRONG"}'),
        (_triple(10, False, "abstention"), "It is CORRECT or WRONG, hard to tell."),
    ]
    replies = {t.answer: reply for t, reply in script}

    def judge(request: CompletionRequest) -> str:
        values = STRICT.parse(str(request.messages[0]["content"]))
        assert values is not None
        reply = replies[values["answer"]]
        if reply is None:
            raise BackendError("the server is down")
        return reply

    [score] = audit_judges(
        ScriptedBackend(function=judge), [STRICT], [t for t, _ in script], max_workers=2
    )
    total = score.total
    # graded: 5 right accepted, 1 right rejected, 2 wrong accepted, 1 wrong rejected
    assert (total.n, total.graded, total.unreadable, total.failed) == (11, 9, 1, 1)
    assert total.agreement == pytest.approx(6 / 9)
    # p_o = 6/9; judge says CORRECT 7/9, the set 6/9: p_e = 42/81 + 6/81 = 48/81
    assert total.kappa == pytest.approx((54 / 81 - 48 / 81) / (1 - 48 / 81))
    assert total.kappa == pytest.approx(2 / 11)
    assert total.coverage == pytest.approx(9 / 11)
    assert score.on_topic_wrong.accepted == 1.0
    assert (score.on_topic_wrong.n, score.on_topic_wrong.graded) == (2, 2)
    kinds = score.by_kind
    assert (kinds["paraphrase"].n, kinds["paraphrase"].failed) == (7, 1)
    assert kinds["paraphrase"].agreement == pytest.approx(5 / 6)
    assert (kinds["abstention"].unreadable, kinds["abstention"].graded) == (1, 0)
    assert math.isnan(kinds["abstention"].agreement)
    assert score.as_dict()["by_kind"]["abstention"]["agreement"] is None


# ---------------------------------------------------------------------- the simulated judge


def test_the_simulated_judge_grades_by_known_verdict_and_declared_leniency() -> None:
    backend = judge_backend("sim:careful", [LENIENT, STRICT], TRIPLES)
    assert isinstance(backend, SimulatedBackend)
    leniency = backend.profile.qa.judge_leniency
    scores = audit_judges(backend, [LENIENT, STRICT], TRIPLES)
    n, on_topic = len(TRIPLES), sum(t.on_topic for t in TRIPLES)
    for score, judge in zip(scores, (LENIENT, STRICT), strict=True):
        decisions = []
        for t in TRIPLES:
            decision = backend.decide_qa(judge.render(t.question, t.reference, t.answer))
            assert isinstance(decision, JudgeDecision)
            decisions.append((t, decision))
        # provenance: only on-topic WRONG triples are ever accepted, and only as leniency
        for t, d in decisions:
            assert d.verdict == (t.correct or d.lenient)
            assert d.lenient <= t.on_topic
        accepted = sum(d.lenient for _, d in decisions)
        assert score.total.agreement == pytest.approx(1 - accepted / n)
        assert score.on_topic_wrong.counts.wrong_accepted == accepted
        # and the declared rate: accepted ~ Binomial(on_topic, leniency), within 4 sigma
        rate = leniency[judge.name]
        sigma = math.sqrt(on_topic * rate * (1 - rate))
        assert abs(accepted - on_topic * rate) <= 4 * sigma + 1
    lenient_accepts = {t.id for t in TRIPLES if _verdict(backend, LENIENT, t)}
    strict_accepts = {t.id for t in TRIPLES if _verdict(backend, STRICT, t)}
    assert strict_accepts <= lenient_accepts  # one draw per triple serves every judge


def _verdict(backend: SimulatedBackend, judge: JudgePrompt, t: JudgeTriple) -> bool:
    decision = backend.decide_qa(judge.render(t.question, t.reference, t.answer))
    assert isinstance(decision, JudgeDecision)
    return decision.verdict


def _profile(tmp_path: Path, lenient: float, strict: float) -> str:
    path = tmp_path / "judgy.yaml"
    path.write_text(
        f"name: judgy\nqa: {{judge_leniency: {{lenient: {lenient}, strict: {strict}}}}}\n",
        encoding="utf-8",
    )
    return f"sim:{path}"


def test_a_judge_accepting_every_on_topic_answer_and_one_accepting_none(tmp_path: Path) -> None:
    audit = audit_backend(_profile(tmp_path, 1.0, 0.0), [LENIENT, STRICT], SET)
    lenient, strict = audit.scores
    n = len(TRIPLES)
    right = sum(t.correct for t in TRIPLES)
    on_topic = sum(t.on_topic for t in TRIPLES)
    assert strict.total.agreement == 1.0
    assert strict.total.kappa == 1.0
    assert strict.on_topic_wrong.accepted == 0.0
    assert lenient.on_topic_wrong.accepted == 1.0
    assert lenient.total.agreement == pytest.approx((n - on_topic) / n)
    assert lenient.total.kappa == pytest.approx(_kappa(n - on_topic, right + on_topic, right, n))
    assert lenient.by_kind["on_topic_wrong"].agreement == 0.0
    assert lenient.by_kind["off_topic"].agreement == 1.0


# ---------------------------------------------------------------------- the command


def test_cli_audits_the_simulated_judge_and_writes_the_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "audit.json"
    spec = _profile(tmp_path, 1.0, 0.0)
    assert main(["judge", "audit", spec, "--out", str(out), "--by-kind"]) == 0
    printed = capsys.readouterr().out
    n = len(TRIPLES)
    on_topic = sum(t.on_topic for t in TRIPLES)
    rows = {line.split()[0]: line.split() for line in printed.splitlines() if line.strip()}
    assert rows["lenient"][1:6] == [str(n), str(n), "0", "0", f"{(n - on_topic) / n:.1%}"]
    assert rows["strict"][1:7] == [str(n), str(n), "0", "0", "100.0%", "1.00"]
    assert rows["on_topic_wrong"][-2:] == ["0.0%", "100.0%"]
    assert "[simulated]" in printed
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["judge_audit_format"] == 1
    assert data["calibration"] == {"source": SET.source, "sha256": SET.sha256, "triples": n}
    assert data["judges"]["strict"]["prompt_sha256"] == STRICT.sha256
    assert data["judges"]["lenient"]["on_topic_wrong"]["accepted"] == 1.0
    assert data["judges"]["lenient"]["unreadable"] == 0
    assert set(data["judges"]["lenient"]["by_kind"]) == set(CALIBRATION_KINDS)


def _scripted_judge(body: dict[str, Any]) -> str:
    """The server's judge: the set's verdict, except that under the lenient prompt it accepts
    every on_topic_wrong answer and words its hedged verdicts unreadably, and under the
    strict one it gives two JSON objects for every yes/no triple."""
    prompt = "\n".join(str(m.get("content", "")) for m in body["messages"])
    by_text = {(t.question, t.reference, t.answer): t for t in TRIPLES}
    for judge in (LENIENT, STRICT):
        values = judge.parse(prompt)
        if values is None:
            continue
        t = by_text[(values["question"], values["gold_answer"], values["answer"])]
        if judge is LENIENT and t.kind == "hedged":
            return "Either CORRECT or WRONG: the answer hedges."
        if judge is STRICT and t.kind == "yes_no":
            return '{"label": "CORRECT"} {"label": "WRONG"}'
        if judge is LENIENT and t.kind == "on_topic_wrong":
            return '{"label": "CORRECT"}'
        return json.dumps({"label": "CORRECT" if t.correct else "WRONG"})
    raise AssertionError("not a judge prompt")


def test_cli_counts_unreadable_verdicts_of_an_openai_compatible_judge(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "audit.json"
    with FakeServer(reply=_scripted_judge) as server, allow_model_requests():
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        code = main(["judge", "audit", "openai:judge-model", "--out", str(out), "--workers", "8"])
    assert code == 0
    assert len(server.requests) == 2 * len(TRIPLES)
    n = len(TRIPLES)
    hedged = sum(t.kind == "hedged" for t in TRIPLES)
    yes_no = [t for t in TRIPLES if t.kind == "yes_no"]
    topic_wrong = sum(t.kind == "on_topic_wrong" for t in TRIPLES)
    right = sum(t.correct for t in TRIPLES)
    data = json.loads(out.read_text(encoding="utf-8"))["judges"]
    # lenient: the hedged triples (all WRONG) unreadable; every on_topic_wrong one accepted
    lenient = data["lenient"]
    graded = n - hedged
    assert (lenient["graded"], lenient["unreadable"], lenient["failed"]) == (graded, hedged, 0)
    assert lenient["agreement"] == round((graded - topic_wrong) / graded, 4)
    assert lenient["kappa"] == round(
        _kappa(graded - topic_wrong, right + topic_wrong, right, graded), 4
    )
    on_topic = sum(t.on_topic for t in TRIPLES) - hedged
    assert lenient["on_topic_wrong"]["graded"] == on_topic
    assert lenient["on_topic_wrong"]["accepted"] == round(topic_wrong / on_topic, 4)
    assert lenient["by_kind"]["hedged"] == {
        "n": hedged,
        "graded": 0,
        "unreadable": hedged,
        "failed": 0,
        "coverage": 0.0,
        "agreement": None,
        "kappa": None,
        "accepted": None,
    }
    # strict: the yes/no triples unreadable, every other verdict the set's
    strict = data["strict"]
    assert (strict["graded"], strict["unreadable"]) == (n - len(yes_no), len(yes_no))
    assert strict["agreement"] == 1.0
    assert strict["kappa"] == 1.0
    printed = capsys.readouterr().out
    rows = {line.split()[0]: line.split() for line in printed.splitlines() if line.strip()}
    assert rows["lenient"][1:5] == [str(n), str(graded), str(hedged), "0"]
    assert rows["lenient"][5] == f"{(graded - topic_wrong) / graded:.1%}"
    assert rows["strict"][1:6] == [str(n), str(n - len(yes_no)), str(len(yes_no)), "0", "100.0%"]
    assert f"lenient {hedged} unreadable" in printed
    assert f"strict {len(yes_no)} unreadable" in printed


def test_cli_exits_1_when_judge_calls_fail_and_2_on_a_bad_prompt_or_set(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["judge", "audit", "sim:careful", "--judges", "nope"]) == 2
    assert "unknown prompt variant 'nope'" in capsys.readouterr().err
    bad = tmp_path / "set.jsonl"
    bad.write_text('{"id": 1}\n', encoding="utf-8")
    assert main(["judge", "audit", "sim:careful", "--set", str(bad)]) == 2
    assert f"{bad}:1: field 'id'" in capsys.readouterr().err
    # a triple the simulated judge was not told about fails (no dataset holds it)
    sim = judge_backend("sim:careful", [STRICT], TRIPLES[:1])
    [score] = audit_judges(sim, [STRICT], TRIPLES[1:3])
    assert (score.total.failed, score.total.graded) == (2, 0)


def test_a_prompt_file_names_its_judges(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    picky = tmp_path / "picky.txt"
    picky.write_text(
        'Q {question}\nREF {gold_answer}\nA {answer}\nReply {"label": "CORRECT"} or WRONG.',
        encoding="utf-8",
    )
    spec = _profile(tmp_path, 1.0, 0.0)
    assert main(["judge", "audit", spec, "--judges", f"strict,{picky}"]) == 0
    printed = capsys.readouterr().out
    rows = {line.split()[0]: line.split() for line in printed.splitlines() if line.strip()}
    assert set(rows) >= {"strict", "picky"}
    # a judge the profile does not name gets its default leniency (0.3): some, not all
    picky_accepts = rows["picky"][-3]
    assert picky_accepts not in ("0.0%", "100.0%")
