"""How the default matcher reads a fact: its claim and support, polarity, mood and values.

:func:`read_fact` turns a fact into a :class:`~memlab.matching.fact_types.FactReading`:

- **Claim and support.** The text is cut into sentences (at ``.``, ``!``, ``?``, ``;`` and a
  dash between spaces) and each sentence into clauses at punctuation and connectives. Each
  clause has canonical content tokens (:func:`memlab.matching.fact_lexicon.canon`). The claim is
  the first sentence that says something; clauses that give a reason, purpose, consequence or
  example (``because``, ``since``, ``so``, ``which``, ``as it ...``, ``, especially`` ...) and
  every later sentence are *optional* support: a stored fact need not repeat them (the
  compound-fact rule of ``docs/matching.md``). Hedges and framings ("Honestly,", "I think",
  "Just so you know") are stop words.
- **Polarity.** A clause is negative when it holds an odd number of negations: negators (not,
  never, no, without, rarely, no longer, non-, -free, un- before a known word), aversion words
  (dislike, hate, avoid, refuse, averse, quit, allergic, afraid, ...), the object of
  ``instead of`` / ``rather than`` / ``prefer X over Y`` / ``prefer X to Y``, and antonym
  folding (``large`` is read as the token ``small`` marked *flipped*, ``far`` as ``near``
  flipped): a flipped token negates the clause wherever the other fact names the same thing,
  so "prefers large breeds" and "doesn't like small dogs" read alike, and so do "doesn't like
  being far from the sea" and "likes living near the sea", while "productive late at night"
  and "night owl" do not disagree. Liking and disliking words all become the token ``pref``.
- **Mood.** A clause holding a word of intent (want, plan, hope ...) wants something; one with
  a past tense (not after a form of "be") says it was done.
- **Value slots.** Numbers (digits and number words), dates (months, weekdays, seasons,
  next/last), proper nouns and abbreviations (capitalized words not starting a sentence) and
  small closed classes (diets and foods, instruments, sports, animals, relatives, jobs ...).

Chinese facts are read by :mod:`memlab.matching.fact_reading_zh`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from functools import lru_cache

from memlab.matching.fact_lexicon import PREF, canon, is_known_word, lemma, tables, words
from memlab.matching.fact_reading_zh import CJK, read_chinese
from memlab.matching.fact_types import Clause, FactReading

__all__ = ["read_fact"]

# Multi-word expressions rewritten before reading (after contractions are expanded).
_PHRASES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(rf"\b{pattern}\b", re.IGNORECASE), replacement)
    for pattern, replacement in (
        (r"(?:can|could) not (?:stand|bear|tolerate|handle|deal with|cope with)", "hate"),
        (r"no longer", "not"),
        (r"not anymore", "not"),
        (r"gives? up|gave up|giving up", "quit"),
        (r"cuts? (?:out|down on|back on)", "cut"),
        (r"fed up with", "hate"),
        (r"stay(?:s|ed|ing)? away from", "avoid"),
        (r"(?:do|does|did|would) not mind", "tolerate"),
        (r"(?:never|not) miss(?:es|ed)?", "always"),
        (r"(?:big|huge|great|massive|die-hard|avid) fan", "fan"),
        (r"(\w+)-free", r"no \1"),
        (r"non-(?=\w)", "non "),
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
_HYPHENATED = re.compile(r"\b([A-Za-z]+)-(?=[A-Za-z])")
_DASH = re.compile(r"\s+[-\u2013\u2014]+\s+|[\u2013\u2014]")
_NEGATING_OPENERS = ("instead of", "rather than", "than")
_SENTENCE_END = frozenset(".!?;")
_CLAUSE_PUNCT = frozenset(',;:.!?()[]"')
_WORD_RE = re.compile(
    r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:[.:]\d+)*[a-z]*|[a-z]+(?:\u00b7[a-z]+)*|[,;:.!?()\[\]\"]",
    re.IGNORECASE,
)
_BE = frozenset({"am", "is", "are", "was", "were", "be", "been", "being", "get", "got"})
_ACRONYM = re.compile(r"^(?=(?:[^A-Z]*[A-Z]){2})[A-Za-z]{2,6}$")


@lru_cache(maxsize=65536)
def read_fact(text: str) -> FactReading:
    """Read ``text`` (cached: a run reads the same facts many times)."""
    if CJK.search(text):
        return read_chinese(text)
    return _read_english(text)


def _prepare(text: str) -> str:
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"')
    text = text.replace("\u201d", '"')
    text = _DASH.sub(" ; ", text)
    for pattern, replacement in (*_CONTRACTIONS, *_PHRASES):
        text = pattern.sub(replacement, text)
    # A hyphenated word is read as one token ("e-book"), its parts kept apart by a middle dot
    # so that abbreviations can still be read against them ("post-traumatic" for PTSD).
    return _HYPHENATED.sub(lambda m: m.group(1) + "\u00b7", text)


@dataclass
class _Word:
    raw: str
    lower: str
    sentence_start: bool
    parts: tuple[str, ...] = ()
    """The parts of a hyphenated word."""


def _words(text: str) -> list[_Word]:
    """Words and punctuation marks, each word flagged when it starts a sentence."""
    out: list[_Word] = []
    start = True
    for match in _WORD_RE.finditer(text):
        raw = match.group()
        if raw == "." and out and _is_title(out[-1].raw):
            continue  # "St. Mary's", "Dr. Okafor": not the end of a sentence
        parts = tuple(raw.casefold().split("\u00b7")) if "\u00b7" in raw else ()
        out.append(
            _Word(raw.replace("\u00b7", ""), raw.casefold().replace("\u00b7", ""), start, parts)
        )
        if raw in ".!?:;":
            start = True
        elif raw not in '"([':
            start = False
    return out


def _is_title(word: str) -> bool:
    return word in ("St", "Dr", "Mr", "Mrs", "Ms", "Jr", "Sr", "Prof", "Mt")


def _read_english(text: str) -> FactReading:
    prepared = _prepare(text)
    words_ = _words(prepared)
    if _opens_with_subject_name(text, words_):
        words_ = words_[1:]
    subject = _relative_subject(words_)
    names = _proper_nouns(words_)
    clauses = _clauses(words_)
    values = _values(words_, names)
    claim_tokens = frozenset().union(*(c.tokens for c in clauses if not c.optional))
    claim_values = tuple(
        (slot, kept) for slot, members in values if (kept := members & claim_tokens)
    )
    plain = [w for w in re.split(r"[^a-z0-9]+", prepared.casefold().replace("\u00b7", " ")) if w]
    acronyms = tuple(
        (token, _letters(w.raw))
        for w in words_
        if _ACRONYM.match(w.raw) and (token := canon(w.lower)) is not None
    )
    compounds = tuple(
        (token, _clipped_parts(w.parts))
        for w in words_
        if w.parts and all(len(p) >= 2 for p in w.parts) and (token := canon(w.lower)) is not None
    )
    content = frozenset().union(*(c.tokens for c in clauses))
    forms = {}
    for w in words_:
        token = canon(w.lower)
        if token is not None and token in content and token not in forms:
            forms[token] = lemma(w.lower)
    return FactReading(
        text=text,
        cjk=False,
        clauses=tuple(clauses),
        values=values,
        claim_values=claim_values,
        subject=subject,
        forms=tuple(forms.items()),
        words=tuple(plain),
        acronyms=acronyms,
        compounds=compounds,
    )


def _letters(acronym: str) -> str:
    """The letters an abbreviation stands for ("RPGs" -> "rpg", "IBS" -> "ibs")."""
    if acronym.endswith("s") and acronym[:-1].isupper():
        acronym = acronym[:-1]
    return acronym.casefold()


def _clipped_parts(parts: tuple[str, ...]) -> tuple[str, ...]:
    """Parts of a hyphenated word, a plural "s" taken off the last ("rom-coms" -> rom, com)."""
    last = parts[-1]
    if len(last) > 3 and last.endswith("s") and not last.endswith("ss"):
        last = last[:-1]
    return (*parts[:-1], last)


def _clauses(words_: list[_Word]) -> list[Clause]:
    """Clauses with content, the first sentence that has one being the claim.

    Within the claim, a clause after a comma that opens with a subject ("I don't like cats
    much, I'm a dog person"; "As a vegan, I avoid animal products") starts a new *segment*:
    segments restate one claim, and stating one of them states the claim.
    """
    has_prefer = any(w.lower.startswith("prefer") for w in words_)
    claim_sentence: int | None = None
    segment = 0
    out: list[Clause] = []
    for piece, opened, sentence in _split(words_, has_prefer):
        clause = _clause(piece, opened)
        if not clause.tokens:
            continue
        if claim_sentence is None:
            claim_sentence = sentence
        if sentence != claim_sentence and not clause.optional:
            clause = replace(clause, optional=True)
        elif opened == "punct" and piece[0] in _SUBJECTS and out:
            segment += 1
        out.append(replace(clause, segment=segment))
    return out


_SUBJECTS = frozenset(
    {"i", "we", "my", "our", "it", "they", "he", "she", "me", "the", "this", "that", "there"}
)


_OWNER_WORDS = frozenset({"my", "her", "his", "their", "our", "user", "users", "the"})


def _relative_subject(words_: list[_Word]) -> str | None:
    """The relative opening the fact ("My sister", "User's son", "Daughter Maya"), if any."""
    position = 0
    while position < len(words_) - 1 and words_[position].lower in _OWNER_WORDS:
        position += 1
    token = canon(words_[position].lower) if words_ else None
    if token is not None and tables().class_of.get(token) == "relative":
        return token
    return None


def _opens_with_subject_name(text: str, words_: list[_Word]) -> bool:
    """True when the fact opens with the name of the person it is about ("Nadia started ...",
    "Tomas's father ..."): third-person gold facts name their owner, stored facts say "User"
    or nothing, and the name is not part of the claim."""
    if len(words_) < 2 or not words_[0].raw[:1].isupper() or words_[0].raw == "I":
        return False
    first, second = words_[0].lower, words_[1].lower
    if canon(first) is None or first in words().negators or first.endswith("ly"):
        return False
    if lemma(first) != first or _ACRONYM.match(words_[0].raw):  # "Works as ...", "UX designer"
        return False
    if text.lstrip().startswith((f"{words_[0].raw}'s", f"{words_[0].raw}\u2019s")):
        return True
    if is_known_word(first):
        return False  # "Woollen jumpers make ...", "Photography has been ...": no name
    inflected = second.endswith("ed") or (
        second.endswith("s") and not second.endswith("ss") and lemma(second) != second
    )
    return second in words().subject_followers or inflected


def _split(words_: list[_Word], has_prefer: bool) -> Iterator[tuple[list[str], str, int]]:
    """Cut the word list into clauses; yield (words, how the clause was opened, sentence)."""
    lists = words()
    current: list[str] = []
    opened = "start"
    after_comma = False
    sentence = 0
    lower = [w.lower for w in words_]
    index = 0
    while index < len(lower):
        word = lower[index]
        pair = " ".join(lower[index : index + 2])
        following = lower[index + 1] if index + 1 < len(lower) else ""
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
        elif (
            word in lists.optional_openers
            or (after_comma and not current and word in lists.after_comma_optional)
            or (word == "as" and current and following in lists.reason_as_followers)
        ):
            opener = "optional"
        elif word in lists.plain_openers and not _compound_subject(current, following):
            opener = "plain"
        if opener is None:
            current.append(word)
            after_comma = False
        else:
            if current:
                yield current, opened, sentence
            # "because it upsets my stomach and makes me sweat": a coordinated clause inside
            # support is support too.
            if not (opener == "plain" and opened == "optional" and current):
                opened = opener
            current = []
            if word in _SENTENCE_END:
                sentence += 1
        index += 1
    if current:
        yield current, opened, sentence


def _compound_subject(current: list[str], following: str) -> bool:
    """ "My partner and I ...": the "and" joins a subject, not two claims."""
    return following in ("i", "we") and 0 < len(current) <= 3 and current[0] in _POSSESSIVES


_POSSESSIVES = frozenset({"my", "our", "his", "her", "their"})


def _prefer_to(current: list[str], lower: list[str], index: int) -> bool:
    """True at the ``to`` of "prefer X to Y" (not "prefer to X")."""
    if not current or index + 1 >= len(lower):
        return False
    starts = [i for i, w in enumerate(current) if w.startswith("prefer")]
    negators = words().negators
    return bool(starts) and any(
        w not in negators and canon(w) is not None for w in current[starts[0] + 1 :]
    )


def _clause(words_: list[str], opened: str) -> Clause:
    table = tables()
    lists = words()
    negations = 1 if opened == "negate" else 0
    tokens: set[str] = set()
    flipped: set[str] = set()
    done = intent = False
    previous = ""
    for position, word in enumerate(words_):
        if word in lists.negators:
            negations += 1
            previous = word
            continue
        if _past_tense(word) and previous not in _BE:
            done = True
        token = canon(word)
        previous = word
        if token is None:
            continue
        if token in table.intent:
            # A goal: "wants to ...", "plans to ...", "goal: ..." (not "planning apps").
            following = words_[position + 1] if position + 1 < len(words_) else ""
            intent = intent or following in ("to", "") or word in lists.intent_nouns
        if _negated_by_un(word):
            negations += 1
            token = canon(word[2:]) or token
        if token in table.negative:
            negations += 1
            token = table.negative[token]
        elif token in table.positive:
            token = PREF
        elif token in table.antonyms:
            token = table.antonyms[token]
            flipped.add(token)
        tokens.add(token)
        if token in table.implies:
            tokens.add(table.implies[token])
    mood = "want" if intent else "done" if done else ""
    return Clause(
        frozenset(tokens), negations % 2 == 1, opened == "optional", mood, frozenset(flipped)
    )


@lru_cache(maxsize=16384)
def _past_tense(word: str) -> bool:
    if word in words().irregular_past:
        return True
    return len(word) > 4 and word.endswith("ed") and lemma(word) != word


@lru_cache(maxsize=16384)
def _negated_by_un(word: str) -> bool:
    """ "unscheduled", "unhealthy": "un" before a known word of 4+ letters."""
    return word.startswith("un") and len(word) >= 6 and is_known_word(word[2:])


def _proper_nouns(words_: list[_Word]) -> frozenset[str]:
    """Capitalized words that do not start a sentence (names, places, brands, acronyms), and
    abbreviations anywhere ("IBS", "PvP")."""
    names = set()
    dates = tables().dates
    for word in words_:
        raw = word.raw
        if not raw[:1].isalpha() or raw == "I":
            continue
        if word.sentence_start and not _ACRONYM.match(raw):
            continue
        if any(c.isupper() for c in raw) and word.lower not in ("am", "pm", "user", "may"):
            token = canon(word.lower)
            if token is not None and token not in dates:
                names.add(token)
    return frozenset(names)


def _values(words_: list[_Word], names: frozenset[str]) -> tuple[tuple[str, frozenset[str]], ...]:
    table = tables()
    slots: dict[str, set[str]] = {}
    for word in words_:
        token = "may" if word.raw == "May" else canon(word.lower)
        if token is None:
            continue
        if token[0].isdigit():
            slots.setdefault("number", set()).add(token)
        elif token in table.dates or token == "may":
            slots.setdefault("date", set()).add(token)
        elif token in table.class_of:
            slots.setdefault(table.class_of[token], set()).add(token)
            if token in table.implies:
                slots[table.class_of[token]].add(table.implies[token])
        else:  # "low-carb": a part of a hyphenated word may name the value
            for part in word.parts:
                part_token = canon(part)
                if part_token is not None and part_token in table.class_of:
                    slots.setdefault(table.class_of[part_token], set()).add(token)
    if names:
        slots["name"] = set(names)
    return tuple(sorted((slot, frozenset(v)) for slot, v in slots.items()))
