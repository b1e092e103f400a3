"""What the default matcher's reader produces: a fact as clauses, values and word forms."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

__all__ = ["Clause", "FactReading"]


@dataclass(frozen=True)
class Clause:
    """One clause of a fact.

    Attributes:
        tokens: Canonical content tokens.
        negative: The clause denies or rejects what its tokens name.
        optional: Support for the claim rather than the claim: a reason, purpose, consequence,
            example, or a sentence after the first (need not be matched).
        mood: ``"want"`` when the clause says what the user wants, plans or hopes, ``"done"``
            when it says something was done (a past tense), else ``""``.
        flipped: Tokens read through an antonym ("large" as ``small``): each one the other
            fact also names negates the clause for that comparison.
        segment: Which restatement of the claim the clause belongs to (see
            :func:`memlab.matching.fact_reading.read_fact`).
    """

    tokens: frozenset[str]
    negative: bool
    optional: bool
    mood: str = ""
    flipped: frozenset[str] = frozenset()
    segment: int = 0

    def negative_against(self, other: Clause) -> bool:
        """The clause's polarity where it meets ``other``: its own, flipped once for each
        antonym-read token the two share."""
        return self.negative != (len(self.flipped & other.tokens) % 2 == 1)


@dataclass(frozen=True)
class FactReading:
    """A fact as the default matcher reads it (see :mod:`memlab.matching.fact_reading`)."""

    text: str
    cjk: bool
    clauses: tuple[Clause, ...]
    values: tuple[tuple[str, frozenset[str]], ...]
    claim_values: tuple[tuple[str, frozenset[str]], ...] = ()
    """The values named in the claim (not in its support)."""
    subject: str | None = None
    """The relative the fact is about when it opens with one ("My sister ...", "Her son ...",
    "Nadia's brother ..."); None when it is about the user."""
    forms: tuple[tuple[str, str], ...] = ()
    """(token, lemma) for each content token: the word form that derivations, clippings and
    word embeddings compare."""
    words: tuple[str, ...] = field(default=(), repr=False)
    """Every word of the fact in order, lower case, function words included (hyphenated words
    split), for reading abbreviations against their expansions."""
    acronyms: tuple[tuple[str, str], ...] = ()
    """(token, letters) for each word written as an abbreviation ("IBS", "PvP", "RPGs")."""
    compounds: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """(token, parts) for each hyphenated word ("sci-fi" -> ("sci", "fi"))."""

    @property
    def tokens(self) -> frozenset[str]:
        """Tokens of every clause."""
        return frozenset().union(*(c.tokens for c in self.clauses))

    @property
    def core_tokens(self) -> frozenset[str]:
        """Tokens of the clauses that are not optional (all tokens when every one is)."""
        core = frozenset().union(*(c.tokens for c in self.clauses if not c.optional))
        return core or self.tokens

    @cached_property
    def value_map(self) -> dict[str, frozenset[str]]:
        """Values by slot (``number``, ``date``, ``name``, or a closed class such as ``food``)."""
        return dict(self.values)

    @cached_property
    def claim_value_map(self) -> dict[str, frozenset[str]]:
        """Values by slot, of the claim clauses only."""
        return dict(self.claim_values)

    @cached_property
    def value_tokens(self) -> frozenset[str]:
        """Every token that fills a value slot."""
        return frozenset().union(*(v for _, v in self.values))

    @cached_property
    def form_of(self) -> dict[str, str]:
        """The lemma of each content token."""
        return dict(self.forms)
