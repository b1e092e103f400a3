"""The worst-case length of a bounded reply, checked against brute force.

memlab computes the bound from the grammar's rules (:mod:`memlab.backends.decoding.grammar`). Here a
generator that shares nothing with that code writes candidate replies: every probe character
in every kind of string at its bound and one past it, every probe number, every probe of
whitespace at every kind of position, lists of every size up to one past their bound, an
optional key present or absent. llama.cpp's own grammar engine (``grammar_oracle``) says which
candidates the grammar admits. The longest admitted choices together make the longest reply;
spelled one byte-token per byte (which a model may do) it must be admitted as a whole and
take exactly the bound, the end-of-generation token included. Random mixes of all the probes
never exceed it, and in the compact dialect every admitted reply satisfies the contract.
"""

from __future__ import annotations

import dataclasses
import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from memlab.core.jsondoc.contract import SchemaBounds, bounded_schema, contract_schema
from memlab.core.jsondoc.parsing import parse_reply

pytest.importorskip("llama_cpp")
from grammar_oracle import GrammarOracle

from memlab.backends.decoding.grammar import (
    GrammarDialect,
    bounded_reply_tokens,
    compile_grammar,
)

# The contract's shape, written out here rather than read from memlab.
USER = ("workContext", "personalContext", "topOfMind")
HISTORY = ("recentMonths", "earlierContext", "longTermBackground")
CATEGORIES = ("preference", "knowledge", "context", "behavior", "goal", "correction", "opinion")
# One character each, as JSON text: 1 to 4 UTF-8 bytes, escapes of 2 and 6 bytes, a raw
# control character, ASCII and ideographic spaces.
CHARS = ("a", "é", "中", "😀", '\\"', "\\n", "\\u00e9", "\x01", " ", "\u3000")
NUMBERS = (
    "0", "1", "0.5", "0.9999", "0.99999", "1.0000", "1.00001", "1e0", "-0", "2",
    "0.1234567890123456", "9999999999999999.9999999999999999e-9999999999999999",
    "-9999999999999999.9999999999999999e+9999999999999999",
)  # fmt: skip
SPACES = ("", " ", "  ", "\n")
# Places where a grammar may allow whitespace.
PLACES = ("open", "comma", "key", "colon", "string", "boolean", "enum", "number", "close")
SETTINGS = [
    SchemaBounds(summary_chars=1, fact_chars=1, max_new_facts=0, max_removals=0),
    SchemaBounds(summary_chars=3, fact_chars=4, max_new_facts=2, max_removals=1),
    SchemaBounds(summary_chars=5, fact_chars=2, max_new_facts=1, max_removals=3),
]


@dataclass(frozen=True)
class Candidate:
    """The choices of one candidate reply; `text` writes it as JSON by hand."""

    facts: int = 0
    removals: int = 0
    summary: str = ""
    should_update: str = "false"
    content: str = "a"
    category: str = "goal"
    confidence: str = "0.5"
    source_error: str | None = None
    fact_id: str = "f"
    spaces: dict[str, str] = field(default_factory=lambda: dict.fromkeys(PLACES, ""))

    def text(self) -> str:
        ws = self.spaces

        def string(body: str) -> str:
            return f'"{body}"{ws["string"]}'

        def obj(items: list[tuple[str, str]]) -> str:
            pairs = [f'"{key}"{ws["key"]}:{ws["colon"]}{value}' for key, value in items]
            return "{" + ws["open"] + ("," + ws["comma"]).join(pairs) + "}" + ws["close"]

        def arr(values: list[str]) -> str:
            return "[" + ws["open"] + ("," + ws["comma"]).join(values) + "]" + ws["close"]

        section = obj(
            [
                ("summary", string(self.summary)),
                ("shouldUpdate", self.should_update + ws["boolean"]),
            ]
        )
        fact_items = [
            ("content", string(self.content)),
            ("category", f'"{self.category}"{ws["enum"]}'),
            ("confidence", self.confidence + ws["number"]),
        ]
        if self.source_error is not None:
            fact_items.append(("sourceError", string(self.source_error)))
        return obj(
            [
                ("user", obj([(name, section) for name in USER])),
                ("history", obj([(name, section) for name in HISTORY])),
                ("newFacts", arr([obj(fact_items)] * self.facts)),
                ("factsToRemove", arr([string(self.fact_id)] * self.removals)),
            ]
        )

    @property
    def size(self) -> int:
        return len(self.text().encode("utf-8"))


def probes(bounds: SchemaBounds) -> Iterator[tuple[str, Any]]:
    """Every (choice, value) the generator tries, one choice at a time."""
    for name, limit in (
        ("summary", bounds.summary_chars),
        ("content", bounds.fact_chars),
        ("source_error", bounds.fact_chars),
        ("fact_id", 32),
    ):
        for char in CHARS:
            for length in (limit, limit + 1):
                yield name, char * length
    yield "source_error", None
    yield from (("category", category) for category in CATEGORIES)
    yield from (("confidence", number) for number in NUMBERS)
    yield from (("should_update", value) for value in ("true", "false"))
    yield from (("facts", n) for n in range(bounds.max_new_facts + 2))
    yield from (("removals", n) for n in range(bounds.max_removals + 2))
    for place in PLACES:
        for space in SPACES:
            yield "spaces", {place: space}


def _with(candidate: Candidate, name: str, value: Any) -> Candidate:
    if name == "spaces":
        value = {**candidate.spaces, **value}
    return dataclasses.replace(candidate, **{name: value})


def admitted_choices(
    oracle: GrammarOracle, grammar: str, bounds: SchemaBounds
) -> dict[str, list[tuple[int, Any]]]:
    """choice -> [(size of the reply, value)] for each probe the grammar admits, each tried
    in a reply whose lists are full and whose other choices are small."""
    start = Candidate(facts=bounds.max_new_facts, removals=bounds.max_removals)
    admitted: dict[str, list[tuple[int, Any]]] = {}
    for name, value in probes(bounds):
        candidate = _with(start, name, value)
        if oracle.accepts_text(grammar, candidate.text()):
            key = f"spaces.{next(iter(value))}" if name == "spaces" else name
            admitted.setdefault(key, []).append((candidate.size, value))
    return admitted


def assemble(picks: dict[str, Any]) -> Candidate:
    """A candidate from one admitted value per choice (spaces: per place)."""
    spaces = {**Candidate().spaces}
    values = {}
    for key, value in picks.items():
        if key.startswith("spaces."):
            spaces.update(value)
        else:
            values[key] = value
    return Candidate(spaces=spaces, **values)


def longest(admitted: dict[str, list[tuple[int, Any]]]) -> Candidate:
    """Every choice at the value that made the longest reply."""
    return assemble({key: max(options, key=lambda o: o[0])[1] for key, options in admitted.items()})


def random_mixes(
    admitted: dict[str, list[tuple[int, Any]]], count: int, seed: int
) -> Iterator[Candidate]:
    """Random mixes of admitted values (a mix may still be refused as a whole)."""
    rng = random.Random(seed)
    for _ in range(count):
        yield assemble({key: rng.choice(options)[1] for key, options in admitted.items()})


@pytest.fixture(scope="module")
def oracle() -> GrammarOracle:
    return GrammarOracle()


DIALECTS: list[GrammarDialect] = ["compact", "server"]


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("bounds", SETTINGS, ids=lambda b: str(b).replace(" ", ","))
def test_the_bound_is_the_longest_reply_brute_force_finds(
    oracle: GrammarOracle, bounds: SchemaBounds, dialect: GrammarDialect
) -> None:
    grammar = compile_grammar(bounded_schema(contract_schema(), bounds), dialect)
    bound = bounded_reply_tokens(bounds, dialect)
    admitted = admitted_choices(oracle, grammar, bounds)
    spelled = oracle.byte_spelling(longest(admitted).text())
    assert oracle.accepts(grammar, spelled)  # a model may emit it one byte per token
    assert len(spelled) + 1 == bound  # ...and then the end of generation: exactly the bound
    accepted = 0
    for candidate in random_mixes(admitted, 100, seed=len(dialect)):
        if oracle.accepts_text(grammar, candidate.text()):
            accepted += 1
            assert candidate.size + 1 <= bound
            if dialect == "compact":
                assert parse_reply(candidate.text()).ok, candidate.text()
    assert accepted >= 50


def test_a_fact_the_grammar_admits_is_never_blank(oracle: GrammarOracle) -> None:
    """The contract wants a non-whitespace character (``\\S``) in every fact: the grammar
    refuses a fact that starts with any character Python's ``re`` calls whitespace."""
    bounds = SchemaBounds(summary_chars=1, fact_chars=2, max_new_facts=1, max_removals=0)
    grammar = compile_grammar(bounded_schema(contract_schema(), bounds), "compact")
    spaces = [chr(c) for c in range(0x110000) if re.fullmatch(r"\s", chr(c))]
    assert len(spaces) > 20
    for space in spaces:
        text = json.dumps(space)[1:-1]  # as JSON writes it (control characters escaped)
        reply = Candidate(facts=1, content=text + "a").text()
        assert not oracle.accepts_text(grammar, reply), repr(space)
    assert oracle.accepts_text(grammar, Candidate(facts=1, content="a ").text())
