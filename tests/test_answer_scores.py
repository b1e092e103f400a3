"""Answer scores against values computed by hand: LoCoMo's token F1 and multi-answer F1, mem0's
BLEU-1 and F1, abstention, judge verdicts. BLEU-1 below is brevity penalty x clipped unigram
precision: BP = 1 when the prediction has more tokens (c) than the reference (r), else
exp(1 - r/c); precision = shared tokens (each counted at most as often as the reference has
it) / c."""

from __future__ import annotations

import math

import pytest

from memlab.qa import (
    answer_tokens,
    bleu1,
    bleu_tokens,
    is_abstention,
    mem0_f1,
    multi_answer_f1,
    normalize_answer,
    parse_verdict,
    token_f1,
)
from memlab.qa.qa_prompts import ABSTAIN_REFERENCE
from memlab.simulation.qa_replies import ABSTAIN_TEXT


def test_normalisation_is_locomos() -> None:
    assert normalize_answer("The Cat, and a DOG!") == "cat dog"
    assert normalize_answer("  Anderson's   band ") == "andersons band"
    assert normalize_answer("$5 + tax") == "5 tax"  # ASCII symbols go, as in LoCoMo
    # LoCoMo drops string.punctuation only: a curly apostrophe stays in its word.
    assert normalize_answer("Caroline\u2019s") == "caroline\u2019s"
    # A word holding Chinese characters also loses its Unicode punctuation.
    assert normalize_answer("中文，专业术语保留英文") == "中文专业术语保留英文"


def test_tokens_are_nltk_porter_stems_and_chinese_characters() -> None:
    assert answer_tokens("Running flies, happily") == ["run", "fli", "happili"]
    # NLTK's PorterStemmer (its default NLTK_EXTENSIONS mode) maps these irregular forms
    # itself, where the original Porter algorithm gives "dy", "ly" and "new".
    assert answer_tokens("dying lying news") == ["die", "lie", "news"]
    assert answer_tokens("2026年12月") == ["2026", "年", "12", "月"]


@pytest.mark.parametrize(
    ("prediction", "reference", "expected"),
    [
        # pred [cat sat on mat], ref [cat are on mat]: 3 shared -> P = R = 3/4
        ("The cat sat on the mat", "the cats are on a mat", 0.75),
        ("Berlin", "Munich", 0.0),
        # pred [7 may 2023], ref [on 7 may 2023]: P = 1, R = 3/4 -> 6/7
        ("7 May 2023", "On 7 May, 2023.", 6 / 7),
        # pred [she went on 8 may 2023], ref [8 may 2023]: P = 3/6, R = 1 -> 2/3
        ("She went on 8 May 2023.", "8 May 2023", 2 / 3),
        ("running", "runs", 1.0),
        ("dying", "die", 1.0),  # both stem to "die"
        ("news", "new", 0.0),  # "news" stays "news"
        # "caroline’s" keeps its curly apostrophe, "carolines" has none: nothing shared
        ("Caroline\u2019s", "Caroline's", 0.0),
        # pred [3 children], ref [3]: P = 1/2, R = 1 -> 2/3; "three" is not "3"
        ("3 children", "3", 2 / 3),
        ("three", "3", 0.0),
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
    # reference parts [7 may 2023] and [8 may 2023]: the first scores 1 against the first
    # part; the second shares [may 2023] with either part -> P = R = 2/3; mean (1 + 2/3) / 2
    assert multi_answer_f1("7 May 2023, 9 May 2023", "7 May 2023, 8 May 2023") == pytest.approx(
        5 / 6
    )


@pytest.mark.parametrize(
    ("prediction", "reference", "expected"),
    [
        # sets {munich} and {munich}: the period is a separator
        ("Munich.", "munich", 1.0),
        # {7 may 2023} against {on 7 may 2023}: P = 1, R = 3/4 -> 6/7
        ("7 May 2023", "On 7 May, 2023.", 6 / 7),
        # sets: {the cat} against {cat}: P = 1/2, R = 1 -> 2/3 (no article removal)
        ("the the cat", "cat", 2 / 3),
        ("running", "runs", 0.0),  # no stemming
        # {paris; rome} against {paris rome}: ";" stays on its word -> P = R = 1/2
        ("Paris; Rome", "paris rome", 0.5),
        # {caroline's dog} against {caroline's}: P = 1/2, R = 1 -> 2/3
        ("Caroline's dog", "caroline's", 2 / 3),
        ("", "Munich", 0.0),
        ("  ", "Munich", 0.0),
        ("Munich", "", 0.0),
    ],
)
def test_mem0_f1(prediction: str, reference: str, expected: float) -> None:
    assert mem0_f1(prediction, reference) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("prediction", "reference", "expected"),
    [
        ("the cat sat on the mat", "the cat is on the mat", 5 / 6),  # 5 of 6 unigrams, BP 1
        ("the cat", "the cat is on the mat", math.exp(1 - 6 / 2)),  # precision 1, BP e^-2
        ("the the the", "the cat", 1 / 3),  # clipped: one "the" counts
        # [munich .] against [munich]: c = 2 > r = 1 -> BP 1; precision 1/2
        ("Munich.", "munich", 0.5),
        # [munich] against [munich .]: precision 1; BP exp(1 - 2/1) = e^-1
        ("munich", "Munich.", math.exp(-1)),
        # [7 may 2023] against [on 7 may , 2023 .]: precision 3/3; BP exp(1 - 6/3) = e^-1
        ("7 May 2023", "On 7 May, 2023.", math.exp(-1)),
        # [on 7 may , 2023 .] against [7 may 2023]: c = 6 > r = 3 -> BP 1; precision 3/6
        ("On 7 May, 2023.", "7 May 2023", 0.5),
        # [she has 3 children .] against [3]: BP 1; precision 1/5
        ("She has 3 children.", "3", 1 / 5),
        ("three", "3", 0.0),
        # [pottery , painting] against [painting , pottery , camping]: all 3 shared
        # (one "," of two) -> precision 1; BP exp(1 - 5/3)
        ("Pottery, painting", "painting, pottery, camping", math.exp(1 - 5 / 3)),
        # NLTK splits contractions: [i do n't know] against [do n't]: BP 1; precision 2/4
        ("I don't know", "don't", 0.5),
        # two sentences, each period split off: [he moved . then he left .] against
        # [he moved]: "he" clipped to 1, "moved" 1 -> precision 2/7, BP 1
        ("He moved. Then he left.", "he moved", 2 / 7),
        # no bigram matches: method 1 smooths that order to 0.1, whose weight is 0
        ("paris rome", "rome paris", 1.0),
        ("munich", "munich", 1.0),  # no bigram at all: the same
        ("我住在上海", "我住在北京", 3 / 5),  # characters are words
        ("", "Munich", 0.0),
        ("Munich", "", 0.0),
    ],
)
def test_bleu1(prediction: str, reference: str, expected: float) -> None:
    assert bleu1(prediction, reference) == pytest.approx(expected)


def test_bleu1_splits_a_known_abbreviation_where_mem0s_tokens_keep_it() -> None:
    # Punkt without the English model ends a sentence after "dr.": [dr . smith] against
    # [dr smith]: c = 3 > r = 2, precision 2/3. mem0's tokens [dr. smith] would give 1/2.
    assert bleu_tokens("Dr. Smith") == ["dr", ".", "smith"]
    assert bleu1("Dr. Smith", "dr smith") == pytest.approx(2 / 3)


BLEU_PAIRS = [
    ("Caroline went to the LGBTQ support group on 7 May 2023.", "7 May 2023"),
    ('She said: "it\'s running well!" (mostly)', "running"),
    ("Pottery, painting and camping; maybe hiking...", "pottery, camping"),
    ("The week before 9 June 2023", "The week before 9 June 2023"),
    ("I don't know.", "Not mentioned"),
    ("Mr. and Mrs. Lee moved in 2022. They left in 2023!", "2022"),
]


@pytest.mark.parametrize(("prediction", "reference"), BLEU_PAIRS)
def test_bleu1_is_nltks_sentence_bleu_with_mem0s_settings(prediction: str, reference: str) -> None:
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

    expected = sentence_bleu(
        [bleu_tokens(reference)],
        bleu_tokens(prediction),
        weights=(1, 0, 0, 0),
        smoothing_function=SmoothingFunction().method1,
    )
    assert bleu1(prediction, reference) == expected


TEXTS = [
    'Caroline said, "I went to the LGBTQ support group on 7 May, 2023." Then she left!',
    "He can't go -- cannot, really... (maybe) [next week]; she'd gonna try: 3:30 pm?",
    "It's 'quoted' and ``quoted'' too. Dr. Smith met J. K. Rowling at 5.50 p.m. today.",
    "Prices: $5, 10% off & more @ #1. Wanna know? Gimme a sec! Lemme see.",
    "Line one.\nLine two without a period\n\tand a tab. The end.",
]


@pytest.mark.parametrize("text", TEXTS)
def test_bleu_tokens_are_word_tokenize_with_punkt_untrained(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import nltk
    import nltk.tokenize
    from nltk.tokenize.punkt import PunktSentenceTokenizer

    # word_tokenize with its sentence splitter swapped for Punkt without trained parameters
    # (the English model is downloaded data this machine does not have).
    untrained = PunktSentenceTokenizer()
    monkeypatch.setattr(
        nltk.tokenize, "sent_tokenize", lambda t, language="english": untrained.tokenize(t)
    )
    assert bleu_tokens(text) == nltk.word_tokenize(text.lower())


def test_a_long_text_is_read_in_pieces_without_losing_a_token() -> None:
    from nltk.tokenize.destructive import NLTKWordTokenizer

    # Over 64K characters: no sentence split, pieces cut at a whitespace after a letter or
    # digit. Every inner period stays on its word, as NLTK's tokenizer leaves it in one call.
    text = " ".join(TEXTS) * 300
    assert len(text) > 1 << 16
    assert bleu_tokens(text) == NLTKWordTokenizer().tokenize(text.lower())
    # No whitespace at all: cut at 65,536 characters.
    assert bleu_tokens("a" * 70_000) == ["a" * 65_536, "a" * (70_000 - 65_536)]


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
