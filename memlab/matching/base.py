"""Deciding whether a stored fact states a gold fact: the matcher protocol and the results.

Every recall, precision and retracted-held number rests on a *matcher*: an object with
``covers(stored, gold) -> bool`` (the :class:`FactMatcher` protocol). Matchers that can say
why also have a ``name`` and ``match(stored, gold) -> MatchResult`` (score, verdict, reason).
The built-in ones, resolvable by name through :mod:`memlab.matching.matchers`:

- ``default`` (:class:`~memlab.matching.default_matcher.DefaultMatcher`): a fact's claim read
  apart from its support, lemmas and linked word forms, coverage in both directions,
  polarity, goal and value vetoes, word embeddings blended in when installed;
- ``lexical`` (:class:`LexicalMatcher`, below): memlab's first matcher, kept for comparison;
- ``embeddings`` (:class:`~memlab.matching.default_matcher.EmbeddingMatcher`): cosine similarity
  of the bundled word embeddings alone;
- ``judge:<backend>`` (:class:`~memlab.matching.judge.LLMJudgeMatcher`): an LLM asked under two
  judge prompts.

``memlab matcher calibrate`` measures each against the labeled pairs of the bundled sets
(``datasets/matching/pairs.jsonl``, ``longform.jsonl`` and ``preferences.jsonl``), or a run's
own labelling sheet (:mod:`memlab.matching.matcher_audit`); see ``docs/matching.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from memlab.core.jsondoc.similarity import content_tokens, normalize_text

__all__ = [
    "ExplainingMatcher",
    "FactMatcher",
    "LexicalMatcher",
    "MatchResult",
    "explain",
    "matcher_name",
]


@dataclass(frozen=True)
class MatchResult:
    """A matcher's verdict on one (stored, gold) pair.

    Attributes:
        score: The matcher's similarity in [0, 1] (0 after a veto).
        matched: Whether the stored fact states the gold fact.
        reason: A short explanation, e.g. ``"polarity: gold negative, stored positive"``.
    """

    score: float
    matched: bool
    reason: str


class FactMatcher(Protocol):
    """Decides whether a stored fact states a gold fact."""

    def covers(self, stored: str, gold: str) -> bool:
        """True when ``stored`` states what ``gold`` says."""
        ...


@runtime_checkable
class ExplainingMatcher(Protocol):
    """A :class:`FactMatcher` that has a name and explains its verdicts."""

    name: str

    def covers(self, stored: str, gold: str) -> bool:
        """True when ``stored`` states what ``gold`` says."""
        ...

    def match(self, stored: str, gold: str) -> MatchResult:
        """The verdict with its score and reason."""
        ...


def matcher_name(matcher: object) -> str:
    """The name reports use for ``matcher`` (its ``name``, else its class name)."""
    name = getattr(matcher, "name", None)
    return name if isinstance(name, str) and name else type(matcher).__name__


def explain(matcher: FactMatcher, stored: str, gold: str) -> MatchResult:
    """``matcher.match`` when it has one; else the bare verdict of ``covers``."""
    if isinstance(matcher, ExplainingMatcher):
        return matcher.match(stored, gold)
    matched = matcher.covers(stored, gold)
    return MatchResult(1.0 if matched else 0.0, matched, "verdict only (no explanation)")


@dataclass(frozen=True)
class LexicalMatcher:
    """Gold-token coverage: memlab's first matcher, kept for comparison.

    Both texts are reduced to content tokens
    (:func:`memlab.core.jsondoc.similarity.content_tokens`); a stored fact covers a gold fact when
    at least ``threshold`` (default 0.6) of the gold fact's tokens appear in it. Negations are stop
    words and values are plain tokens, so it accepts polarity flips ("Enjoys classical music" for "I
    don't enjoy classical music") and misses verbose paraphrases; see ``docs/matching.md`` for its
    calibration.
    """

    threshold: float = 0.6

    @property
    def name(self) -> str:
        """``lexical``, or ``lexical(threshold=...)`` when the threshold was changed."""
        return "lexical" if self.threshold == 0.6 else f"lexical(threshold={self.threshold:g})"

    def score(self, stored: str, gold: str) -> float:
        """Fraction of the gold fact's content tokens found in the stored fact."""
        gold_tokens = content_tokens(gold)
        if not gold_tokens:
            return 1.0 if normalize_text(gold) in normalize_text(stored) else 0.0
        return len(gold_tokens & content_tokens(stored)) / len(gold_tokens)

    def match(self, stored: str, gold: str) -> MatchResult:
        score = self.score(stored, gold)
        matched = score >= self.threshold
        sign = ">=" if matched else "<"
        return MatchResult(
            score, matched, f"gold tokens covered {score:.2f} {sign} {self.threshold:g}"
        )

    def covers(self, stored: str, gold: str) -> bool:
        return self.score(stored, gold) >= self.threshold
