"""Words of two facts that the default matcher counts as one word although they differ.

Exact canonical tokens (:func:`memlab.matching.fact_lexicon.canon`) already fold inflections,
British spellings and a few synonyms. :func:`link_words` finds four more kinds of link between
the tokens of a gold fact and a stored fact, each with a credit in (0, 1]:

- **abbreviations**: a word written as an abbreviation ("IBS", "PvP", "RPGs", "WFH") and the
  consecutive words of the other fact whose initials spell it ("irritable bowel syndrome",
  "player versus player", "role-playing games", "work from home"); function words may be
  skipped. Credit 1.
- **clippings**: a word of 4+ letters that begins a longer word of the other fact ("keto" /
  "ketogenic", "carbs" / "carbohydrates"), and hyphenated clippings whose parts begin
  consecutive words ("sci-fi" / "science fiction", "rom-coms" / "romantic comedies"). Credit 1.
- **derivations**: two words whose roots agree once a derivational suffix and a final vowel
  are taken off, or one of which is the other's root ("nausea" / "nauseous", "wool" /
  "woollen", "humid" / "humidity", "garden" / "gardener"); the suffixes are data in
  ``fact_words.yaml``. With embeddings the two words' vectors must also be close (a cosine
  of 0.5: "series" / "serious" share a root by accident). Credit ``derivation_credit``.
- **similar words**: with word embeddings, two content words whose vectors have a cosine of at
  least ``similar_threshold`` ("film" / "movie"). Credit ``similar_credit``.

Values (names, numbers, dates, class members) link only by abbreviation or clipping, never
by derivation or similarity: "halal" and "kosher" are different diets however close their
vectors, and "vegetarian" is not a form of "vegetable".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING

from memlab.matching.fact_lexicon import canon, is_known_word, words
from memlab.matching.fact_types import FactReading

if TYPE_CHECKING:
    import numpy as np

__all__ = ["Links", "SimilarityMatrix", "derivation_root", "derived", "link_words", "spells"]

SimilarityMatrix = Callable[[Sequence[str], Sequence[str]], "np.ndarray"]
"""Cosine similarities of two lists of words (lemmas): a matrix, rows for the first list."""

_MIN_ROOT = 3
_MIN_CLIPPED = 4
_CLIPPING_SIMILARITY = 0.6
_DERIVATION_SIMILARITY = 0.5


@dataclass
class Links:
    """Links between the tokens of a gold fact and those of a stored fact.

    ``gold[t]`` maps a gold token to the stored tokens it is linked to, with the credit of each
    link; ``stored`` is the same from the stored side.
    """

    gold: dict[str, dict[str, float]] = field(default_factory=dict)
    stored: dict[str, dict[str, float]] = field(default_factory=dict)
    forms: set[tuple[str, str]] = field(default_factory=set)
    """(gold token, stored token) linked as forms of one word (not by similarity)."""

    def add(self, gold_token: str, stored_token: str, credit: float, *, form: bool) -> None:
        if gold_token == stored_token:
            return
        if form:
            self.forms.add((gold_token, stored_token))
        for side, a, b in (
            (self.gold, gold_token, stored_token),
            (self.stored, stored_token, gold_token),
        ):
            known = side.setdefault(a, {})
            known[b] = max(credit, known.get(b, 0.0))

    def credit(self, token: str, other: Iterable[str], *, gold: bool) -> float:
        """Credit of ``token`` (a gold token when ``gold``) against the other side's tokens."""
        linked = (self.gold if gold else self.stored).get(token)
        if not linked:
            return 0.0
        return max((c for t, c in linked.items() if t in other), default=0.0)

    def same(self, gold_token: str, stored_token: str) -> bool:
        """Whether the two tokens are equal or forms of one word (values compare this way)."""
        return gold_token == stored_token or (gold_token, stored_token) in self.forms


def link_words(
    gold: FactReading,
    stored: FactReading,
    *,
    derivation_credit: float,
    similarity: SimilarityMatrix | None = None,
    similar_threshold: float = 1.0,
    similar_credit: float = 0.0,
) -> Links:
    """Every link between the tokens of ``gold`` and ``stored`` (see the module docstring).

    ``similarity`` gives the cosine similarities of two lists of words (word embeddings);
    without it, clippings of known words and similar words are not linked, and derivations
    are not checked against the vectors.
    """
    links = Links()
    if gold.cjk or stored.cjk:
        return links
    _abbreviations(gold, stored, links, gold_side=True)
    _abbreviations(stored, gold, links, gold_side=False)
    gold_forms, stored_forms = gold.form_of, stored.form_of
    # Numbers never link: "eight" and "eighteen" are two numbers.
    loose_gold = [t for t in gold_forms if t not in stored_forms and not t[0].isdigit()]
    loose_stored = [t for t in stored_forms if t not in gold_forms and not t[0].isdigit()]
    if not loose_gold or not loose_stored:
        return links
    cosines = (
        similarity([gold_forms[t] for t in loose_gold], [stored_forms[t] for t in loose_stored])
        if similarity is not None
        else None
    )
    values = gold.value_tokens | stored.value_tokens
    for i, g in enumerate(loose_gold):
        g_form = gold_forms[g]
        for j, s in enumerate(loose_stored):
            s_form = stored_forms[s]
            cosine = float(cosines[i, j]) if cosines is not None else None
            if _clipped(g_form, s_form, cosine) or _clipped(s_form, g_form, cosine):
                links.add(g, s, 1.0, form=True)
            elif g in values or s in values:
                continue  # values link as abbreviations and clippings only
            elif derived(g_form, s_form) and (cosine is None or cosine >= _DERIVATION_SIMILARITY):
                links.add(g, s, derivation_credit, form=True)
            elif cosine is not None and cosine >= similar_threshold:
                links.add(g, s, similar_credit, form=False)
    return links


def _abbreviations(short: FactReading, long: FactReading, links: Links, *, gold_side: bool) -> None:
    """Link each abbreviation or hyphenated clipping of ``short`` to the words of ``long``
    that spell it."""
    spelled = [(token, list(letters)) for token, letters in short.acronyms]
    spelled += [(token, list(parts)) for token, parts in short.compounds]
    for token, parts in spelled:
        span = spells(parts, long.words)
        if span is None:
            continue
        for word in long.words[span[0] : span[1]]:
            other = _token_of(long, word)
            if other is None:
                continue
            if gold_side:
                links.add(token, other, 1.0, form=True)
            else:
                links.add(other, token, 1.0, form=True)


def _token_of(reading: FactReading, word: str) -> str | None:
    token = canon(word)
    if token is not None and token in reading.form_of:
        return token
    # A part of a hyphenated word: the token of the whole word holds it.
    for candidate, form in reading.forms:
        if word in form and len(word) >= 2:
            return candidate
    return None


def spells(parts: Sequence[str], text_words: Sequence[str]) -> tuple[int, int] | None:
    """The span ``(start, end)`` of consecutive ``text_words`` whose beginnings spell
    ``parts`` in order (each part the beginning of one word), function words in between
    skipped or used; None when there is none. A span has at least two words."""
    stop = words().stop
    for start in range(len(text_words)):
        if not _begins(text_words[start], parts[0]):
            continue
        end = _spell_from(parts, 1, text_words, start + 1, stop)
        if end is not None and end - start >= 2:
            return start, end
    return None


def _spell_from(
    parts: Sequence[str], part: int, text_words: Sequence[str], index: int, stop: frozenset[str]
) -> int | None:
    if part == len(parts):
        return index
    while index < len(text_words):
        word = text_words[index]
        if _begins(word, parts[part]):
            end = _spell_from(parts, part + 1, text_words, index + 1, stop)
            if end is not None:
                return end
        if word not in stop:
            return None
        index += 1
    return None


def _begins(word: str, part: str) -> bool:
    """``word`` begins with ``part``; a one-letter part may also be the second letter after
    a vowel ("UX" for "user experience")."""
    if word.startswith(part):
        return True
    return len(part) == 1 and len(word) > 2 and word[0] in "aeiou" and word[1] == part


def _clipped(short: str, long: str, cosine: float | None) -> bool:
    """``short`` is a clipping of ``long`` ("keto" of "ketogenic", "carb" of "carbohydrate"):
    it begins ``long``, which is at least 1.6 times as long, and it is no word of its own (4+
    letters), or (with embeddings) its vector is close to that of ``long`` ("vet" /
    "veterinarian"; but "work" / "workshop" are two words)."""
    if len(short) < 3 or len(long) < 1.6 * len(short) or not long.startswith(short):
        return False
    if len(short) >= _MIN_CLIPPED and not is_known_word(short):
        return True
    return cosine is not None and cosine >= _CLIPPING_SIMILARITY


def derived(a: str, b: str) -> bool:
    """Whether two word forms are forms of one word: the same root, or one is the other's
    root ("garden" / "gardener", "danger" / "dangerous")."""
    root_a, root_b = derivation_root(a), derivation_root(b)
    return root_a in (root_b, b) or a == root_b


@lru_cache(maxsize=65536)
def derivation_root(form: str) -> str:
    """The root of a word form once a derivational suffix and final vowels are taken off
    ("nauseous" -> "naus", "woollen" -> "wool", "humidity" -> "humid")."""
    root = form
    for suffix in words().derivation_suffixes:
        if root.endswith(suffix) and len(root) - len(suffix) >= _MIN_ROOT:
            root = root[: -len(suffix)]
            break
    while len(root) > _MIN_ROOT and root[-1] in "aeiouy":
        root = root[:-1]
    if len(root) > _MIN_ROOT and root[-1] == root[-2]:  # "wooll" -> "wool"
        root = root[:-1]
    return root
