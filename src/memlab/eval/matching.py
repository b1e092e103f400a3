"""Matching stored facts to gold facts, and finding duplicates among stored facts.

The default :class:`LexicalMatcher` is deliberately simple and documented so numbers can be
reasoned about: both texts are reduced to content tokens (lower-cased words of two or more
letters or digits minus a small English stop-word list, a trailing plural ``s`` removed; every
CJK character is a token of its own), and a stored fact *covers* a gold fact when at least
``threshold`` (default 0.6) of the gold fact's tokens appear in the stored fact. Coverage is
asymmetric on purpose: models often write longer facts ("The user works as ...").

Near-duplicates among stored facts use the symmetric Dice coefficient of the same token sets
(default ``near_duplicate`` 0.8). Any object with a ``covers(stored, gold) -> bool`` method may
replace the matcher; :class:`LLMJudgeMatcher` asks a model instead.
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

from memlab.backends.base import Backend, CompletionRequest, GenerationParams

__all__ = [
    "FactMatcher",
    "LLMJudgeMatcher",
    "LexicalMatcher",
    "content_tokens",
    "count_duplicates",
    "dice",
    "normalize_text",
]

_STOP_WORDS = """
a an the and or but of to in on at for with by from as is are was were be been being has
have had do does did this that these those it its they them their he she his her him i me my
we our you your user users s about into over after before up out not no so than then very
just also will would can could should may might must now
"""
_STOP = frozenset(_STOP_WORDS.split())
_WORD = re.compile(r"[a-z0-9]{2,}|[\u3400-\u9fff\uf900-\ufaff]")
_PUNCT = str.maketrans("", "", string.punctuation + "，。、！？；：“”‘’（）《》")


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
    """Dice coefficient of the content-token sets of ``a`` and ``b`` (0 when both empty)."""
    ta, tb = content_tokens(a), content_tokens(b)
    if not ta and not tb:
        return 1.0 if normalize_text(a) == normalize_text(b) else 0.0
    return 2 * len(ta & tb) / (len(ta) + len(tb))


class FactMatcher(Protocol):
    """Decides whether a stored fact states a gold fact."""

    def covers(self, stored: str, gold: str) -> bool:
        """True when ``stored`` states what ``gold`` says."""
        ...


@dataclass(frozen=True)
class LexicalMatcher:
    """Gold-token coverage matcher (see the module docstring)."""

    threshold: float = 0.6

    def score(self, stored: str, gold: str) -> float:
        """Fraction of the gold fact's content tokens found in the stored fact."""
        gold_tokens = content_tokens(gold)
        if not gold_tokens:
            return 1.0 if normalize_text(gold) in normalize_text(stored) else 0.0
        return len(gold_tokens & content_tokens(stored)) / len(gold_tokens)

    def covers(self, stored: str, gold: str) -> bool:
        return self.score(stored, gold) >= self.threshold


@dataclass(frozen=True)
class DuplicateCounts:
    """Stored facts that repeat an earlier stored fact, by strictness."""

    exact: int
    normalized: int
    near: int


def count_duplicates(contents: Sequence[str], near_threshold: float = 0.8) -> DuplicateCounts:
    """Count facts that duplicate an earlier one: exactly, after normalization, or nearly.

    Each level includes the stricter ones (an exact duplicate is also normalized and near).
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
        elif any(dice(content, other) >= near_threshold for other in earlier):
            near += 1
        seen_exact.add(content)
        seen_norm.add(norm)
        earlier.append(content)
    return DuplicateCounts(exact=exact, normalized=normalized, near=near)


_JUDGE_PROMPT = """Does the STORED memory fact state the GOLD fact about the user (same meaning,
possibly in other words or with more detail)? Answer with one word: yes or no.

GOLD: {gold}
STORED: {stored}
Answer:"""


class LLMJudgeMatcher:
    """Ask an LLM whether a stored fact states a gold fact (yes/no), with a lexical pre-filter.

    Pairs that share no content token are rejected without a call, and every verdict is
    memoised, so scoring a run costs one call per plausible (stored, gold) pair. Wrap the
    backend in a :class:`memlab.backends.CachedBackend` to make judged metrics reproducible.

    Args:
        backend: Any :class:`memlab.backends.Backend`.
        max_tokens: Completion budget for the one-word answer.
    """

    def __init__(self, backend: Backend, *, max_tokens: int = 4) -> None:
        self.backend = backend
        self.max_tokens = max_tokens
        self._verdicts: dict[tuple[str, str], bool] = {}
        self.calls = 0

    def covers(self, stored: str, gold: str) -> bool:
        key = (stored, gold)
        if key in self._verdicts:
            return self._verdicts[key]
        verdict = False
        if content_tokens(stored) & content_tokens(gold) or normalize_text(gold) in normalize_text(
            stored
        ):
            request = CompletionRequest(
                messages=[
                    {"role": "user", "content": _JUDGE_PROMPT.format(gold=gold, stored=stored)}
                ],
                params=GenerationParams(max_tokens=self.max_tokens),
            )
            self.calls += 1
            answer = self.backend.complete(request).text.strip().casefold()
            verdict = answer.startswith("yes")
        self._verdicts[key] = verdict
        return verdict
