"""Scores of one answer against a reference: token F1, BLEU-1, and whether it abstains.

The F1 and BLEU-1 of memory QA are computed as the papers that report them on LoCoMo compute
them, with NLTK (its Porter stemmer and word tokenizer, neither of which needs downloaded data):

- :func:`token_f1` is LoCoMo's answer F1: ``f1_score`` of ``task_eval/evaluation.py`` in
  ``snap-research/locomo``. Its ``normalize_answer`` lowercases, drops ASCII punctuation
  (``string.punctuation``), replaces the words ``a an the and`` by spaces (``\\b`` word
  boundaries of the ``regex`` module) and splits on whitespace; each token is stemmed by NLTK's
  ``PorterStemmer()``; the score is the F1 of the token multisets (0 when nothing is shared,
  also for two empty answers).
- :func:`multi_answer_f1` is LoCoMo's ``f1`` of its multi-hop category: both sides split on
  commas, each reference part takes its best :func:`token_f1` against a predicted part, and the
  parts are averaged.
- :func:`bleu1` is the ``bleu1`` of mem0's harness: ``calculate_bleu_scores`` of
  ``evaluation/metrics/utils.py`` in ``mem0ai/mem0`` (up to commit
  d85fcda0378e3e2ba8772705b075049484bd8fa8, the last before the harness moved out of that
  repository). Both texts are lowercased and split by ``nltk.word_tokenize`` (punctuation marks
  are tokens), then scored by NLTK's ``sentence_bleu`` with weights ``(1, 0, 0, 0)`` and
  ``SmoothingFunction().method1``: the brevity penalty (1 when the prediction has more tokens
  than the reference, else ``exp(1 - r / c)``) times the clipped unigram precision; 0 when no
  token is shared. Method 1 adds 0.1 to the counts of the n-gram orders with no match, and
  those orders weigh 0 here, so the smoothing never changes BLEU-1.
- :func:`mem0_f1` is the ``f1`` of the same harness's ``calculate_metrics``: lowercase, ``.``
  ``,`` ``!`` ``?`` become spaces, split on whitespace, F1 of the token *sets* (no stemming,
  no article removal, other punctuation stays inside its token).
- :func:`is_abstention` says whether an answer declines to answer ("I don't know", "not
  mentioned", "没有提到", ...). An answer that says so and then guesses still counts as an
  abstention, as LoCoMo's adversarial check counts it.

Where memlab's scores differ from these references:

- ``nltk.word_tokenize`` splits sentences with the English Punkt model, which is downloaded
  data. :func:`bleu_tokens` uses Punkt's algorithm without trained parameters, which places
  the same sentence breaks in lowercased text except after a word the English model lists as
  an abbreviation or collocation (``dr.``, ``mr.``, ``st.``, ``e.g.``, ...): there memlab
  splits the period off (``mr`` ``.``) where mem0's tokens keep it (``mr.``).
- A text over 64K characters (longer than any answer) is not split into sentences: NLTK's word
  tokenizer reads it in pieces of at most 64K characters, each cut at a whitespace after a
  letter or digit, so a period that ends a sentence inside it stays on its word. This keeps
  the cost linear (about 1 s per MB) and each call of NLTK's regular expressions far below
  NLTK's 5-second time limit.
- Tokens depend on the NLTK release, as the references' did: NLTK 3.10 splits dashes
  U+2012-U+2015 off and reads an apostrophe before a word differently from NLTK 3.9.
- Chinese text, which neither reference handles: each Chinese character (and each CJK
  punctuation or full-width mark) is a token of its own, for every score here, and
  :func:`token_f1` drops any Unicode punctuation inside a word that holds Chinese characters.
  Text without such characters is scored exactly as the references score it.
"""

from __future__ import annotations

import math
import re
import string
import unicodedata
from collections import Counter
from collections.abc import Iterator
from functools import cache, lru_cache
from typing import Any

import regex

from memlab.datasets.models import contains_cjk

__all__ = [
    "ABSTENTION_PATTERNS",
    "answer_tokens",
    "bleu1",
    "bleu_tokens",
    "is_abstention",
    "mem0_f1",
    "multi_answer_f1",
    "normalize_answer",
    "token_f1",
]

# LoCoMo's normalize_answer: ASCII punctuation goes, then the articles (and "and") with the
# word boundaries of the regex module, as its evaluation.py writes them.
_LOCOMO_PUNCTUATION = str.maketrans("", "", string.punctuation)
_ARTICLES = regex.compile(r"\b(a|an|the|and)\b")
_WORD = re.compile(r"\S+")
# mem0's simple_tokenize: these four marks become spaces, every other character stays.
_MEM0_SEPARATORS = str.maketrans(".,!?", "    ")


def _without_unicode_punctuation(word: str) -> str:
    return "".join(c for c in word if not unicodedata.category(c).startswith("P"))


def _drop_chinese_punctuation(match: re.Match[str]) -> str:
    word = match.group()
    return _without_unicode_punctuation(word) if contains_cjk(word) else word


def normalize_answer(text: str) -> str:
    """LoCoMo's normalisation: lowercase, no ASCII punctuation, no ``a an the and``, single
    spaces; a word holding Chinese characters also loses its Unicode punctuation."""
    text = text.lower().translate(_LOCOMO_PUNCTUATION)
    if contains_cjk(text):
        text = _WORD.sub(_drop_chinese_punctuation, text)
    return " ".join(_ARTICLES.sub(" ", text).split())


@cache
def _stemmer() -> Any:
    from nltk.stem import PorterStemmer

    return PorterStemmer()


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
    return token if contains_cjk(token) else str(_stemmer().stem(token))


def answer_tokens(text: str) -> list[str]:
    """The tokens :func:`token_f1` compares: normalised, split, Porter-stemmed."""
    tokens = [piece for word in normalize_answer(text).split() for piece in _split_cjk(word)]
    return [_stem(token) for token in tokens]


def _f1(shared: int, predicted: int, expected: int) -> float:
    if shared == 0:
        return 0.0
    precision, recall = shared / predicted, shared / expected
    return 2 * precision * recall / (precision + recall)


def token_f1(prediction: str, reference: str) -> float:
    """LoCoMo's token F1 of ``prediction`` against ``reference`` (see the module docstring)."""
    predicted, expected = answer_tokens(prediction), answer_tokens(reference)
    shared = sum((Counter(predicted) & Counter(expected)).values())
    return _f1(shared, len(predicted), len(expected))


def multi_answer_f1(prediction: str, reference: str) -> float:
    """LoCoMo's multi-hop F1: the mean over comma-separated reference parts of the best
    :func:`token_f1` against a comma-separated part of the prediction."""
    predicted = [p.strip() for p in prediction.split(",")]
    expected = [r.strip() for r in reference.split(",")]
    best = [max(token_f1(p, r) for p in predicted) for r in expected]
    return sum(best) / len(best)


def mem0_f1(prediction: str, reference: str) -> float:
    """The F1 of mem0's harness (``calculate_metrics``): F1 of the sets of lowercased words,
    ``. , ! ?`` counting as spaces; 0 when either side has no word."""
    predicted = {
        piece
        for word in prediction.lower().translate(_MEM0_SEPARATORS).split()
        for piece in _split_cjk(word)
    }
    expected = {
        piece
        for word in reference.lower().translate(_MEM0_SEPARATORS).split()
        for piece in _split_cjk(word)
    }
    if not predicted or not expected:
        return 0.0
    return _f1(len(predicted & expected), len(predicted), len(expected))


_LONG = 1 << 16
# The last whitespace after a letter or digit in a piece of a long text.
_LAST_CUT = re.compile(r".*[^\W_](\s)", re.DOTALL)


def _pieces(text: str, size: int = _LONG) -> Iterator[str]:
    """``text`` in pieces of at most ``size`` characters, each cut at its last whitespace
    after a letter or digit (where it has none, at ``size``)."""
    start = 0
    while len(text) - start > size:
        found = _LAST_CUT.match(text, start, start + size + 1)
        cut = found.start(1) if found is not None else start + size
        yield text[start:cut]
        start = cut
    yield text[start:]


@cache
def _nltk_tokenizers() -> tuple[Any, Any]:
    from nltk.tokenize.destructive import NLTKWordTokenizer
    from nltk.tokenize.punkt import PunktSentenceTokenizer

    # PunktSentenceTokenizer() has no trained parameters: nothing to download.
    return PunktSentenceTokenizer(), NLTKWordTokenizer()


def bleu_tokens(text: str) -> list[str]:
    """The tokens :func:`bleu1` compares: ``nltk.word_tokenize`` of the lowercased text (with
    the differences of the module docstring), Chinese characters split."""
    lowered = text.lower()
    sentences, words = _nltk_tokenizers()
    # Punkt and one word-tokenizer call per sentence cost ~5 s per MB: a text longer than any
    # answer is cut in pieces instead, which keeps every NLTK call short and the cost linear.
    parts = sentences.tokenize(lowered) if len(lowered) <= _LONG else _pieces(lowered)
    return [
        piece for part in parts for token in words.tokenize(part) for piece in _split_cjk(token)
    ]


def bleu1(prediction: str, reference: str) -> float:
    """mem0's BLEU-1 of ``prediction`` against one ``reference``, in [0, 1]: brevity penalty
    times clipped unigram precision, as NLTK's ``sentence_bleu`` computes it."""
    predicted, expected = bleu_tokens(prediction), bleu_tokens(reference)
    clipped = sum((Counter(predicted) & Counter(expected)).values())
    if clipped == 0:
        return 0.0
    c, r = len(predicted), len(expected)
    penalty = 1.0 if c > r else math.exp(1 - r / c)
    # exp(log(p)) as NLTK computes it (the weight-0 orders add 0 to the sum), to the last bit.
    return penalty * math.exp(math.log(clipped / c))


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
