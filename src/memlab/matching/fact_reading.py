"""How the default matcher reads a fact: content tokens, clauses with a polarity, value slots.

:func:`read_fact` turns a fact into a :class:`FactReading`:

- **Clauses.** The text is cut at punctuation and at connectives. Each clause has canonical
  content tokens (lemmatized by ``simplemma``, stemmed by ``snowballstemmer``, with British
  spellings, number words and a few synonyms folded), a polarity and an *optional* flag.
  Clauses that give a reason, purpose, consequence or example (``because``, ``since``, ``so``,
  ``which``, ``, especially``, ``, like`` ...) are optional: a stored fact need not repeat them
  (the compound-fact rule of ``docs/matching.md``).
- **Polarity.** A clause is negative when it holds an odd number of negations: negators (not,
  never, no, without, no longer, non-, -free), negative verbs (dislike, hate, avoid, refuse,
  quit, stop, allergic, afraid, ...), the object of ``instead of`` / ``rather than`` /
  ``prefer X over Y`` / ``prefer X to Y``, and antonym folding (``large`` is read as "not
  small", ``warm`` as "not cold", ...), so "prefers large breeds" and "doesn't like small
  dogs" read alike. Liking and disliking verbs both become the token ``pref``, so the two
  differ only in polarity.
- **Value slots.** Numbers (digits and number words), dates (months, weekdays, seasons,
  next/last), proper nouns (capitalized words not starting a sentence) and small closed
  classes (diets and foods, instruments, sports, animals, colours, relatives, vehicles, ...).

Chinese (any CJK character) is read as character bigrams after removing the subject (我, 用户,
...) and polarity words (不, 没, 讨厌, 喜欢, ...); digits and Chinese numerals are values, and
``3月8日`` is a date.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import yaml

__all__ = ["PREF", "WORDS_FILE", "Clause", "FactReading", "read_fact", "token_weight"]

PREF = "pref"
"""The token every liking or disliking verb becomes (polarity tells them apart)."""

WORDS_FILE = "fact_words.yaml"
"""The word lists (stop words, negations, antonyms, synonyms, value classes ...), as data."""

# Multi-word expressions rewritten before reading (after contractions are expanded).
_PHRASES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(rf"\b{pattern}\b", re.IGNORECASE), replacement)
    for pattern, replacement in (
        (r"can not stand", "hate"),
        (r"could not stand", "hate"),
        (r"no longer", "not"),
        (r"not anymore", "not"),
        (r"gives? up|gave up|giving up", "quit"),
        (r"cuts? (?:out|down on|back on)", "cut"),
        (r"fed up with", "hate"),
        (r"(?:big|huge|great|massive|die-hard|avid) fan", "fan"),
        (r"(\w+)-free", r"no \1"),
        (r"non-(\w)", r"non \1"),
        (r"([a-z])-(\w+)", r"\1\2"),  # e-book, x-ray
        (r"e\.g\.", "eg"),
        (r"i\.e\.", "ie"),
    )
)
_CONTRACTIONS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), replacement)
    for pattern, replacement in (
        (r"\bcan't\b|\bcannot\b", "can not"),
        (r"\bwon't\b", "will not"),
        (r"n't\b", " not"),
        (r"'m\b", " am"),
        (r"'re\b", " are"),
        (r"'ve\b", " have"),
        (r"'ll\b", " will"),
        (r"'d\b", " would"),
        (r"'s\b", ""),
        (r"s'(?=\s|$)", "s"),
    )
)
_ORDINAL_SUFFIX = re.compile(r"^(\d+)(?:st|nd|rd|th)$")

_NEGATING_OPENERS = ("instead of", "rather than", "than")
_CLAUSE_PUNCT = frozenset(',;:.!?()[]"')
_WORD_RE = re.compile(
    r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:[.:]\d+)*[a-z]*|[a-z]+|[,;:.!?()\[\]\"]",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Clause:
    """One clause of a fact.

    Attributes:
        tokens: Canonical content tokens.
        negative: The clause denies or rejects what its tokens name.
        optional: A reason, purpose, consequence or example (need not be matched).
    """

    tokens: frozenset[str]
    negative: bool
    optional: bool


@dataclass(frozen=True)
class FactReading:
    """A fact as the default matcher reads it (see the module docstring)."""

    text: str
    cjk: bool
    clauses: tuple[Clause, ...]
    values: tuple[tuple[str, frozenset[str]], ...]
    subject: str | None = None
    """The relative the fact is about when it opens with one ("My sister ...", "Her son ...",
    "Nadia's brother ..."); None when it is about the user."""

    @property
    def tokens(self) -> frozenset[str]:
        """Tokens of every clause."""
        return frozenset().union(*(c.tokens for c in self.clauses))

    @property
    def core_tokens(self) -> frozenset[str]:
        """Tokens of the clauses that are not optional (all tokens when every one is)."""
        core = frozenset().union(*(c.tokens for c in self.clauses if not c.optional))
        return core or self.tokens

    def value_map(self) -> dict[str, frozenset[str]]:
        """Values by slot (``number``, ``date``, ``name``, or a closed class such as ``food``)."""
        return dict(self.values)


@lru_cache(maxsize=65536)
def read_fact(text: str) -> FactReading:
    """Read ``text`` (cached: a run reads the same facts many times)."""
    if _CJK.search(text):
        return _read_chinese(text)
    return _read_english(text)


_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


# -- English ---------------------------------------------------------------------------------


def _prepare(text: str) -> str:
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"')
    text = text.replace("\u201d", '"').replace("\u2013", " - ").replace("\u2014", " - ")
    for pattern, replacement in (*_CONTRACTIONS, *_PHRASES):
        text = pattern.sub(replacement, text)
    return text


@dataclass
class _Word:
    raw: str
    lower: str
    sentence_start: bool


def _words(text: str) -> list[_Word]:
    """Words and punctuation marks, each word flagged when it starts a sentence."""
    out: list[_Word] = []
    start = True
    for match in _WORD_RE.finditer(text):
        raw = match.group()
        out.append(_Word(raw, raw.casefold(), start))
        if raw in ".!?:":
            start = True
        elif raw not in '"([':
            start = False
    return out


def _read_english(text: str) -> FactReading:
    words = _words(_prepare(text))
    if _opens_with_subject_name(text, words):
        words = words[1:]
    subject = _relative_subject(words)
    names = _proper_nouns(words)
    has_prefer = any(w.lower.startswith("prefer") for w in words)
    clauses = [_clause(piece, opened) for piece, opened in _split(words, has_prefer)]
    clauses = [c for c in clauses if c.tokens]
    values = _values(words, names)
    return FactReading(text=text, cjk=False, clauses=tuple(clauses), values=values, subject=subject)


_OWNER_WORDS = frozenset({"my", "her", "his", "their", "our", "user", "users", "the"})


def _relative_subject(words: list[_Word]) -> str | None:
    """The relative opening the fact ("My sister", "User's son", "Daughter Maya"), if any."""
    position = 0
    while position < len(words) - 1 and words[position].lower in _OWNER_WORDS:
        position += 1
    token = _canon(words[position].lower) if words else None
    if token is not None and _tables().class_of.get(token) == "relative":
        return token
    return None


def _opens_with_subject_name(text: str, words: list[_Word]) -> bool:
    """True when the fact opens with the name of the person it is about ("Nadia started ...",
    "Tomas's father ..."): third-person gold facts name their owner, stored facts say "User"
    or nothing, and the name is not part of the claim."""
    if len(words) < 2 or not words[0].raw[:1].isupper() or words[0].raw == "I":
        return False
    first, second = words[0].lower, words[1].lower
    if _canon(first) is None or first in _words_data().negators or first.endswith("ly"):
        return False
    if _lemma(first) != first:  # an inflected verb: "Works as ...", "Loves ..."
        return False
    if text.lstrip().startswith((f"{words[0].raw}'s", f"{words[0].raw}\u2019s")):
        return True
    inflected = second.endswith("ed") or (
        second.endswith("s") and not second.endswith("ss") and _lemma(second) != second
    )
    return second in _words_data().subject_followers or inflected


def _split(words: list[_Word], has_prefer: bool) -> Iterator[tuple[list[str], str]]:
    """Cut the word list into clauses; yield (words, how the clause was opened)."""
    lists = _words_data()
    current: list[str] = []
    opened = "start"
    after_comma = False
    index = 0
    lower = [w.lower for w in words]
    while index < len(lower):
        word = lower[index]
        pair = " ".join(lower[index : index + 2])
        opener = None
        if word == "(":
            opener = "optional"  # a parenthesis adds detail
        elif word in _CLAUSE_PUNCT:
            opener, after_comma = "punct", word == ","
        elif pair in _NEGATING_OPENERS or (word == "than" and current):
            opener, index = "negate", index + (1 if pair in _NEGATING_OPENERS else 0)
        elif (word == "over" and has_prefer and current) or (
            word == "to" and _prefer_to(current, lower, index)
        ):
            opener = "negate"
        elif word in lists.optional_openers or (
            after_comma and not current and word in lists.after_comma_optional
        ):
            opener = "optional"
        elif word in lists.plain_openers:
            opener = "plain"
        if opener is None:
            current.append(word)
            after_comma = False
        else:
            if current:
                yield current, opened
            current = []
            opened = opener
        index += 1
    if current:
        yield current, opened


def _prefer_to(current: list[str], lower: list[str], index: int) -> bool:
    """True at the ``to`` of "prefer X to Y" (not "prefer to X")."""
    if not current or index + 1 >= len(lower):
        return False
    starts = [i for i, w in enumerate(current) if w.startswith("prefer")]
    return bool(starts) and any(_canon(w) is not None for w in current[starts[0] + 1 :])


def _clause(words: list[str], opened: str) -> Clause:
    tables = _tables()
    negations = 1 if opened == "negate" else 0
    tokens: set[str] = set()
    for word in words:
        if word in _words_data().negators:
            negations += 1
            continue
        token = _canon(word)
        if token is None:
            continue
        if token in tables.negative:
            negations += 1
            token = tables.negative[token]
        elif token in tables.positive:
            token = PREF
        elif token in tables.antonyms:
            negations += 1
            token = tables.antonyms[token]
        tokens.add(token)
        if token in tables.implies:
            tokens.add(tables.implies[token])
    return Clause(frozenset(tokens), negations % 2 == 1, opened == "optional")


@lru_cache(maxsize=65536)
def _canon(word: str) -> str | None:
    """The canonical token of one lower-case word (a stem or a number), None if a stop word."""
    words = _words_data()
    if word in words.stop or word in _CLAUSE_PUNCT:
        return None
    if word in words.numbers:
        return words.numbers[word]
    if word[0].isdigit():
        return _number(word)
    if len(word) < 2:
        return None
    lemma = words.synonyms.get(word) or _lemma(word)
    return _stem(words.synonyms.get(lemma, lemma))


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


_SUFFIX = {1: "st", 2: "nd", 3: "rd"}


def _lemma(word: str) -> str:
    lemma: str = _simplemma().lemmatize(word, lang="en")
    return lemma.casefold()


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


def token_weight(token: str) -> float:
    """How much a token counts in coverage: 0.5 for ``pref`` and light verbs, else 1."""
    return 0.5 if token == PREF or token in _tables().light else 1.0


@dataclass(frozen=True)
class _WordLists:
    """``fact_words.yaml`` as loaded (plain words)."""

    stop: frozenset[str]
    negators: frozenset[str]
    synonyms: Mapping[str, str]
    numbers: Mapping[str, str]
    optional_openers: frozenset[str]
    after_comma_optional: frozenset[str]
    plain_openers: frozenset[str]
    subject_followers: frozenset[str]
    raw: Mapping[str, Any]


@lru_cache(maxsize=1)
def _words_data() -> _WordLists:
    text = resources.files("memlab.matching").joinpath(WORDS_FILE).read_text(encoding="utf-8")
    raw = yaml.safe_load(text)
    return _WordLists(
        stop=frozenset(raw["stop"].split()),
        negators=frozenset(raw["negators"].split()),
        synonyms=dict(raw["synonyms"]),
        numbers={word: str(value) for word, value in raw["numbers"].items()},
        optional_openers=frozenset(raw["optional_openers"].split()),
        after_comma_optional=frozenset(raw["after_comma_optional"].split()),
        plain_openers=frozenset(raw["plain_openers"].split()),
        subject_followers=frozenset(raw["subject_followers"].split()),
        raw=raw,
    )


@dataclass(frozen=True)
class _Tables:
    """The word lists keyed by canonical token (built on first use)."""

    negative: Mapping[str, str]
    positive: frozenset[str]
    light: frozenset[str]
    antonyms: Mapping[str, str]
    implies: Mapping[str, str]
    dates: frozenset[str]
    class_of: Mapping[str, str]


@lru_cache(maxsize=1)
def _tables() -> _Tables:
    raw = _words_data().raw

    def canon(word: str) -> str:
        if word == PREF:
            return PREF
        token = _canon(word)
        return token if token is not None else word

    negative = {canon(w): canon(t) for w, t in raw["negative"].items()}
    return _Tables(
        negative=negative,
        positive=frozenset(canon(w) for w in raw["positive"].split()) - set(negative),
        light=frozenset(canon(w) for w in raw["light"].split()),
        antonyms={canon(w): canon(t) for w, t in raw["antonyms"].items()},
        implies={canon(w): canon(t) for w, t in raw["implies"].items()},
        dates=frozenset(canon(w) for w in raw["dates"].split()),
        class_of={
            canon(word): slot
            for slot, members in raw["classes"].items()
            for word in members.split()
        },
    )


def _proper_nouns(words: list[_Word]) -> frozenset[str]:
    """Capitalized words that do not start a sentence (names, places, brands, acronyms)."""
    names = set()
    dates = _tables().dates
    for word in words:
        raw = word.raw
        if word.sentence_start or not raw[:1].isalpha() or raw == "I":
            continue
        if any(c.isupper() for c in raw) and word.lower not in ("am", "pm", "user", "may"):
            token = _canon(word.lower)
            if token is not None and token not in dates:
                names.add(token)
    return frozenset(names)


def _values(words: list[_Word], names: frozenset[str]) -> tuple[tuple[str, frozenset[str]], ...]:
    tables = _tables()
    slots: dict[str, set[str]] = {}
    for word in words:
        token = "may" if word.raw == "May" else _canon(word.lower)
        if token is None:
            continue
        if token[0].isdigit():
            slots.setdefault("number", set()).add(token)
        elif token in tables.dates or token == "may":
            slots.setdefault("date", set()).add(token)
        elif token in tables.class_of:
            slots.setdefault(tables.class_of[token], set()).add(token)
            if token in tables.implies:
                slots[tables.class_of[token]].add(tables.implies[token])
    if names:
        slots["name"] = set(names)
    return tuple(sorted((slot, frozenset(v)) for slot, v in slots.items()))


# -- Chinese ---------------------------------------------------------------------------------

_ZH_CLAUSE = re.compile(r"[，,。；;！!？?、（）()]|但是|不过")
_ZH_DIGITS = {c: i for i, c in enumerate("零一二三四五六七八九")} | {"两": 2}
# "一般" (usually), "一直" (always) ... are not numbers.
_ZH_NUMBER = re.compile(r"[零一二三四五六七八九两十百]+(?![般直起些下样定])|\d+(?:\.\d+)?")
_ZH_DATE = re.compile(r"(\d+|[一二三四五六七八九十]+)月(\d+|[一二三四五六七八九十]+)[日号]")


def _zh_number(text: str) -> str:
    """A Chinese or Arabic numeral as digits ("十一" -> "11", "四十" -> "40")."""
    if text[0].isdigit():
        return text
    if "百" in text:
        head, _, tail = text.partition("百")
        return str(_ZH_DIGITS.get(head, 1) * 100 + int(_zh_number(tail) if tail else 0))
    if "十" in text:
        head, _, tail = text.partition("十")
        return str(_ZH_DIGITS.get(head, 1) * 10 + (_ZH_DIGITS.get(tail, 0) if tail else 0))
    return "".join(str(_ZH_DIGITS[c]) for c in text if c in _ZH_DIGITS)


def _read_chinese(text: str) -> FactReading:
    values: dict[str, set[str]] = {}
    for month, day in _ZH_DATE.findall(text):
        values.setdefault("date", set()).add(f"{_zh_number(month)}-{_zh_number(day)}")
    body = _ZH_DATE.sub(" ", text)
    for number in _ZH_NUMBER.findall(body):
        values.setdefault("number", set()).add(_zh_number(number))
    latin = {w.casefold() for w in re.findall(r"[A-Za-z]+", body)}
    if latin:
        values["name"] = latin
    clauses = []
    for piece in _ZH_CLAUSE.split(body):
        # "A而不是B": B is what the user does not want.
        for position, part in enumerate(piece.split("而不是")):
            clause = _zh_clause(part, negated=position > 0)
            if clause.tokens:
                clauses.append(clause)
    slots = tuple(sorted((slot, frozenset(v)) for slot, v in values.items()))
    return FactReading(text=text, cjk=True, clauses=tuple(clauses), values=slots)


def _zh_clause(piece: str, *, negated: bool) -> Clause:
    negations = 1 if negated else 0
    raw = _words_data().raw
    for cue in raw["zh_negative"].split():
        while cue in piece:
            negations += 1
            piece = piece.replace(cue, " ", 1)
    for cue in (raw["zh_positive"] + " " + raw["zh_subjects"] + " " + raw["zh_fillers"]).split():
        piece = piece.replace(cue, " ")
    for word, canonical in raw["zh_synonyms"].items():
        piece = piece.replace(word, canonical)
    piece = _ZH_NUMBER.sub(lambda m: f" {_zh_number(m.group())} ", piece)
    tokens: set[str] = set()
    for run in re.findall(r"[\u3400-\u9fff\uf900-\ufaff]+|[a-z0-9.]+", piece.casefold()):
        if not _CJK.match(run):
            tokens.add(run)
            continue
        run = "".join(c for c in run if c not in raw["zh_filler_chars"]) or run
        tokens.update(_bigrams(run))
    return Clause(frozenset(tokens), negations % 2 == 1, False)


def _bigrams(run: str) -> Iterable[str]:
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]
