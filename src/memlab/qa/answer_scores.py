"""Scores of one answer against a reference: token F1, BLEU-1, and whether it abstains.

- :func:`token_f1` is LoCoMo's answer F1 (its ``evaluation.py``, built on SQuAD's): lowercase,
  drop punctuation, drop the words ``a an the and``, split on whitespace, Porter-stem each
  token, then F1 of the token multisets (0 when nothing is shared, also for two empty
  answers). LoCoMo stems with NLTK's Porter stemmer; memlab uses ``snowballstemmer``'s Porter
  algorithm (no data download), which stems ordinary words the same way. Two additions for
  text LoCoMo does not have: punctuation is any Unicode punctuation (so ``，`` goes too), and
  Chinese characters are one token each (a Chinese answer has no spaces).
- :func:`multi_answer_f1` is LoCoMo's score of its multi-hop category: both sides split on
  commas, each reference part takes its best F1 against a predicted part, and the parts are
  averaged.
- :func:`bleu1` is sentence BLEU with unigrams only, computed by ``sacrebleu`` on the words
  of :func:`bleu_tokens` (lowercased, punctuation dropped, Chinese characters one token each,
  no stemming: the tokens of mem0's BLEU-1), as a number in [0, 1].
- :func:`is_abstention` says whether an answer declines to answer ("I don't know", "not
  mentioned", "没有提到", ...). An answer that says so and then guesses still counts as an
  abstention, as LoCoMo's adversarial check counts it.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any

from memlab.datasets.models import contains_cjk

if TYPE_CHECKING:
    from sacrebleu.metrics.bleu import BLEU

__all__ = [
    "ABSTENTION_PATTERNS",
    "answer_tokens",
    "bleu1",
    "bleu_tokens",
    "is_abstention",
    "multi_answer_f1",
    "normalize_answer",
    "token_f1",
]

_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
_ASCII_PUNCTUATION = frozenset(string.punctuation)


def _is_punctuation(char: str) -> bool:
    return char in _ASCII_PUNCTUATION or unicodedata.category(char).startswith("P")


def _no_punctuation(text: str) -> str:
    return "".join(c for c in text.lower() if not _is_punctuation(c))


def normalize_answer(text: str) -> str:
    """LoCoMo's normalisation: lowercase, no punctuation, no ``a an the and``, single spaces."""
    return " ".join(_ARTICLES.sub(" ", _no_punctuation(text)).split())


@cache
def _stemmer() -> Any:
    import snowballstemmer

    return snowballstemmer.stemmer("porter")


def _split_cjk(token: str) -> list[str]:
    """``2026年12月`` -> ``2026 年 12 月``: each Chinese character is a token of its own."""
    if not contains_cjk(token):
        return [token]
    parts: list[str] = []
    run = ""
    for char in token:
        if contains_cjk(char):
            parts.extend([run, char] if run else [char])
            run = ""
        else:
            run += char
    return [*parts, run] if run else parts


@lru_cache(maxsize=1 << 16)
def _stem(token: str) -> str:
    # Answers repeat their words (names, places, "know"): each is stemmed once.
    return token if contains_cjk(token) else str(_stemmer().stemWord(token))


def answer_tokens(text: str) -> list[str]:
    """The tokens :func:`token_f1` compares: normalised, split, Porter-stemmed."""
    tokens = [piece for word in normalize_answer(text).split() for piece in _split_cjk(word)]
    return [_stem(token) for token in tokens]


def token_f1(prediction: str, reference: str) -> float:
    """LoCoMo's token F1 of ``prediction`` against ``reference`` (see the module docstring)."""
    predicted, expected = answer_tokens(prediction), answer_tokens(reference)
    same = sum((Counter(predicted) & Counter(expected)).values())
    if same == 0:
        return 0.0
    precision = same / len(predicted)
    recall = same / len(expected)
    return 2 * precision * recall / (precision + recall)


def multi_answer_f1(prediction: str, reference: str) -> float:
    """LoCoMo's multi-hop F1: the mean over comma-separated reference parts of the best
    :func:`token_f1` against a comma-separated part of the prediction."""
    predicted = [p.strip() for p in prediction.split(",")]
    expected = [r.strip() for r in reference.split(",")]
    best = [max(token_f1(p, r) for p in predicted) for r in expected]
    return sum(best) / len(best)


def bleu_tokens(text: str) -> list[str]:
    """The words :func:`bleu1` compares: lowercased, no punctuation, Chinese split."""
    return [piece for word in _no_punctuation(text).split() for piece in _split_cjk(word)]


@cache
def _bleu() -> BLEU:
    from sacrebleu.metrics.bleu import BLEU

    # The text arrives as space-separated tokens; sacrebleu only splits on the spaces.
    return BLEU(max_ngram_order=1, effective_order=True, tokenize="none")


def bleu1(prediction: str, reference: str) -> float:
    """Sentence BLEU-1 of ``prediction`` against one ``reference``, in [0, 1] (sacrebleu:
    clipped unigram precision times the brevity penalty; 0 when either side has no words)."""
    predicted, expected = bleu_tokens(prediction), bleu_tokens(reference)
    if not predicted or not expected:
        return 0.0
    score = _bleu().sentence_score(" ".join(predicted), [" ".join(expected)]).score
    return float(score) / 100.0


_SOURCE = r"(?:memory|memories|conversations?|context|records?|notes|history|it)"
_SILENT = r"(?:mentioned|stated|specified|said|discussed|recorded|shared)"
_NOT_BE = (
    r"(?:isn't|is not|wasn't|was not|aren't|are not|weren't|were not|is never|was never|"
    r"were never|hasn't been|has not been|has never been|haven't been|have not been)"
)

ABSTENTION_PATTERNS: tuple[str, ...] = (
    # First person: "I don't know", "I can't tell", "we cannot say", "I couldn't find it".
    r"\b(i|we)\s+(don't|do not|can't|cannot|can not|couldn't|could not)\s+"
    r"(know|tell|say|recall|remember|determine|find|answer|confirm|be sure)\b",
    r"\b(i|we)\s+(don't|do not|didn't|did not)\s+have\s+(that|this|the|any|enough|such)?\s*"
    r"(information|info|details?|data|records?|memory)\b",
    r"\bi\s*('m|am)\s+(not\s+(sure|certain|able to (answer|tell|say|determine|recall))|"
    r"unsure|uncertain|unable to (answer|tell|say|determine|find|recall))\b",
    r"\b(i|we)\s+(have|had)\s+no\s+(idea|information|info|record|memory|details?|way)\b",
    # An answer that opens with it: "Not sure.", "No idea", "Don't know", "Not mentioned".
    r"^\W*(not\s+(sure|certain|known|clear|mentioned|stated|specified|said|recorded)|unsure|"
    r"uncertain|unclear|no idea|(don't|do not) know|hard to say)\b",
    # The source is silent: "not mentioned in", "it was never said", "the memory doesn't say".
    rf"\bnot {_SILENT} (in|by|anywhere)\b",
    rf"\b{_NOT_BE} {_SILENT}\b",
    rf"\b{_SOURCE} (doesn't|does not|didn't|did not|don't|do not|never) "
    r"(say|says|mention|specify|state|include|contain|hold|record|tell)\b",
    rf"\bnothing (in|from) (the|my|our|your) {_SOURCE}\b",
    rf"\bnothing (is|was|has been) {_SILENT}\b",
    r"\bno (information|info|mention|record|data)\b",
    r"\bno details? (about|on|of|regarding|given|provided|available)\b",
    r"\b(not enough|insufficient) (information|info|context|details?|data)\b",
    r"\bunable to (answer|determine|tell|find|say|recall)\b",
    r"\b(can't|cannot|can not) be (determined|known|answered|found|said|confirmed)\b",
    r"\b(it is|it's|that is|that's|this is) (unclear|uncertain|not clear|not known)\b",
    r"\b(is|remains) unknown\b",
    r"^\W*(unknown|n/?a|none)\W*$",
    r"不知道|不清楚|没有提到|未提及|没有提及|无法确定|无法回答|没有相关信息|没有信息|未知",
    r"\bno (lo )?s[ée]\b|\bno se menciona\b|\bno (hay|tengo) informaci[oó]n\b",
)
"""What an abstention says, as case-insensitive regular expressions (English, Chinese,
Spanish); :func:`is_abstention` matches them anywhere in the answer. A doubt or a silence
counts when it is the answerer's own ("I'm not sure", "I have no idea", an answer opening
with "Not sure") or its source's ("not mentioned in", "the memory doesn't say", "there is no
record"); the same words about someone in the answer do not ("they don't know each other",
"he had no idea about the party", "she was not sure at first").
"""

_ABSTENTION = re.compile("|".join(f"(?:{p})" for p in ABSTENTION_PATTERNS), re.IGNORECASE)


def is_abstention(answer: str) -> bool:
    """True when ``answer`` declines to answer (an empty reply is no answer, not an abstention)."""
    text = answer.replace("\u2019", "'")
    return _ABSTENTION.search(text) is not None
