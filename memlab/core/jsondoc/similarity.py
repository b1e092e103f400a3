"""Near-duplicate facts: the one lexical measure used by merge strategies and metrics.

Both the ``near_duplicate`` merge strategy (:mod:`memlab.core.jsondoc.merge`) and the duplicate
metrics (:func:`count_duplicates`, used by :mod:`memlab.scoring.metrics` and the reports) decide
"these two stored facts say the same thing" with :func:`near_duplicate_score`, so a strategy
is scored by the measure it uses.

The measure: both texts are reduced to *content tokens* (case-folded words of two or more
letters or digits, minus a small English stop-word list, with a trailing plural ``s`` removed;
every CJK character is a token of its own) and compared with the Dice coefficient
``2 |A ∩ B| / (|A| + |B|)``. Word order, case, punctuation and filler words do not matter.

Thresholds:

- :data:`NEAR_DUPLICATE_THRESHOLD` (0.8): two facts are near-duplicates when they share at
  least 80% of their content tokens on average; e.g. two 5-token facts differing in one word
  score 0.8 and count, two 4-token facts differing in one word score 0.75 and do not. This is
  the default of the ``near_duplicate`` merge strategy, of :func:`count_duplicates` and of the
  report's fact diff.

:func:`relevance_score` uses the same content tokens to say how much a stored fact bears on a
message (the cosine of the two token sets), which ranks facts for injection.

This measure compares stored facts with each other. Deciding whether a stored fact states a
gold fact is a different question (paraphrase, polarity, values): see
:mod:`memlab.matching.base`.
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

__all__ = [
    "NEAR_DUPLICATE_THRESHOLD",
    "DuplicateCounts",
    "content_tokens",
    "count_duplicates",
    "dice",
    "near_duplicate_score",
    "normalize_text",
    "relevance_score",
]

NEAR_DUPLICATE_THRESHOLD = 0.8
"""Dice score from which two stored facts are near-duplicates (see the module docstring)."""

_STOP_WORDS = """
a an the and or but of to in on at for with by from as is are was were be been being has
have had do does did this that these those it its they them their he she his her him i me my
we our you your user users s about into over after before up out not no so than then very
just also will would can could should may might must now
"""
_STOP = frozenset(_STOP_WORDS.split())
_WORD = re.compile(r"[a-z0-9]{2,}|[\u3400-\u9fff\uf900-\ufaff]")
_PUNCT = str.maketrans("", "", string.punctuation + "，。、！？；：“”‘’（）《》")


@lru_cache(maxsize=65536)
def normalize_text(text: str) -> str:
    """Casefold, drop punctuation and collapse whitespace (the "normalized" duplicate key)."""
    return " ".join(text.casefold().translate(_PUNCT).split())


@lru_cache(maxsize=65536)
def content_tokens(text: str) -> frozenset[str]:
    """Content tokens of ``text`` (see the module docstring)."""
    tokens = set()
    for token in _WORD.findall(text.casefold()):
        if token in _STOP:
            continue
        if len(token) > 3 and token.endswith("s") and not token.endswith("ss"):
            token = token[:-1]
        tokens.add(token)
    return frozenset(tokens)


def dice(a: str, b: str) -> float:
    """Dice coefficient of the content-token sets of ``a`` and ``b``, in [0, 1].

    Two texts without content tokens score 1.0 when their normalized forms are equal and 0.0
    otherwise.
    """
    ta, tb = content_tokens(a), content_tokens(b)
    if not ta and not tb:
        return 1.0 if normalize_text(a) == normalize_text(b) else 0.0
    return 2 * len(ta & tb) / (len(ta) + len(tb))


def near_duplicate_score(a: str, b: str) -> float:
    """How nearly two stored facts repeat each other (the Dice score of :func:`dice`)."""
    return dice(a, b)


def relevance_score(fact: str, message: str) -> float:
    """How much ``fact`` bears on ``message``: ``|F ∩ M| / sqrt(|F| |M|)`` over content tokens.

    0.0 when either has no content tokens. Unlike the Dice score, a long message does not
    drown a short fact that it fully mentions.
    """
    tf, tm = content_tokens(fact), content_tokens(message)
    if not tf or not tm:
        return 0.0
    return len(tf & tm) / math.sqrt(len(tf) * len(tm))


@dataclass(frozen=True)
class DuplicateCounts:
    """Stored facts that repeat an earlier stored fact, by strictness."""

    exact: int
    normalized: int
    near: int


def count_duplicates(
    contents: Sequence[str], near_threshold: float = NEAR_DUPLICATE_THRESHOLD
) -> DuplicateCounts:
    """Count facts that duplicate an earlier one: exactly, after normalization, or nearly.

    Each level includes the stricter ones (an exact duplicate is also normalized and near).
    "Nearly" means :func:`near_duplicate_score` ``>= near_threshold``.
    """
    exact = normalized = near = 0
    seen_exact: set[str] = set()
    seen_norm: set[str] = set()
    earlier: list[str] = []
    for content in contents:
        norm = normalize_text(content)
        if content in seen_exact:
            exact += 1
        if norm in seen_norm:
            normalized += 1
            near += 1
        elif any(near_duplicate_score(content, other) >= near_threshold for other in earlier):
            near += 1
        seen_exact.add(content)
        seen_norm.add(norm)
        earlier.append(content)
    return DuplicateCounts(exact=exact, normalized=normalized, near=near)
