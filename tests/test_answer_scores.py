"""Answer scores against values computed by hand: token F1, multi-answer F1, BLEU-1, abstention,
judge verdicts."""

from __future__ import annotations

import math

import pytest

from memlab.core.qa_prompts import ABSTAIN_REFERENCE
from memlab.qa import (
    answer_tokens,
    bleu1,
    is_abstention,
    multi_answer_f1,
    normalize_answer,
    parse_verdict,
    token_f1,
)
from memlab.simulation.qa import ABSTAIN_TEXT


def test_normalisation_is_locomos_plus_unicode_punctuation() -> None:
    assert normalize_answer("The Cat, and a DOG!") == "cat dog"
    assert normalize_answer("  Anderson's   band ") == "andersons band"
    assert normalize_answer("中文，专业术语保留英文") == "中文专业术语保留英文"
    assert normalize_answer("$5 + tax") == "5 tax"  # ASCII symbols go, as in LoCoMo


def test_tokens_are_porter_stems_and_chinese_characters() -> None:
    assert answer_tokens("Running flies, happily") == ["run", "fli", "happili"]
    assert answer_tokens("2026年12月") == ["2026", "年", "12", "月"]


@pytest.mark.parametrize(
    ("prediction", "reference", "expected"),
    [
        # pred [cat sat on mat], ref [cat ar on mat]: 3 shared -> P = R = 3/4
        ("The cat sat on the mat", "the cats are on a mat", 0.75),
        ("Berlin", "Munich", 0.0),
        # pred [7 may 2023], ref [on 7 may 2023]: P = 1, R = 3/4 -> 6/7
        ("7 May 2023", "On 7 May, 2023.", 6 / 7),
        ("running", "runs", 1.0),
        ("Tiago and Leonor", "Leonor, Tiago", 1.0),
        # pred [cat cat cat], ref [cat]: 1 shared -> P = 1/3, R = 1 -> 1/2
        ("the the cat cat cat", "cat", 0.5),
        # pred 4 tokens all in ref's 9 -> P = 1, R = 4/9 -> 8/13
        ("2026年12月", "答辩推迟到2026年12月", 8 / 13),
        ("", "Munich", 0.0),
        ("", "", 0.0),  # LoCoMo: nothing shared is 0, even for two empty answers
    ],
)
def test_token_f1(prediction: str, reference: str, expected: float) -> None:
    assert token_f1(prediction, reference) == pytest.approx(expected)


def test_multi_answer_f1_averages_the_best_match_of_each_reference_part() -> None:
    assert multi_answer_f1("Paris, Rome", "Rome, London") == pytest.approx(0.5)
    # "pottery class": best 2/3 against "pottery"; "museum": 2/3 against "museum trip"
    assert multi_answer_f1("museum trip, pottery", "pottery class, museum") == pytest.approx(2 / 3)


@pytest.mark.parametrize(
    ("prediction", "reference", "expected"),
    [
        ("the cat sat on the mat", "the cat is on the mat", 5 / 6),  # 5 of 6 unigrams, BP 1
        ("the cat", "the cat is on the mat", math.exp(1 - 6 / 2)),  # precision 1, BP e^-2
        ("the the the", "the cat", 1 / 3),  # clipped: one "the" counts
        ("Munich.", "munich", 1.0),  # case and punctuation do not count
        ("我住在上海", "我住在北京", 3 / 5),  # characters are words
        ("", "Munich", 0.0),
        ("Munich", "", 0.0),
    ],
)
def test_bleu1(prediction: str, reference: str, expected: float) -> None:
    assert bleu1(prediction, reference) == pytest.approx(expected)


ABSTAINING = [
    "I don't know.",
    "I don\u2019t know",
    "Not mentioned in the conversation.",
    "There is no information about that.",
    "The memory doesn't say.",
    "It cannot be determined from what I know.",
    "Unknown",
    "I'm not sure, maybe Paris.",
    "不知道",
    "对话中没有提到",
    "No lo sé.",
    ABSTAIN_TEXT,
    ABSTAIN_REFERENCE,
]
ANSWERING = [
    "Munich",
    "No",
    "She knows it is Munich.",
    "An unknown artist painted it.",
    "None of the above",
    "慕尼黑",
    "",
]


@pytest.mark.parametrize("answer", ABSTAINING)
def test_abstentions_are_detected(answer: str) -> None:
    assert is_abstention(answer)


@pytest.mark.parametrize("answer", ANSWERING)
def test_answers_are_not_abstentions(answer: str) -> None:
    assert not is_abstention(answer)


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [
        ('{"label": "CORRECT"}', True),
        ('```json\n{"label": "WRONG"}\n```', False),
        ("It names the same city. CORRECT", True),
        ("wrong", False),
        ('{"label": "CORRECT"} (it would be WRONG under a strict reading)', True),
        ("CORRECT or WRONG", None),
        ('{"label": "MAYBE"}', None),
        ("", None),
    ],
)
def test_parse_verdict(reply: str, verdict: bool | None) -> None:
    assert parse_verdict(reply) is verdict
