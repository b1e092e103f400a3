"""The default fact matcher, and the word-embedding matcher it blends in.

:class:`DefaultMatcher` decides whether a stored fact states a gold fact in four steps, each
of which a careful reader also takes (see ``docs/matching.md`` for the rules and the
calibration):

1. **Read** both facts (:func:`memlab.matching.fact_reading.read_fact`): canonical tokens per
   clause, each clause's polarity, and the value slots.
2. **Veto on values**: when both facts fill a slot (number, date, name, or a closed class such
   as diet or instrument) and each has a value the other lacks, they state different facts
   ("halal" vs "kosher", "two kids" vs "three kids", "Lisbon" vs "Porto").
3. **Veto on polarity**: each stored clause is aligned with the gold clause it shares most
   tokens with (and each required gold clause with its stored clause); opposite polarities on
   an aligned pair mean one fact denies the other ("Enjoys classical music" vs "I don't enjoy
   classical music").
4. **Score** = ``gold_weight`` x *gold coverage* (share of the gold fact's required tokens
   found in the stored fact) + (1 - ``gold_weight``) x *stored coverage* (share of the stored
   fact's tokens found in the gold fact); with word embeddings installed, blended with their
   rescaled cosine similarity (English only). A match needs ``score >= threshold``.

The parameters were tuned on the ``dev`` split of the calibration set only.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, fields

import numpy as np

from memlab.core.similarity import normalize_text
from memlab.matching.base import MatchResult
from memlab.matching.embeddings import Embedder, EmbeddingDuplicates, EmbeddingsUnavailableError
from memlab.matching.fact_reading import Clause, FactReading, read_fact, token_weight

__all__ = [
    "DefaultMatcher",
    "EmbeddingMatcher",
    "optional_embedder",
    "polarity_conflict",
    "value_conflict",
]

_MEMO_SIZE = 200_000
"""Verdicts kept per matcher (a few tens of MB at most); the memo restarts when full."""
_PREFIX_CREDIT = 0.75
"""Credit for a token that shares a long prefix with a token of the other fact
("nausea"/"nauseous"), where stemming leaves two forms of one word."""


def optional_embedder() -> Embedder | None:
    """The bundled word embeddings when the ``embeddings`` extra is installed, else None."""
    from memlab.matching.embeddings import WordLlamaEmbedder

    try:
        return WordLlamaEmbedder()
    except EmbeddingsUnavailableError:
        return None


@dataclass
class DefaultMatcher:
    """memlab's default matcher (see the module docstring).

    Attributes:
        embedder: Word embeddings to blend in (None: lexical reading only). Build it with
            :func:`memlab.matching.matchers.default_matcher` to get the bundled ones when
            installed.
        threshold: Score from which a stored fact states the gold fact.
        gold_weight: Weight of gold coverage against stored coverage.
        clause_weight: Weight, within gold coverage, of the least covered required clause
            (every coordinated claim must be stated) against all required tokens.
        embedding_weight: Weight of the rescaled embedding similarity in the blend.
        cosine_floor: Cosine similarity rescaled to 0 (unrelated facts sit below it).
        cosine_ceiling: Cosine similarity rescaled to 1.
    """

    embedder: Embedder | None = None
    threshold: float = 0.6
    gold_weight: float = 0.8
    clause_weight: float = 0.5
    embedding_weight: float = 0.1
    cosine_floor: float = 0.3
    cosine_ceiling: float = 0.9
    _vectors: _Vectors | None = field(default=None, init=False, repr=False)
    _verdicts: dict[tuple[str, str], MatchResult] = field(
        default_factory=dict, init=False, repr=False
    )

    def __post_init__(self) -> None:
        if self.embedder is not None:
            self._vectors = _Vectors(EmbeddingDuplicates(self.embedder))

    @property
    def name(self) -> str:
        """``default`` with embeddings, ``default-lexical`` without (names in the registry),
        followed by any parameter changed from its default, e.g. ``default(threshold=0.7)``."""
        base = "default" if self.embedder is not None else "default-lexical"
        changed = [
            f"{f.name}={getattr(self, f.name):g}"
            for f in fields(self)
            if isinstance(f.default, float) and getattr(self, f.name) != f.default
        ]
        return f"{base}({', '.join(changed)})" if changed else base

    def covers(self, stored: str, gold: str) -> bool:
        return self.match(stored, gold).matched

    def match(self, stored: str, gold: str) -> MatchResult:
        """Score ``stored`` against ``gold`` and say why it matches or not (memoised: a run
        asks about the same pairs after every session)."""
        key = (stored, gold)
        result = self._verdicts.get(key)
        if result is None:
            if len(self._verdicts) >= _MEMO_SIZE:
                self._verdicts.clear()
            result = self._verdicts[key] = self._match(stored, gold)
        return result

    def _match(self, stored: str, gold: str) -> MatchResult:
        if normalize_text(stored) == normalize_text(gold):
            return MatchResult(1.0, True, "same text")
        g, s = read_fact(gold), read_fact(stored)
        veto = value_conflict(g, s) or polarity_conflict(g, s)
        gold_cov = _gold_coverage(g, s.tokens, self.clause_weight)
        stored_cov = _coverage(s.core_tokens, g.tokens)
        score = self.gold_weight * gold_cov + (1 - self.gold_weight) * stored_cov
        parts = [f"coverage gold {gold_cov:.2f} stored {stored_cov:.2f}"]
        # Embeddings: English only, and not needed once a veto has decided.
        if self._vectors is not None and not (veto or g.cjk or s.cjk):
            cosine = self._vectors.cosine(stored, gold)
            span = self.cosine_ceiling - self.cosine_floor
            semantic = min(1.0, max(0.0, (cosine - self.cosine_floor) / span))
            score = (1 - self.embedding_weight) * score + self.embedding_weight * semantic
            parts.append(f"embeddings {cosine:.2f}")
        if veto:
            return MatchResult(0.0, False, f"{veto} ({', '.join(parts)})")
        matched = score >= self.threshold
        sign = ">=" if matched else "<"
        return MatchResult(
            score, matched, f"{', '.join(parts)}: {score:.2f} {sign} {self.threshold:g}"
        )


class _Vectors:
    """Unit vectors per text: embedded once each (through the embeddings module's cache),
    then looked up without locking or stacking on every pair."""

    def __init__(self, source: EmbeddingDuplicates) -> None:
        self._source = source
        self._rows: dict[str, np.ndarray] = {}

    def cosine(self, a: str, b: str) -> float:
        return float(np.dot(self._row(a), self._row(b)))

    def _row(self, text: str) -> np.ndarray:
        row = self._rows.get(text)
        if row is None:
            row = self._rows[text] = self._source.vectors([text])[0]
        return row


def _gold_coverage(gold: FactReading, stored_tokens: frozenset[str], clause_weight: float) -> float:
    """Coverage of the gold fact's required tokens, mixed with that of its least covered
    required clause: "has a cat and a dog" is not stated by "has a cat"."""
    overall = _coverage(gold.core_tokens, stored_tokens)
    clauses = [c for c in gold.clauses if not c.optional] or list(gold.clauses)
    weakest = min((_coverage(c.tokens, stored_tokens) for c in clauses), default=overall)
    return (1 - clause_weight) * overall + clause_weight * weakest


def _coverage(tokens: Iterable[str], other: frozenset[str]) -> float:
    """Weighted share of ``tokens`` found in ``other`` (1.0 when ``tokens`` is empty)."""
    total = found = 0.0
    for token in tokens:
        weight = token_weight(token)
        total += weight
        if token in other:
            found += weight
        elif len(token) >= 5 and any(_share_prefix(token, o) for o in other):
            found += weight * _PREFIX_CREDIT
    return found / total if total else 1.0


def _share_prefix(a: str, b: str) -> bool:
    """Two stems with a common prefix of 5+ characters covering 80% of the shorter one."""
    if len(b) < 5 or a[:5] != b[:5]:
        return False
    common = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        common += 1
    return common >= 0.8 * min(len(a), len(b))


def value_conflict(gold: FactReading, stored: FactReading) -> str | None:
    """Why the two facts name different values in the same slot, or None."""
    gold_values, stored_values = gold.value_map(), stored.value_map()
    for reading, other, side in ((gold, stored_values, "gold"), (stored, gold_values, "stored")):
        if reading.subject and reading.subject not in other.get("relative", frozenset()):
            return f"subject: the {side} fact is about the user's {reading.subject}"
    for slot in sorted(gold_values.keys() & stored_values.keys()):
        only_gold = gold_values[slot] - stored_values[slot]
        only_stored = stored_values[slot] - gold_values[slot]
        if only_gold and only_stored:
            return (
                f"value ({slot}): gold {', '.join(sorted(only_gold))} vs "
                f"stored {', '.join(sorted(only_stored))}"
            )
    return None


def polarity_conflict(gold: FactReading, stored: FactReading) -> str | None:
    """Why one fact denies what the other asserts, or None.

    Only clauses that carry the claim take part: not optional ones (reasons, examples) and
    not those made of values alone (an appended name or number). Two clauses are aligned
    when each is the other's best match by shared tokens (light words counting half, at least one
    whole token); an aligned pair of opposite polarity is a conflict.
    """
    gold_clauses, stored_clauses = _claim_clauses(gold), _claim_clauses(stored)
    for g in gold_clauses:
        best_stored = _best(g, stored_clauses)
        if not best_stored or any(s.negative == g.negative for s in best_stored):
            continue
        for s in best_stored:
            back = _best(s, gold_clauses)
            if g in back and all(c.negative == g.negative for c in back):
                gold_mood = "negative" if g.negative else "positive"
                stored_mood = "negative" if s.negative else "positive"
                return f"polarity: gold {gold_mood}, stored {stored_mood}"
    return None


_PLAIN_VALUES = frozenset({"name", "number", "date"})


def _claim_clauses(reading: FactReading) -> list[Clause]:
    values = frozenset().union(*(v for slot, v in reading.values if slot in _PLAIN_VALUES))
    return [c for c in reading.clauses if not c.optional and c.tokens - values]


def _best(clause: Clause, candidates: list[Clause]) -> list[Clause]:
    """The candidates sharing most tokens with ``clause`` (none when under one token)."""
    scored = [(sum(token_weight(t) for t in clause.tokens & c.tokens), c) for c in candidates]
    top = max((score for score, _ in scored), default=0.0)
    return [c for score, c in scored if score == top] if top >= 1.0 else []


@dataclass
class EmbeddingMatcher:
    """Cosine similarity of the bundled word embeddings alone (the ``embeddings`` matcher).

    Averaged word vectors ignore negation and word order, so this matcher accepts polarity
    flips; it is here to show what the embeddings contribute on their own.

    Attributes:
        embedder: Any :class:`~memlab.matching.embeddings.Embedder`.
        threshold: Cosine similarity from which a stored fact states the gold fact (tuned on
            the dev split).
    """

    embedder: Embedder
    threshold: float = 0.6
    name: str = "embeddings"
    _vectors: _Vectors = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._vectors = _Vectors(EmbeddingDuplicates(self.embedder))

    def covers(self, stored: str, gold: str) -> bool:
        return self.match(stored, gold).matched

    def match(self, stored: str, gold: str) -> MatchResult:
        cosine = self._vectors.cosine(stored, gold)
        matched = cosine >= self.threshold
        sign = ">=" if matched else "<"
        return MatchResult(cosine, matched, f"cosine {cosine:.2f} {sign} {self.threshold:g}")
