"""Memory QA's numbers on small answer tables built by hand, each expected value worked out
in the comments from the definitions in :mod:`memlab.scoring.qa.qa_metrics` (sums per owner and
sample, averaged over samples, then a ratio of sums over owners; every answer without a
verdict or without an answer counted wrong; the headline set is the answerable questions).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import pandas as pd
import pytest

from memlab.scoring.inference.stats import StatOptions
from memlab.scoring.qa.qa_causes import CAUSES
from memlab.scoring.qa.qa_metrics import (
    accuracy_table,
    cause_table,
    interval_note,
    judge_agreement,
    judge_band,
    judged_metrics,
    key_ceiling,
    qa_cost,
    qa_session_counts,
    robust_verdicts,
    threshold_ratings,
)
from memlab.scoring.qa.qa_verdicts import error_counts, errors_sentence, judges_of, verdict_table


def _row(question: str, verdicts: dict[str, Any] | None, **changes: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "lane_id": "lane",
        "sample": 0,
        "user_id": "o1",
        "question_id": question,
        "condition": "memory",
        "session_index": 0,
        "category": "single-hop",
        "kind": "answerable",
        "abstained": False,
        "error": None,
        "verdicts": verdicts,
        "f1": 0.0,
        "bleu1": 0.0,
        "f1_original": None,
        "bleu1_original": None,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "latency_s": 0.0,
    }
    row.update(changes)
    return row


def _strict(answer: bool | None, **keys: bool | None) -> dict[str, Any]:
    return {"strict": {"answer": answer, **keys}}


# --- verdicts and errors --------------------------------------------------------------------


def test_each_verdict_row_by_key_and_status() -> None:
    rows = pd.DataFrame(
        [
            # The original key falls back to the answer key's verdict when the audit left it.
            _row("q1", {"a": {"answer": True}, "b": {"answer": False, "original": True}}),
            # A judged abstention on an answerable question stays judged.
            _row("q2", {"a": {"answer": True}}, abstained=True),
            _row("q3", None, abstained=True),  # no judge asked: wrong, verdict 0
        ]
    )
    table = verdict_table(rows).set_index(["question_id", "judge", "key"])
    assert list(table.columns[:5]) == ["lane_id", "sample", "user_id", "condition", "session_index"]
    assert set(table["kind"]) == {"answerable"} and set(table["session_index"]) == {0}
    assert len(table) == 3 * 2 * 2
    expected = {
        ("q1", "a", "answer"): (1.0, True, "judged"),
        ("q1", "a", "original"): (1.0, True, "judged"),
        ("q1", "b", "answer"): (0.0, False, "judged"),
        ("q1", "b", "original"): (1.0, True, "judged"),
        ("q2", "a", "answer"): (1.0, True, "judged"),
        ("q2", "b", "original"): (0.0, False, "abstained"),
        ("q3", "a", "answer"): (0.0, False, "abstained"),
        ("q3", "b", "original"): (0.0, False, "abstained"),
    }
    for where, (verdict, correct, status) in expected.items():
        found = table.loc[where]
        assert (found["verdict"], found["correct"], found["status"]) == (verdict, correct, status)
    # A judge named but absent from an answer's verdicts decided nothing on it.
    absent = verdict_table(rows.iloc[[0]], ["c"])
    assert list(absent["status"]) == ["no_verdict", "no_verdict"]
    assert absent["verdict"].isna().all() and not absent["correct"].any()
    assert list(absent["category"]) == ["single-hop"] * 2


def test_error_counts_and_the_sentence_that_names_them() -> None:
    rows = pd.DataFrame(
        [
            _row("q1", {"a": {"answer": True}, "b": {"answer": None}}),
            _row("q2", {}, error="connection refused"),  # an answer error, not a judge's
            _row("q3", {"a": {"answer": None, "original": True}, "b": {"answer": False}}),
            _row("q4", {"a": {"answer": None}, "b": {"answer": True}}),
            # Only the file's key counts: an unreadable verdict on the original key is not one.
            _row("q5", {"a": {"answer": True, "original": None}, "b": {"answer": True}}),
            _row("q6", {}, abstained=True),  # decided without a judge
            _row("q7", {"a": {"answer": True, "original": None}, "b": {"answer": True}}),
        ]
    )
    counts = error_counts(rows, ["a", "b"])
    assert counts == {"answers": 7, "answer_errors": 1, "judge_errors:a": 2, "judge_errors:b": 1}
    assert errors_sentence(counts) == (
        "2 of 7 answers have no verdict from judge a (its call failed or its reply named no "
        "single verdict); 1 of 7 answers have no verdict from judge b (its call failed or its "
        "reply named no single verdict); 1 of 7 answer calls failed: each counts as a wrong "
        "answer"
    )
    # A judge named that graded nothing left every answered, unabstained question unjudged.
    assert error_counts(rows, ["c"])["judge_errors:c"] == 5
    empty = pd.DataFrame(columns=list(rows.columns))
    assert error_counts(empty, ["a"]) == {"answers": 0, "answer_errors": 0, "judge_errors:a": 0}
    assert errors_sentence({"answers": 3, "answer_errors": 0, "judge_errors:a": 0}) == ""
    assert errors_sentence({"answers": 3, "answer_errors": 2}) == (
        "2 of 3 answer calls failed: each counts as a wrong answer"
    )
    # The judge's name is everything after the first colon.
    assert errors_sentence({"answers": 4, "answer_errors": 0, "judge_errors:x:y": 1}).startswith(
        "1 of 4 answers have no verdict from judge x:y "
    )


def test_judges_in_the_order_they_appear_and_the_judged_rates() -> None:
    rows = pd.DataFrame([_row("q1", {"b": {}}), _row("q2", None), _row("q3", {"a": {}, "b": {}})])
    assert judges_of(rows) == ["b", "a"]
    assert judges_of(pd.DataFrame({"question_id": ["q1"]})) == []
    assert set(judged_metrics()) == {
        "qa_accuracy",
        "qa_abstain_accuracy",
        "qa_adversarial_accuracy",
    }


# --- session counts -------------------------------------------------------------------------


def _session_rows() -> pd.DataFrame:
    timing = {"prompt_tokens": 10, "completion_tokens": 2, "latency_s": 0.5}
    rows = [
        _row("q1", _strict(True, original=False), f1=0.5, bleu1=0.25, **timing),
        _row("q2", _strict(None), f1=0.2, bleu1=0.1, prompt_tokens=20, completion_tokens=3),
        _row("q3", _strict(True), kind="abstain", f1=0.9, bleu1=0.9, latency_s=0.25),
        _row("q4", _strict(False), kind="adversarial", abstained=True, latency_s=1.25),
        _row("q5", {}, session_index=1, error="refused", f1=None, bleu1=None),
        _row("q6", _strict(False), session_index=1, kind="adversarial", completion_tokens=4),
        _row("q7", _strict(False), session_index=1, kind="abstain", prompt_tokens=6),
        # Another condition and another judge never enter the memory counts under strict.
        _row("q1", _strict(True), condition="none", prompt_tokens=1000),
        _row("q8", {"lenient": {"answer": True}, **_strict(False)}, session_index=1),
    ]
    return pd.DataFrame(rows)


def test_session_counts_of_the_memory_condition_by_hand() -> None:
    table = qa_session_counts(_session_rows(), "strict").set_index("session_index")
    # Session 0: q1 right, q2 unreadable (wrong, a judge error); q3 an abstain question
    # judged right; q4 an adversarial abstention (right whatever the judge says).
    # Session 1: q5 failed (wrong, an answer error), q6 and q7 wrong, q8 wrong under strict.
    expected = {
        0: {
            "qa_questions": 4,
            "qa_answerable": 2,
            "qa_correct": 1,
            "qa_f1": 0.7,
            "qa_bleu1": 0.35,
            "qa_abstain": 1,
            "qa_abstain_correct": 1,
            "qa_adversarial": 1,
            "qa_adversarial_correct": 1,
            "qa_read_tokens": 12 + 23 + 0 + 0,
            "qa_read_latency_s": 0.5 + 0.0 + 0.25 + 1.25,
            "qa_judge_errors": 1,
            "qa_answer_errors": 0,
        },
        1: {
            "qa_questions": 4,
            "qa_answerable": 2,
            "qa_correct": 0,
            "qa_f1": 0.0,
            "qa_bleu1": 0.0,
            "qa_abstain": 1,
            "qa_abstain_correct": 0,
            "qa_adversarial": 1,
            "qa_adversarial_correct": 0,
            "qa_read_tokens": 0 + 4 + 6 + 0,
            "qa_read_latency_s": 0.0,
            "qa_judge_errors": 0,
            "qa_answer_errors": 1,
        },
    }
    assert set(table.index) == {0, 1}
    for session, values in expected.items():
        for column, value in values.items():
            assert table.loc[session, column] == pytest.approx(value), (session, column)
    assert set(table["lane_id"]) == {"lane"} and set(table["user_id"]) == {"o1"}
    # Against the original key q1 is wrong (its original verdict); the rest fall back.
    original = qa_session_counts(_session_rows(), "strict", key="original")
    assert original.set_index("session_index")["qa_correct"].to_dict() == {0: 0, 1: 0}
    assert original.set_index("session_index")["qa_abstain_correct"].to_dict() == {0: 1, 1: 0}
    lenient = qa_session_counts(_session_rows(), "lenient").set_index("session_index")
    assert lenient.loc[1, "qa_correct"] == 1 and lenient.loc[0, "qa_judge_errors"] == 4


def test_no_memory_answers_give_an_empty_count_table() -> None:
    rows = _session_rows()
    table = qa_session_counts(rows[rows["condition"] == "none"], "strict")
    assert table.empty
    assert list(table.columns[:4]) == ["lane_id", "user_id", "session_index", "sample"]
    assert "qa_correct" in table.columns and "qa_answer_errors" in table.columns


# --- accuracy -------------------------------------------------------------------------------


def _accuracy_rows() -> pd.DataFrame:
    both = {"lenient": {"answer": True}}
    rows = [
        # o1, sample 0: A right, B wrong; sample 1: both right.
        _row("A", {**_strict(True, original=False), **both}, f1=1.0, bleu1=0.5, f1_original=0.25),
        _row("B", {**_strict(False), **both}, f1=0.0, bleu1=0.0),
        _row("A", {**_strict(True), **both}, sample=1, f1=1.0, bleu1=0.5),
        _row("B", {**_strict(True), **both}, sample=1, f1=0.5, bleu1=0.5),
        # o2: A failed, B unreadable under strict, C right.
        _row("A", {}, user_id="o2", error="refused", f1=None, bleu1=None),
        _row("B", {**_strict(None), **both}, user_id="o2", f1=0.4, bleu1=0.2),
        _row("C", {**_strict(True), **both}, user_id="o2", f1=0.6, bleu1=0.6, category="temporal"),
        # Not in the headline.
        _row("D", {**_strict(True), **both}, user_id="o2", kind="adversarial", f1=1.0),
    ]
    return pd.DataFrame(rows)


def test_accuracy_per_owner_averaged_over_samples_by_hand() -> None:
    table = accuracy_table(_accuracy_rows()).set_index("judge")
    assert list(table.index) == ["strict", "lenient"]
    strict = table.loc["strict"]
    # Per owner (mean over samples): o1 n 2, right 1.5, f1 1.25, bleu 0.75;
    # o2 n 3, right 1, f1 0 + 0.4 + 0.6, bleu 0 + 0.2 + 0.6.
    assert (strict["lane_id"], strict["condition"]) == ("lane", "memory")
    assert strict["owners"] == 2 and strict["questions"] == pytest.approx(5.0)
    assert strict["accuracy"] == pytest.approx(2.5 / 5)
    assert strict["f1"] == pytest.approx(2.25 / 5)
    assert strict["bleu1"] == pytest.approx(1.55 / 5)
    assert strict["judge_errors"] == 1.0 and strict["answer_errors"] == 1.0
    # 2 owners, rates far from 0 and 1: too few owners for an interval (NaN), never [x, x].
    for metric in ("accuracy", "f1"):
        assert math.isnan(strict[f"{metric}_lo"]) and math.isnan(strict[f"{metric}_hi"]), metric
    # lenient: o1 2 of 2, o2 2 of 3 (the failed answer is wrong under every judge).
    lenient = table.loc["lenient"]
    assert lenient["accuracy"] == pytest.approx(4 / 5)
    assert lenient["judge_errors"] == 0.0 and lenient["answer_errors"] == 1.0


def test_accuracy_against_the_original_key_and_of_other_kinds() -> None:
    rows = _accuracy_rows()
    table = accuracy_table(rows, key="original", judges=["strict"])
    assert list(table["judge"]) == ["strict"]
    # o1: sample 0 0 right (A's original verdict is wrong), sample 1 2 right -> 1; o2 1.
    assert table["accuracy"].iloc[0] == pytest.approx(2 / 5)
    # Original-key F1: only o1's sample 0 answer A has one (0.25), averaged over 2 samples.
    assert table["f1"].iloc[0] == pytest.approx(0.125 / 5)
    adversarial = accuracy_table(rows, kinds=("adversarial",))
    assert list(adversarial["questions"]) == [1.0, 1.0]
    assert list(adversarial["accuracy"]) == [1.0, 1.0]
    # Per category: single-hop o1 1.5 of 2, o2 0 of 2; temporal o2 1 of 1.
    by_category = accuracy_table(rows, by=("category",), judges=["strict"]).set_index("category")
    assert by_category.loc["single-hop", "accuracy"] == pytest.approx(1.5 / 4)
    assert by_category.loc["temporal", "accuracy"] == 1.0
    assert by_category["owners"].to_dict() == {"single-hop": 2, "temporal": 1}
    empty = accuracy_table(rows, kinds=("abstain",))
    assert empty.empty and list(empty.columns[:4]) == ["lane_id", "condition", "judge", "owners"]
    assert list(empty.columns[-2:]) == ["judge_errors", "answer_errors"]
    # Without resamples there is no interval, only the estimate.
    plain = accuracy_table(rows, judges=["strict"], options=StatOptions(resamples=0))
    assert plain["accuracy"].iloc[0] == pytest.approx(2.5 / 5)
    assert plain[["accuracy_lo", "accuracy_hi"]].isna().all(axis=None)
    # A judge that graded only another kind of question graded none of these: all unjudged.
    extra = pd.concat(
        [rows, pd.DataFrame([_row("E", {"extra": {"answer": True}}, kind="adversarial")])]
    )
    unjudged = accuracy_table(extra).set_index("judge").loc["extra"]
    assert unjudged["accuracy"] == 0.0 and unjudged["judge_errors"] == 4.0


# --- judges ---------------------------------------------------------------------------------


def test_the_band_over_three_judges_takes_the_widest_flip_and_the_lowest_kappa() -> None:
    a, b, c = [True, True, False, False], [True, False, False, False], [False, False, True, True]
    agreeing = {j: {"answer": True} for j in "abc"}
    rows = pd.DataFrame(
        [
            # Another lane where the judges agree; listed first, so it comes first.
            _row("q0", agreeing, lane_id="other"),
            _row("q1", {j: {"answer": False} for j in "abc"}, lane_id="other"),
            # An adversarial answer stays out of the headline band.
            _row("q9", {"a": {"answer": False}, "b": {"answer": True}}, kind="adversarial"),
            *(
                _row(
                    f"q{i}",
                    {"a": {"answer": x}, "b": {"answer": y}, "c": {"answer": z}},
                    user_id=f"o{i}",
                )
                for i, (x, y, z) in enumerate(zip(a, b, c, strict=True))
            ),
        ]
    )
    # A verdict against the original key is not the file's key: it changes nothing here.
    rows.at[3, "verdicts"] = {**rows.at[3, "verdicts"], "a": {"answer": True, "original": False}}
    # Pairs: a-b flip 1 of 4, chance agreement .5*.25 + .5*.75 = .5, kappa (.75 - .5)/.5 = .5;
    # a-c flip 4 of 4, kappa (0 - .5)/.5 = -1; b-c flip 3 of 4, chance .25*.5 + .75*.5 = .5,
    # kappa (.25 - .5)/.5 = -.5.
    every = judge_agreement(rows)
    assert sorted(every["lane_id"]) == ["lane"] * 3 + ["other"] * 3
    pairs = every[every["lane_id"] == "lane"].set_index(["judge_a", "judge_b"])
    assert list(pairs.index) == [("a", "b"), ("a", "c"), ("b", "c")]
    assert pairs["flips"].to_dict() == {("a", "b"): 1, ("a", "c"): 4, ("b", "c"): 3}
    assert pairs["kappa"].to_list() == pytest.approx([0.5, -1.0, -0.5])
    other, band = judge_band(rows).to_dict("records")
    assert (other["lane_id"], other["flip_rate"], other["kappa"]) == ("other", 0.0, 1.0)
    assert (band["lane_id"], band["condition"]) == ("lane", "memory")
    assert (band["accuracy:a"], band["accuracy:b"], band["accuracy:c"]) == (0.5, 0.25, 0.5)
    assert (band["band_lo"], band["band_hi"], band["band"]) == (0.25, 0.5, 0.25)
    assert band["flip_rate"] == pytest.approx(1.0)
    assert band["kappa"] == pytest.approx(-1.0)
    # The adversarial answer alone: a judges 0, b 1, one flip in one.
    (adversarial,) = judge_band(rows, kinds=("adversarial",)).to_dict("records")
    assert (adversarial["accuracy:a"], adversarial["accuracy:b"]) == (0.0, 1.0)
    assert adversarial["flip_rate"] == 1.0


def test_one_judge_or_no_shared_answer_has_no_agreement() -> None:
    single = pd.DataFrame(
        [_row("q1", {"a": {"answer": True}}), _row("q2", {"a": {"answer": False}})]
    )
    (band,) = judge_band(single).to_dict("records")
    assert band["band"] == 0.0 and band["accuracy:a"] == 0.5
    assert math.isnan(band["flip_rate"]) and math.isnan(band["kappa"])
    # Two judges that never graded the same answer: a pair with nothing graded by both.
    apart = pd.DataFrame([_row("q1", {"a": {"answer": True}}), _row("q2", {"b": {"answer": True}})])
    (pair,) = judge_agreement(apart).to_dict("records")
    assert (pair["graded"], pair["flips"]) == (0, 0)
    assert math.isnan(pair["flip_rate"])
    none = judge_agreement(pd.DataFrame([_row("q1", {}, abstained=True)]))
    assert none.empty and list(none.columns) == [
        "lane_id",
        "condition",
        "judge_a",
        "judge_b",
        "graded",
        "flips",
        "flip_rate",
        "kappa",
    ]


# --- the key's ceiling over repeated samples -------------------------------------------------


def test_the_ceiling_counts_questions_once_over_repeated_samples() -> None:
    # One owner, 4 questions, the audit changed one; replayed twice. A run of the original key
    # that records the audit: the ceiling is 1 - 1/4 and there are 4 questions, 1 changed.
    rows = [
        _row(
            f"q{i}",
            _strict(i != 0),
            sample=sample,
            audited=i == 0,
            answer_changed=False,
            audit_differs=i == 0,
            category="temporal" if i < 2 else "single-hop",
        )
        for sample in (0, 1)
        for i in range(4)
    ]
    table = key_ceiling(pd.DataFrame(rows)).set_index(["key", "category"])
    assert set(table.index) == {
        ("original", "all"),
        ("original", "temporal"),
        ("original", "single-hop"),
    }
    overall = table.loc[("original", "all")]
    assert (overall["questions"], overall["changed"]) == (4, 1)
    assert overall["ceiling"] == pytest.approx(0.75)
    assert overall["accuracy"] == pytest.approx(0.75) and not overall["over_ceiling"]
    temporal = table.loc[("original", "temporal")]
    assert (temporal["questions"], temporal["changed"], temporal["ceiling"]) == (2, 1, 0.5)
    single = table.loc[("original", "single-hop")]
    assert (single["changed"], single["ceiling"], single["accuracy"]) == (0, 1.0, 1.0)


def test_unrecorded_audit_fields_are_not_audited_nor_changed_and_each_condition_counts() -> None:
    # The audit changed q0 of 4; q1 and q2 record nothing (None), q3 records False. Two
    # conditions, so each is counted against its own questions.
    def row(i: int, condition: str) -> dict[str, Any]:
        recorded = None if i in (1, 2) else i == 0
        return _row(
            f"q{i}",
            _strict(i != 0),
            condition=condition,
            audited=recorded,
            answer_changed=None if i == 1 else False,
            audit_differs=recorded,
        )

    rows = pd.DataFrame([row(i, c) for c in ("memory", "none") for i in range(4)])
    table = key_ceiling(rows)
    assert table.index.is_unique and table["changed"].dtype.kind == "i"
    overall = table[table["category"] == "all"].set_index("condition")
    assert list(overall["changed"]) == [1, 1] and list(overall["questions"]) == [4, 4]
    assert list(overall["ceiling"]) == [0.75, 0.75]
    # Nothing recorded as audited, or no audit column at all: no ceiling.
    unaudited = rows.assign(audited=[None, False] * 4)
    assert key_ceiling(unaudited).empty
    assert key_ceiling(rows.drop(columns="audited")).empty


def test_robustness_with_one_judge_and_a_lane_one_judge_did_not_compare() -> None:
    keys = {"baseline_run": "a", "baseline_lane": "base", "run": "b", "metric": "qa_accuracy"}
    strict = pd.DataFrame([{**keys, "lane": "x", "verdict": "better"}])
    (alone,) = robust_verdicts({"strict": strict}).to_dict("records")
    assert alone["judge_robust"] == "robust to the judge: better"
    lenient = pd.DataFrame(
        [{**keys, "lane": "x", "verdict": "better"}, {**keys, "lane": "y", "verdict": "worse"}]
    )
    both = robust_verdicts({"strict": strict, "lenient": lenient}).set_index("lane")
    assert both["judge_robust"].to_dict() == {
        "x": "robust to the judge: better",
        "y": "depends on the judge",
    }
    assert list(robust_verdicts({}).columns) == [
        "baseline_run",
        "baseline_lane",
        "run",
        "lane",
        "metric",
        "judge_robust",
    ]


# --- causes ---------------------------------------------------------------------------------


def test_wrong_answers_from_memory_by_cause_by_hand() -> None:
    rows = pd.DataFrame(
        [
            _row("q1", _strict(True), fate="injected"),  # right: answered, no cause
            _row("q2", _strict(False), fate="evicted"),
            _row("q3", _strict(False), fate="injected"),  # gold memory right: misled
            _row("q3", _strict(True), condition="gold_memory"),
            _row("q4", _strict(False), fate="injected"),  # gold memory wrong too
            _row("q4", _strict(False), condition="gold_memory"),
            _row("q5", _strict(False), fate="injected"),  # gold memory not asked
            _row("q9", _strict(False), fate="injected"),  # gold memory wrong too
            _row("q9", _strict(False), condition="gold_memory"),
            # Graded against the file's key: wrong, whatever the original key says.
            _row("q10", _strict(False, original=True), fate="evicted"),
            _row("q6", _strict(False), fate="never_proposed", lane_id="other"),
            _row("q7", _strict(False), fate="evicted", condition="none"),  # not from memory
            _row("q8", _strict(False), fate="evicted", kind="adversarial"),  # not headline
        ]
    )
    table = cause_table(rows, "strict").set_index("lane_id")
    assert list(table.index) == ["lane", "other"]
    lane = table.loc["lane"]
    assert (lane["answered"], lane["wrong"]) == (7, 6)
    assert (lane["evicted"], lane["answered_wrong"], lane["wrong_with_gold_memory"]) == (2, 2, 2)
    assert lane["never_proposed"] == 0
    other = table.loc["other"]
    assert (other["answered"], other["wrong"], other["never_proposed"]) == (1, 1, 1)
    assert cause_table(rows, "lenient").empty
    assert list(cause_table(rows, "lenient").columns) == ["lane_id", *CAUSES, "wrong", "answered"]


def test_answers_without_a_verdict_have_that_cause_and_the_causes_add_up() -> None:
    """An answer (or its gold-memory twin) no judge graded is counted wrong but was never found
    wrong: ``no_verdict``, never a cause that says why it was wrong. Each row declares the
    cause it must get."""
    refused = {"error": "connection refused"}
    declared: list[tuple[dict[str, Any], str | None]] = [
        (_row("q1", _strict(None), fate="injected"), "no_verdict"),
        (_row("q1", _strict(False), condition="gold_memory"), None),
        (_row("q2", _strict(None), fate="injected"), "no_verdict"),
        (_row("q2", _strict(None), condition="gold_memory"), None),
        # Judged wrong; its gold twin has no verdict: nothing says the gold memory fails too.
        (_row("q3", _strict(False), fate="injected"), "answered_wrong"),
        (_row("q3", _strict(None), condition="gold_memory"), None),
        (_row("q4", _strict(None), fate="evicted"), "no_verdict"),
        (_row("q5", None, fate="never_proposed", **refused), "no_verdict"),
        (_row("q6", _strict(False), fate="injected"), "answered_wrong"),
        (_row("q6", None, condition="gold_memory", **refused), None),
        (_row("q7", _strict(False), fate="injected"), "wrong_with_gold_memory"),
        (_row("q7", _strict(False), condition="gold_memory"), None),
        (_row("q8", _strict(True), fate="injected"), "right"),
        # No judge asked about an abstention on an answerable question: wrong by rule, graded.
        (_row("q9", None, fate="not_injected", abstained=True), "not_injected"),
        (
            _row(
                "q10",
                _strict(None),
                fate="below_threshold",
                evidence_fates={"g1": "below_threshold (importance 0.5 ≤ 0.7)"},
            ),
            "no_verdict",
        ),
    ]
    rows = pd.DataFrame([row for row, _ in declared])
    expected = Counter(cause for _, cause in declared if cause not in (None, "right"))
    lane = cause_table(rows, "strict").set_index("lane_id").loc["lane"]
    assert {c: int(lane[c]) for c in CAUSES if lane[c]} == dict(expected)
    memory = sum(1 for _, cause in declared if cause is not None)
    assert (lane["answered"], lane["wrong"]) == (memory, memory - 1)
    assert sum(int(lane[c]) for c in CAUSES) == lane["wrong"]
    # The evidence of an answer without a verdict is not listed as what kept it out.
    assert threshold_ratings(rows, "strict").empty


# --- cost and the interval note -------------------------------------------------------------


def test_read_and_write_cost_by_hand() -> None:
    answers = pd.DataFrame(
        [
            _row(
                "q1",
                {},
                prompt_tokens=10,
                completion_tokens=2,
                context_tokens=5,
                latency_s=1.0,
                cached=True,
            ),
            _row(
                "q2",
                {},
                prompt_tokens=20,
                completion_tokens=4,
                context_tokens=7,
                latency_s=2.0,
                cached=False,
            ),
            _row(
                "q1",
                {},
                condition="none",
                prompt_tokens=3,
                completion_tokens=1,
                context_tokens=0,
                latency_s=0.5,
                cached=True,
            ),
        ]
    )
    calls = pd.DataFrame(
        {
            "lane_id": ["lane"] * 4,
            "user_id": ["o1", "o1", "o1", "o2"],
            "sample": [0, 0, 1, 0],
            "prompt_tokens": [60, 40, 50, 200],
            "completion_tokens": [6, 4, 5, 0],
        }
    )
    table = qa_cost(answers, calls).set_index("condition")
    memory, none = table.loc["memory"], table.loc["none"]
    assert (memory["questions"], none["questions"]) == (2, 1)
    assert memory["read_tokens_per_question"] == pytest.approx((12 + 24) / 2)
    assert memory["context_tokens_per_question"] == pytest.approx(6.0)
    assert memory["read_latency_s_per_question"] == pytest.approx(1.5)
    assert (memory["cached"], none["cached"]) == (0.5, 1.0)
    assert none["read_tokens_per_question"] == pytest.approx(4.0)
    # Replays: o1 sample 0 110 tokens, o1 sample 1 55, o2 200: 365 / 3 per conversation.
    assert memory["write_tokens_per_conversation"] == pytest.approx(365 / 3)
    # Without samples each owner is one conversation: o1 165, o2 200.
    unsampled = qa_cost(answers, calls.drop(columns="sample"))
    assert unsampled["write_tokens_per_conversation"].iloc[0] == pytest.approx(182.5)
    nothing = qa_cost(answers, calls.iloc[0:0])
    assert nothing["write_tokens_per_conversation"].isna().all() and len(nothing) == 2
    assert nothing["write_tokens_per_conversation"].dtype == float
    # Conditions in the order the answers list them.
    assert list(qa_cost(answers.iloc[::-1], calls)["condition"]) == ["none", "memory"]


def _widths(*widths: float) -> pd.DataFrame:
    high = [0.2 + w for w in widths]
    return pd.DataFrame({"accuracy_lo": [0.2] * len(widths), "accuracy_hi": high})


def test_the_interval_note_names_the_median_width_below_twenty_owners() -> None:
    assert interval_note(pd.DataFrame(), 3) == ""
    assert interval_note(pd.DataFrame({"accuracy": [0.5]}), 3) == ""
    assert interval_note(_widths(math.nan), 3) == (
        "With 3 owner(s) there is no interval at all: every difference here is anecdotal."
    )
    # Narrow (median 0.1 < 0.2, the mean 0.3 is not) with 20 owners: nothing to say.
    assert interval_note(_widths(0.1, 0.1, 0.7), 20) == ""
    assert interval_note(_widths(0.19), 20) == ""
    assert interval_note(_widths(0.1, 0.1, 0.7), 19) == (
        "With 19 owners (conversations) the 95% intervals are wide: a median width of 10 "
        "points. Differences smaller than that, most per-category ones among them, are inside "
        "the noise; more owners narrow them, more questions per owner much less."
    )
    assert "median width of 70 points" in interval_note(_widths(0.7), 5)
    assert "median width of 20 points" in interval_note(_widths(0.2), 40)
