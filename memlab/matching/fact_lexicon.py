"""Words as the default matcher's reader sees them: canonical tokens and the word lists.

:func:`canon` turns one lower-case word into its canonical token: a number as digits, else a
stem (``snowballstemmer``) of its lemma (``simplemma``), with British spellings and a few
synonyms folded first; stop words (function words, hedges and framings) become None. The word
lists (stop words, negations, aversion and liking words, antonyms, value classes ...) are data
in ``fact_words.yaml``, loaded once and keyed by canonical token in :func:`tables`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import yaml

__all__ = [
    "PREF",
    "WORDS_FILE",
    "Tables",
    "WordLists",
    "canon",
    "is_known_word",
    "lemma",
    "tables",
    "token_weight",
    "words",
]

PREF = "pref"
"""The token every liking or disliking word becomes (polarity tells them apart)."""

WORDS_FILE = "fact_words.yaml"
"""The word lists (stop words, negations, antonyms, synonyms, value classes ...), as data."""

_ORDINAL_SUFFIX = re.compile(r"^(\d+)(?:st|nd|rd|th)$")
_SUFFIX = {1: "st", 2: "nd", 3: "rd"}
_PUNCT = frozenset(',;:.!?()[]"')


@dataclass(frozen=True)
class WordLists:
    """``fact_words.yaml`` as loaded (plain words)."""

    stop: frozenset[str]
    negators: frozenset[str]
    synonyms: Mapping[str, str]
    numbers: Mapping[str, str]
    optional_openers: frozenset[str]
    after_comma_optional: frozenset[str]
    plain_openers: frozenset[str]
    reason_as_followers: frozenset[str]
    subject_followers: frozenset[str]
    irregular_past: frozenset[str]
    intent_nouns: frozenset[str]
    derivation_suffixes: tuple[str, ...]
    raw: Mapping[str, Any]


@lru_cache(maxsize=1)
def words() -> WordLists:
    """The word lists of ``fact_words.yaml`` (loaded once)."""
    text = resources.files("memlab.matching").joinpath(WORDS_FILE).read_text(encoding="utf-8")
    raw = yaml.safe_load(text)
    return WordLists(
        stop=frozenset(raw["stop"].split()) | frozenset(raw["framing"].split()),
        negators=frozenset(raw["negators"].split()),
        synonyms=dict(raw["synonyms"]),
        numbers={word: str(value) for word, value in raw["numbers"].items()},
        optional_openers=frozenset(raw["optional_openers"].split()),
        after_comma_optional=frozenset(raw["after_comma_optional"].split()),
        plain_openers=frozenset(raw["plain_openers"].split()),
        reason_as_followers=frozenset(raw["reason_as_followers"].split()),
        subject_followers=frozenset(raw["subject_followers"].split()),
        irregular_past=frozenset(raw["irregular_past"].split()),
        intent_nouns=frozenset(raw["intent_nouns"].split()),
        # Longest first, so "ation" is tried before "ion".
        derivation_suffixes=tuple(sorted(raw["derivation_suffixes"].split(), key=len)[::-1]),
        raw=raw,
    )


@lru_cache(maxsize=65536)
def canon(word: str) -> str | None:
    """The canonical token of one lower-case word (a stem or a number), None if a stop word."""
    lists = words()
    if word in lists.stop or word in _PUNCT:
        return None
    if word in lists.numbers:
        return lists.numbers[word]
    if word[0].isdigit():
        return _number(word)
    if len(word) < 2:
        return None
    base = lists.synonyms.get(word) or lemma(word)
    return _stem(lists.synonyms.get(base, base))


def _number(word: str) -> str:
    """Digits as written ("1,500" -> "1500", "10pm" -> "10"), ordinals as "3rd"."""
    ordinal = _ORDINAL_SUFFIX.match(word)
    if ordinal:
        number = int(ordinal.group(1))
        suffix = "th" if number % 100 in (11, 12, 13) else _SUFFIX.get(number % 10, "th")
        return f"{number}{suffix}"
    digits = re.match(r"[\d.,:]+", word)
    number_text = digits.group().rstrip(".,:") if digits else word
    return number_text.replace(",", "")


@lru_cache(maxsize=65536)
def lemma(word: str) -> str:
    """The lemma of a lower-case English word (``simplemma``)."""
    found: str = _simplemma().lemmatize(word, lang="en")
    return found.casefold()


def is_known_word(word: str) -> bool:
    """Whether ``simplemma``'s English dictionary has ``word``."""
    return bool(_simplemma().is_known(word, lang="en"))


def _stem(word: str) -> str:
    stem: str = _stemmer().stemWord(word)
    return stem


@lru_cache(maxsize=1)
def _simplemma() -> Any:
    import simplemma  # imported on first use: its dictionary takes ~0.1 s to load

    return simplemma


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    import snowballstemmer

    return snowballstemmer.stemmer("english")


@dataclass(frozen=True)
class Tables:
    """The word lists keyed by canonical token (built on first use)."""

    negative: Mapping[str, str]
    positive: frozenset[str]
    light: frozenset[str]
    antonyms: Mapping[str, str]
    implies: Mapping[str, str]
    dates: frozenset[str]
    class_of: Mapping[str, str]
    intent: frozenset[str]


@lru_cache(maxsize=1)
def tables() -> Tables:
    """The word lists of ``fact_words.yaml`` keyed by canonical token."""
    raw = words().raw

    def key(word: str) -> str:
        if word == PREF:
            return PREF
        token = canon(word)
        return token if token is not None else word

    negative = {key(w): key(t) for w, t in raw["negative"].items()}
    return Tables(
        negative=negative,
        positive=frozenset(key(w) for w in raw["positive"].split()) - set(negative),
        light=frozenset(key(w) for w in raw["light"].split()),
        antonyms={key(w): key(t) for w, t in raw["antonyms"].items()},
        implies={key(w): key(t) for w, t in raw["implies"].items()},
        dates=frozenset(key(w) for w in raw["dates"].split()),
        class_of={
            key(word): slot for slot, members in raw["classes"].items() for word in members.split()
        },
        intent=frozenset(key(w) for w in raw["intent"].split()),
    )


def token_weight(token: str) -> float:
    """How much a token counts in coverage: 0.5 for ``pref`` and light verbs, else 1."""
    return 0.5 if token == PREF or token in tables().light else 1.0
