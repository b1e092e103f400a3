"""How the default matcher reads a Chinese fact (any fact holding a CJK character).

The text is cut into clauses at punctuation and at 但是/不过; each clause is read as character
bigrams after removing the subject (我, 用户 ...), fillers and polarity words. Polarity words
(不, 没, 讨厌, 放弃 ...) count as negations, and in "A而不是B" B is what the user does not want.
Digits and Chinese numerals are number values, ``3月8日`` is a date, Latin words are names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from memlab.matching.fact_lexicon import words
from memlab.matching.fact_types import Clause, FactReading

__all__ = ["CJK", "read_chinese"]

CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
"""A CJK character: a fact holding one is read as Chinese."""

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


def read_chinese(text: str) -> FactReading:
    """Read a Chinese fact (see the module docstring)."""
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
    return FactReading(
        text=text, cjk=True, clauses=tuple(clauses), values=slots, claim_values=slots
    )


def _zh_clause(piece: str, *, negated: bool) -> Clause:
    negations = 1 if negated else 0
    raw = words().raw
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
        if not CJK.match(run):
            tokens.add(run)
            continue
        run = "".join(c for c in run if c not in raw["zh_filler_chars"]) or run
        tokens.update(_bigrams(run))
    return Clause(frozenset(tokens), negations % 2 == 1, False)


def _bigrams(run: str) -> Iterable[str]:
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]
