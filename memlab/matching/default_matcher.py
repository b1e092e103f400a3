"""The default fact matcher, and the word-embedding matcher it blends in.

:class:`DefaultMatcher` decides whether a stored fact states a gold fact in five steps, each
of which a careful reader also takes (see ``docs/matching.md`` for the rules and the
calibration):

1. **Read** both facts (:func:`memlab.matching.fact_reading.read_fact`): the claim and its
   support (reasons, consequences, later sentences), each clause's polarity and mood, the
   value slots; then **link** words that differ but are one word (abbreviations, clippings,
   derivations, similar words: :func:`memlab.matching.word_links.link_words`).
2. **Veto on values**: when both facts fill a slot (number, date, name, or a closed class such
   as diet or instrument) and each has a value the other lacks, they state different facts
   ("halal" vs "kosher", "two kids" vs "three kids", "Lisbon" vs "Porto", "PvE" vs "PvP").
3. **Veto on polarity and mood**: each stored claim clause is aligned with the gold claim
   clause it shares most tokens with (and back); opposite polarities on an aligned pair mean
   one fact denies the other ("Enjoys classical music" vs "I don't enjoy classical music"),
   and "wants" against "done" means a goal against its outcome ("Wants to pass the exam" vs
   "Passed the exam").
   A long stored fact that repeats the gold fact word for word but swaps one phrase is vetoed
   too: the swap is the difference ("... on weekends ..." / "... on weekdays ...";
   :func:`memlab.matching.near_copy.changed_wording`).
4. **Score** = ``gold_weight`` x *gold coverage* (share of the gold claim's tokens found in the
   stored fact, mixed with its least covered claim clause) + (1 - ``gold_weight``) x *stored
   coverage* (share of the stored claim's tokens found in the gold fact); with word embeddings
   installed, blended with their rescaled cosine similarity (English only).
5. A match needs ``score >= threshold``.

The parameters were tuned on the ``dev`` splits of the calibration sets only.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from memlab.core.jsondoc.similarity import normalize_text
from memlab.matching.base import MatchResult
from memlab.matching.embeddings import (
    Embedder,
    EmbeddingDuplicates,
    EmbeddingsUnavailableError,
    WordLlamaEmbedder,
)
from memlab.matching.fact_lexicon import PREF, token_weight
from memlab.matching.fact_reading import read_fact
from memlab.matching.fact_types import Clause, FactReading
from memlab.matching.near_copy import changed_wording
from memlab.matching.word_links import Links, link_words

__all__ = [
    "DefaultMatcher",
    "EmbeddingMatcher",
    "clear_shared_verdicts",
    "mood_conflict",
    "optional_embedder",
    "polarity_conflict",
    "value_conflict",
]

_MEMO_SIZE = 1_000_000
"""Verdicts kept per matcher configuration; the memo restarts when full. A sweep asks about
every (stored, gold) pair of an owner, about 400 per owner of 20 sessions with a fact each, so
1,000 owners need 400,000: a smaller memo restarts during the sweep, saves only the verdicts
decided since, and the replay from the cache decides the rest again. A verdict costs about
100 bytes besides its texts (measured on saved verdicts read back, whose pairs share their
texts: 95-104 bytes each for 100-300 owners), so a full memo holds about 100 MB."""

_PENDING_TEXTS = 20_000
"""Texts :meth:`DefaultMatcher.warm` lets wait for a pair to decide before it reads them."""
_WARM_LOCK = threading.RLock()

# Verdicts shared by the matchers of one configuration in this process: a verdict depends only
# on the two texts, the parameters and the embedding model, so the lanes of a sweep, a rerun
# from the response cache and a rescoring ask again for pairs already decided. Matchers with
# an embedder other than the bundled one keep their verdicts to themselves (its name need not
# say what it computes).
_SHARED: dict[tuple[Any, ...], dict[tuple[str, str], MatchResult]] = {}
_SHARED_LOCK = threading.Lock()


def clear_shared_verdicts() -> None:
    """Forget every shared verdict (benchmarks measure the matcher's cold cost with it)."""
    with _SHARED_LOCK:
        _SHARED.clear()


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
        clause_weight: Weight, within gold coverage, of the least covered claim clause
            (every coordinated claim must be stated) against all claim tokens.
        derivation_credit: Credit for a word matched by another form of it ("nauseous" for
            "nausea").
        embedding_weight: Weight of the rescaled embedding similarity in the blend.
        cosine_floor: Cosine similarity rescaled to 0 (unrelated facts sit below it).
        cosine_ceiling: Cosine similarity rescaled to 1.
        similar_word: Cosine similarity of two words' vectors from which they count as the
            same word (with embeddings; "film" / "movie").
        similar_credit: Credit for such a word.
    """

    embedder: Embedder | None = None
    threshold: float = 0.6
    gold_weight: float = 0.8
    clause_weight: float = 0.5
    derivation_credit: float = 0.75
    embedding_weight: float = 0.1
    cosine_floor: float = 0.3
    cosine_ceiling: float = 0.9
    similar_word: float = 0.8
    similar_credit: float = 0.75
    _vectors: _Vectors | None = field(default=None, init=False, repr=False)
    _verdicts: dict[tuple[str, str], MatchResult] = field(
        default_factory=dict, init=False, repr=False
    )
    _pending: list[list[str]] = field(default_factory=list, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.embedder is not None:
            self._vectors = _Vectors(EmbeddingDuplicates(self.embedder))
        key = self.memo_key
        if key is not None:
            with _SHARED_LOCK:
                self._verdicts = _SHARED.setdefault(key, {})

    @property
    def memo_key(self) -> tuple[Any, ...] | None:
        """What the verdicts depend on besides the texts and the code: the class, the
        embedding model and the parameters; None with an embedder other than the bundled one
        (its verdicts are not shared)."""
        if self.embedder is not None and type(self.embedder) is not WordLlamaEmbedder:
            return None
        params = tuple(
            (f.name, getattr(self, f.name)) for f in fields(self) if f.init and f.name != "embedder"
        )
        model = self.embedder.name if self.embedder is not None else None
        return (f"{type(self).__module__}.{type(self).__qualname__}", model, params)

    def decided(self) -> dict[tuple[str, str], MatchResult]:
        """A copy of the verdicts decided so far, by (stored, gold)."""
        return dict(self._verdicts)

    def remember(self, verdicts: Mapping[tuple[str, str], MatchResult]) -> None:
        """Add verdicts decided earlier (by a matcher of the same :attr:`memo_key` and code)."""
        if len(self._verdicts) + len(verdicts) > _MEMO_SIZE:
            self._verdicts.clear()
        self._verdicts.update(itertools.islice(verdicts.items(), _MEMO_SIZE))

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

    def warm(self, texts: Iterable[str]) -> None:
        """Read ``texts`` and embed them and their words in one batch, ahead of matching them
        (embedding texts one at a time costs several times as much).

        The batch waits for the first pair that is not memoised (each waiting batch is then
        read and embedded, in the order given, as it would have been here): a replay whose
        verdicts were all saved reads and embeds nothing."""
        self._pending.append(list(dict.fromkeys(texts)))
        if sum(map(len, self._pending)) > _PENDING_TEXTS:
            self._warm_pending()

    def _warm_pending(self) -> None:
        # A batch leaves the queue only once it is embedded, and under one lock: a thread
        # that finds texts waiting waits for them instead of embedding its pair alone.
        with _WARM_LOCK:
            while self._pending:
                try:
                    self._warm_now(self._pending[0])
                finally:  # a batch that fails is not tried again (as an eager warm)
                    del self._pending[0]

    def _warm_now(self, texts: list[str]) -> None:
        readings = [read_fact(text) for text in texts]
        if self._vectors is not None:
            english = [r for r in readings if not r.cjk]
            self._vectors.prepare(
                [*(r.text for r in english), *(f for r in english for f in r.form_of.values())]
            )

    def match(self, stored: str, gold: str) -> MatchResult:
        """Score ``stored`` against ``gold`` and say why it matches or not (memoised: a run
        asks about the same pairs after every session)."""
        key = (stored, gold)
        result = self._verdicts.get(key)
        if result is None:
            if self._pending:
                self._warm_pending()
            if len(self._verdicts) >= _MEMO_SIZE:
                self._verdicts.clear()
            result = self._verdicts[key] = self._match(stored, gold)
        return result

    def _match(self, stored: str, gold: str) -> MatchResult:
        if normalize_text(stored) == normalize_text(gold):
            return MatchResult(1.0, True, "same text")
        g, s = read_fact(gold), read_fact(stored)
        links = self._links(g, s)
        veto = value_conflict(g, s, links) or polarity_conflict(g, s, links)
        veto = veto or mood_conflict(g, s, links) or changed_wording(g, s, links)
        gold_cov = _gold_coverage(g, s.tokens, links, self.clause_weight)
        stored_cov = _coverage(s.core_tokens, g.tokens, links, gold=False)
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

    def _links(self, gold: FactReading, stored: FactReading) -> Links:
        return link_words(
            gold,
            stored,
            derivation_credit=self.derivation_credit,
            similarity=self._vectors.matrix if self._vectors is not None else None,
            similar_threshold=self.similar_word,
            similar_credit=self.similar_credit,
        )


class _Vectors:
    """Unit vectors per text: embedded once each (through the embeddings module's cache),
    then looked up without locking or stacking on every pair."""

    def __init__(self, source: EmbeddingDuplicates) -> None:
        self._source = source
        self._rows: dict[str, np.ndarray] = {}

    def cosine(self, a: str, b: str) -> float:
        self.prepare((a, b))
        return float(np.dot(self._rows[a], self._rows[b]))

    def matrix(self, a: Sequence[str], b: Sequence[str]) -> np.ndarray:
        """Cosine similarities of every text of ``a`` (rows) with every text of ``b``."""
        self.prepare([*a, *b])
        product: np.ndarray = (
            np.stack([self._rows[t] for t in a]) @ np.stack([self._rows[t] for t in b]).T
        )
        return product

    def prepare(self, texts: Iterable[str]) -> None:
        """Embed the texts not seen yet, in one batch (one call per text costs ~1 ms)."""
        missing = [t for t in dict.fromkeys(texts) if t not in self._rows]
        if missing:
            self._rows.update(zip(missing, self._source.vectors(missing), strict=True))


def _gold_coverage(
    gold: FactReading,
    stored_tokens: frozenset[str],
    links: Links,
    clause_weight: float,
) -> float:
    """Coverage of the gold claim's tokens, mixed with that of its least covered claim
    clause ("has a cat and a dog" is not stated by "has a cat"); of the best covered segment
    when the claim restates itself ("I don't like cats much, I'm a dog person")."""
    claim = [c for c in gold.clauses if not c.optional] or list(gold.clauses)
    best = 0.0
    for segment in sorted({c.segment for c in claim}):
        clauses = [c for c in claim if c.segment == segment]
        tokens = frozenset().union(*(c.tokens for c in clauses))
        overall = _coverage(tokens, stored_tokens, links, gold=True)
        weakest = min(_coverage(c.tokens, stored_tokens, links, gold=True) for c in clauses)
        best = max(best, (1 - clause_weight) * overall + clause_weight * weakest)
    return best


def _coverage(tokens: Iterable[str], other: frozenset[str], links: Links, *, gold: bool) -> float:
    """Weighted share of ``tokens`` found in ``other``, directly or through a link (1.0 when
    ``tokens`` is empty)."""
    total = found = 0.0
    for token in tokens:
        weight = token_weight(token)
        total += weight
        if token in other:
            found += weight
        else:
            found += weight * links.credit(token, other, gold=gold)
    return found / total if total else 1.0


def value_conflict(
    gold: FactReading, stored: FactReading, links: Links | None = None
) -> str | None:
    """Why the two facts name different values in the same slot, or None."""
    links = links or Links()
    # The gold fact's support may name values a stored fact leaves out or words otherwise
    # ("... so I'm usually awake until 3 am"): only the claim's values count.
    gold_values, stored_values = gold.claim_value_map, stored.value_map
    for reading, other, side in ((gold, stored_values, "gold"), (stored, gold.value_map, "stored")):
        if reading.subject and reading.subject not in other.get("relative", frozenset()):
            return f"subject: the {side} fact is about the user's {reading.subject}"
    for slot in sorted(gold_values.keys() & stored_values.keys()):
        ours, theirs = gold_values[slot], stored_values[slot]
        only_gold = {v for v in ours if not any(links.same(v, w) for w in theirs)}
        only_stored = {w for w in theirs if not any(links.same(v, w) for v in ours)}
        if only_gold and only_stored:
            return (
                f"value ({slot}): gold {', '.join(sorted(only_gold))} vs "
                f"stored {', '.join(sorted(only_stored))}"
            )
    return None


def polarity_conflict(
    gold: FactReading, stored: FactReading, links: Links | None = None
) -> str | None:
    """Why one fact denies what the other asserts, or None.

    Only clauses that carry the claim take part: not optional ones (reasons, examples) and
    not those made of values alone (an appended name or number). Two clauses are aligned
    when each is the other's best match by shared tokens (light words counting half, at least
    one whole token); an aligned pair of opposite polarity is a conflict.
    """
    found = _conflict(gold, stored, links or Links(), _opposite)
    if found is None:
        return None
    g, s = found
    gold_mood = "negative" if g.negative_against(s) else "positive"
    stored_mood = "negative" if s.negative_against(g) else "positive"
    return f"polarity: gold {gold_mood}, stored {stored_mood}"


def mood_conflict(gold: FactReading, stored: FactReading, links: Links | None = None) -> str | None:
    """Why one fact states a goal and the other does not: its outcome ("Wants to apply for
    the course" vs "Was accepted onto the course") or a plain fact ("Wants to pass the exam"
    vs "Is booked for the exam"); None otherwise (clauses aligned as for polarity)."""
    found = _conflict(gold, stored, links or Links(), _goal_and_other)
    if found is None:
        return None
    g, s = found
    return f"mood: gold {_MOODS[g.mood]}, stored {_MOODS[s.mood]}"


def _opposite(gold: Clause, stored: Clause) -> bool:
    return gold.negative_against(stored) != stored.negative_against(gold)


def _goal_and_other(gold: Clause, stored: Clause) -> bool:
    """A goal against its outcome, or against a plain fact that is no preference (a
    preference and a want are close: "Prefers to be called Sam" / "Wants to be called Sam")."""
    if gold.mood == stored.mood or "want" not in (gold.mood, stored.mood):
        return False
    other = stored if gold.mood == "want" else gold
    return other.mood == "done" or PREF not in other.tokens


_MOODS = {"want": "wants or plans it", "done": "says it was done", "": "says it is so"}
_PLAIN_VALUES = frozenset({"name", "number", "date"})
Differ = Callable[[Clause, Clause], bool]


def _conflict(
    gold: FactReading, stored: FactReading, links: Links, differ: Differ
) -> tuple[Clause, Clause] | None:
    """A gold claim clause and a stored claim clause that are each other's best match and
    ``differ``: every stored clause best matching the gold one differs from it, and every gold
    clause best matching that stored clause agrees with the gold one."""
    gold_clauses, stored_clauses = _claim_clauses(gold), _claim_clauses(stored)
    for g in gold_clauses:
        best_stored = _best(g, stored_clauses, links, gold=True)
        if not best_stored or not all(differ(g, s) for s in best_stored):
            continue
        for s in best_stored:
            back = _best(s, gold_clauses, links, gold=False)
            if g in back and not any(differ(c, s) != differ(g, s) for c in back):
                return g, s
    return None


def _claim_clauses(reading: FactReading) -> list[Clause]:
    values = frozenset().union(*(v for slot, v in reading.values if slot in _PLAIN_VALUES))
    return [c for c in reading.clauses if not c.optional and c.tokens - values]


def _best(clause: Clause, candidates: list[Clause], links: Links, *, gold: bool) -> list[Clause]:
    """The candidates sharing most tokens with ``clause`` (none when under one token)."""
    scored = []
    for candidate in candidates:
        shared = 0.0
        for token in clause.tokens:
            if token in candidate.tokens:
                shared += token_weight(token)
            else:
                shared += token_weight(token) * links.credit(token, candidate.tokens, gold=gold)
        scored.append((shared, candidate))
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
