"""Two long facts worded alike but for one phrase: that phrase is what they disagree on.

A memory that keeps the user's words stores long preferences nearly as said. When a stored
fact repeats most of a long gold fact word for word and swaps one phrase for another, the swap
is the difference a reader sees: "... on weekends ..." for "... on weekdays ...", "... pick
Python ..." for "... pick Go ...", "... I'd rather not ..." for "... I'd rather ...". Token
coverage counts such a near copy as a match (every other word is shared), so the default
matcher vetoes it (:func:`changed_wording`).

A swap counts when the two sides of a changed span each hold a content token that no token of
the other side equals or is linked to (:class:`~memlab.matching.word_links.Links`: a synonym
or another form of the word is the same word), or when a negator is added, dropped or
swapped. Short facts are left to the other rules: in a short fact one swapped word is often
a paraphrase ("a logistics firm" / "a logistics company"), and the shared frame of two short
facts is too small to say that the rest is the same.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from memlab.matching.fact_lexicon import canon, words
from memlab.matching.fact_types import FactReading
from memlab.matching.word_links import Links

__all__ = ["MIN_WORDS", "SHARED_FRAME", "changed_wording"]

MIN_WORDS = 12
"""Words each fact needs for the rule to apply (a long fact: a claim with a condition or a
reason)."""

SHARED_FRAME = 0.6
"""Share of the longer fact's words that must be shared, in order, with the other fact."""


def changed_wording(gold: FactReading, stored: FactReading, links: Links) -> str | None:
    """Why ``stored`` is ``gold`` with one phrase swapped (see the module docstring), or None."""
    a, b = gold.words, stored.words
    if gold.cjk or stored.cjk or min(len(a), len(b)) < MIN_WORDS:
        return None
    diff = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    shared = sum(block.size for block in diff.get_matching_blocks())
    if shared < SHARED_FRAME * max(len(a), len(b)):
        return None
    negators = words().negators
    for op, i1, i2, j1, j2 in diff.get_opcodes():
        if op == "equal":
            continue
        ours, theirs = a[i1:i2], b[j1:j2]
        if negators.intersection(ours) != negators.intersection(theirs):
            return f"changed wording: negation {_quote(ours)} vs {_quote(theirs)}"
        if op == "replace" and _swapped(ours, theirs, gold, stored, links):
            return f"changed wording: gold {_quote(ours)} vs stored {_quote(theirs)}"
    return None


def _swapped(
    ours: Sequence[str], theirs: Sequence[str], gold: FactReading, stored: FactReading, links: Links
) -> bool:
    """Each side holds a content token the other side neither has nor links to."""
    gold_tokens = [t for w in ours if (t := canon(w)) is not None and t in gold.tokens]
    stored_tokens = [t for w in theirs if (t := canon(w)) is not None and t in stored.tokens]

    def linked(g: str, s: str) -> bool:
        return g == s or links.same(g, s) or links.credit(g, (s,), gold=True) > 0

    return any(not any(linked(g, s) for s in stored_tokens) for g in gold_tokens) and any(
        not any(linked(g, s) for g in gold_tokens) for s in stored_tokens
    )


def _quote(span: Sequence[str]) -> str:
    return repr(" ".join(span)) if span else "(nothing)"
