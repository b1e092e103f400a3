"""Grammars for schema-constrained decoding, and the longest reply each one admits.

llama.cpp constrains decoding with a GBNF grammar that its converter builds from a JSON Schema.
memlab uses two dialects of it:

``"server"``
    The converter's output as is: what ``python -m llama_cpp.server`` decodes with. It allows
    one optional space after every separator, any character but ``"`` and ``\\`` in a string
    (raw control characters too) plus six-byte ``\\uXXXX`` escapes, and numbers of up to 16
    digits before and after the point and in the exponent, whatever range the schema gives.
``"compact"``
    What memlab's local backend decodes with: the same grammar with three rules rewritten.
    No whitespace between tokens (compact separators), so a reply's length depends on its
    content alone; string characters that JSON allows unescaped, plus two-byte escapes
    (``\\n``, ``\\"`` ...); and, when every number in the schema lies in [0, 1] (the contract's
    confidences), a number rule admitting only [0, 1] with up to four decimals.

Both dialects also get what :func:`to_grammar_schema` does to the schema: unanchored patterns
dropped, except the contract's non-blank ``\\S``, which becomes "the first character is not
whitespace", so a grammar-made fact is never blank.

:func:`worst_case_tokens` bounds the length of any reply a grammar admits, in tokens of any
tokenizer: :func:`longest_text_bytes` is the longest UTF-8 text the grammar derives, and
every token a constrained model emits adds at least one byte (llama.cpp's grammar sampler
rejects tokens whose text is empty). The bound is tight for byte-level vocabularies such as
SmolLM2's, which hold a token for every byte: a model may spell any text one byte per token,
so counting the tokens of a text's usual tokenization would not bound what a model can emit.
One more token is the end of generation: llama-cpp-python ends a reply with ``length`` once it
has produced ``max_tokens`` tokens, even when the grammar is complete.
"""

from __future__ import annotations

import functools
import json
import math
import re
import threading
from collections.abc import Iterator, Mapping
from typing import Any, Literal

from memlab.backends.decoding.schema_walk import SchemaTransformer
from memlab.core.jsondoc.contract import SchemaBounds, bounded_schema, contract_schema
from memlab.core.pipeline.llm import BackendError

__all__ = [
    "COMPACT_CHAR_RULE",
    "UNIT_NUMBER_RULE",
    "GrammarDialect",
    "bounded_reply_tokens",
    "compile_grammar",
    "longest_text_bytes",
    "to_grammar_schema",
    "worst_case_tokens",
]

GrammarDialect = Literal["compact", "server"]
"""``"compact"``: memlab's local backend; ``"server"``: llama.cpp's converter unchanged."""

COMPACT_CHAR_RULE = r'[^"\\\x00-\x1F\x7F] | "\\" ["\\/bfnrt]'
"""A string character in the compact dialect: any character JSON allows unescaped, or a
two-character escape. (The converter's rule also admits raw control characters, which make
the reply invalid JSON, and ``\\uXXXX`` escapes, six bytes for one character.)"""

UNIT_NUMBER_RULE = r'"0" ("." [0-9]{1,4})? | "1" ("." "0"{1,4})?'
"""A number in [0, 1] with at most four decimals (the contract's confidences)."""

# Characters Python's `re` calls whitespace (`\s`): a non-blank string must not start with one.
_WHITESPACE_CLASS = r"\x00-\x20\x7F\x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000"
_PLAIN_CLASS = r'"\\\x00-\x1F\x7F'  # characters a JSON string cannot hold unescaped


def _non_blank_pattern(max_length: int | None) -> str:
    """An anchored pattern llama.cpp can convert: first character not whitespace."""
    rest = "*" if max_length is None else f"{{0,{max(0, max_length - 1)}}}"
    return f'^[^"\\\\{_WHITESPACE_CLASS}][^{_PLAIN_CLASS}]{rest}$'


class _GrammarSchema(SchemaTransformer):
    """What llama.cpp's converter can read (see :func:`to_grammar_schema`)."""

    def keyword(self, node: Mapping[str, Any], key: str, value: Any) -> tuple[str, Any] | None:
        if key in ("$schema", "$id"):
            return None
        if key == "pattern" and value == r"\S":
            return key, _non_blank_pattern(node.get("maxLength"))
        if key == "pattern" and not (
            isinstance(value, str) and value.startswith("^") and value.endswith("$")
        ):
            return None  # llama.cpp's converter only handles anchored patterns
        return key, value


def to_grammar_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Return a copy of ``schema`` that llama.cpp's JSON-schema-to-grammar converter accepts.

    The converter rejects unanchored ``pattern`` values (it needs ``^...$``), so those are
    dropped, as are ``$schema`` and ``$id``; the non-blank pattern ``\\S`` becomes an anchored
    pattern whose first character is not whitespace (within the string's ``maxLength``).
    Replies are still validated against the full schema by the pipeline, so nothing is lost;
    the grammar only narrows decoding.
    """
    return _GrammarSchema()(schema)


def compile_grammar(schema: Mapping[str, Any], dialect: GrammarDialect = "compact") -> str:
    """Compile ``schema`` to a llama.cpp GBNF grammar of ``dialect`` (cached per schema).

    Raises:
        BackendError: The schema uses something llama.cpp's converter cannot express.
            (llama.cpp itself would silently fall back to unconstrained JSON; memlab does not.)
    """
    # Key order matters: the grammar emits properties in the schema's order.
    grammar_schema = to_grammar_schema(schema)
    text = json.dumps(grammar_schema)
    with _grammar_lock:
        cached = _grammars.get((text, dialect))
    if cached is not None:
        return cached
    try:
        from llama_cpp.llama_grammar import json_schema_to_gbnf
    except ImportError as exc:
        raise BackendError(
            "Grammars for json_schema output need llama.cpp's converter: "
            "pip install 'memlab[local]'"
        ) from exc
    try:
        gbnf: str = json_schema_to_gbnf(text)
    except Exception as exc:  # the converter raises assorted errors (AssertionError, ...)
        raise BackendError(
            f"llama.cpp cannot turn the JSON Schema into a grammar ({type(exc).__name__}: "
            f"{exc}); simplify the schema or use output mode 'json_object'."
        ) from exc
    if dialect == "compact":
        gbnf = _compact(gbnf, _unit_interval_numbers(grammar_schema))
    with _grammar_lock:
        _grammars[(text, dialect)] = gbnf
    return gbnf


_grammars: dict[tuple[str, str], str] = {}
_grammar_lock = threading.Lock()


def _compact(gbnf: str, unit_numbers: bool) -> str:
    rules = _rules(gbnf)
    replacements = {"space": '""', "char": COMPACT_CHAR_RULE}
    if unit_numbers:
        replacements["number"] = UNIT_NUMBER_RULE
    for name, body in replacements.items():
        if name in rules:
            rules[name] = body
    return "".join(f"{name} ::= {body}\n" for name, body in rules.items())


def _unit_interval_numbers(schema: Any) -> bool:
    """Whether the schema has numbers and every one of them lies in [0, 1]."""
    numbers = [node for node in _nodes(schema) if node.get("type") in ("number", "integer")]
    return bool(numbers) and all(
        node.get("type") == "number"
        and isinstance(node.get("minimum"), int | float)
        and isinstance(node.get("maximum"), int | float)
        and 0 <= node["minimum"] <= node["maximum"] <= 1
        for node in numbers
    )


def _nodes(value: Any) -> Iterator[dict[str, Any]]:
    if isinstance(value, dict):
        yield value
        for sub in value.values():
            yield from _nodes(sub)
    elif isinstance(value, list):
        for sub in value:
            yield from _nodes(sub)


def worst_case_tokens(schema: Mapping[str, Any], dialect: GrammarDialect = "compact") -> int | None:
    """The most tokens a reply constrained by ``schema``'s grammar can take, the end of
    generation included; ``None`` when the grammar admits replies of any length.

    A ``max_tokens`` of at least this value lets every such reply finish with ``stop``.
    """
    longest = longest_text_bytes(compile_grammar(schema, dialect))
    return None if longest is None else longest + 1


@functools.cache
def bounded_reply_tokens(bounds: SchemaBounds, dialect: GrammarDialect = "compact") -> int:
    """The most tokens a contract reply can take under ``bounds`` (the end of generation
    included) when decoded with ``dialect``'s grammar: :func:`worst_case_tokens` of the
    bounded contract schema the updater sends. (A lane's dialect comes from its backend:
    :func:`memlab.backends.registry.dialect_for`.)"""
    tokens = worst_case_tokens(bounded_schema(contract_schema(), bounds), dialect)
    if tokens is None:  # every string and list of the contract is bounded: cannot happen
        raise ValueError(f"the contract's grammar under {bounds!r} admits replies of any length")
    return tokens


# --------------------------------------------------------------------------- GBNF lengths

_RULE = re.compile(r"^([A-Za-z0-9_-]+)\s*::=\s*(.*)$")


def _rules(gbnf: str) -> dict[str, str]:
    """``name -> body`` of a grammar written one rule per line (as llama.cpp's converter does)."""
    rules: dict[str, str] = {}
    for line in gbnf.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _RULE.match(line.strip())
        if match is None:
            raise ValueError(f"not a one-line GBNF rule: {line!r}")
        rules[match.group(1)] = match.group(2)
    return rules


def longest_text_bytes(gbnf: str, root: str = "root") -> int | None:
    """The length in UTF-8 bytes of the longest text ``gbnf`` derives from ``root``, or
    ``None`` when there is no longest (a ``*``, ``+``, open ``{m,}`` or recursion).

    Raises:
        ValueError: The grammar uses syntax this reader does not know, or an undefined rule.
    """
    longest = _Lengths(_rules(gbnf)).rule(root)
    return None if math.isinf(longest) else int(longest)


class _Lengths:
    """The longest derivation of each rule (memoised; a rule reached again while it is being
    read is recursion: unbounded)."""

    def __init__(self, rules: Mapping[str, str]) -> None:
        self._rules = rules
        self._done: dict[str, float] = {}
        self._active: set[str] = set()

    def rule(self, name: str) -> float:
        if name in self._done:
            return self._done[name]
        if name not in self._rules:
            raise ValueError(f"GBNF rule {name!r} is used but not defined")
        if name in self._active:
            return math.inf
        self._active.add(name)
        value = _Body(self._rules[name], self).longest()
        self._active.discard(name)
        self._done[name] = value
        return value


class _Body:
    """Reads one rule body left to right, with a stack of open groups instead of recursion:
    llama.cpp's converter writes a string of up to N characters as N nested optional groups.
    Each group keeps the longest of its closed alternatives and the length of the open one."""

    _NAME = re.compile(r"[A-Za-z0-9_-]+")

    def __init__(self, text: str, lengths: _Lengths) -> None:
        self.text = text
        self.pos = 0
        self.lengths = lengths

    def longest(self) -> float:
        groups: list[list[float]] = [[0.0, 0.0]]  # per open group: [best alternative, current]
        while (mark := self._peek()) != "":
            if mark == "(":
                self.pos += 1
                groups.append([0.0, 0.0])
                continue
            if mark == "|":
                self.pos += 1
                best, current = groups[-1]
                groups[-1] = [max(best, current), 0.0]
                continue
            if mark == ")":
                if len(groups) == 1:
                    raise ValueError(f"unbalanced ')' in GBNF rule {self.text!r}")
                self.pos += 1
                best, current = groups.pop()
                value = max(best, current)
            else:
                value = self._atom(mark)
            groups[-1][1] += self._repeated(value)
        if len(groups) != 1:
            raise ValueError(f"unclosed group in GBNF rule {self.text!r}")
        return max(groups[0])

    def _atom(self, mark: str) -> float:
        if mark == '"':
            return float(len(self._literal().encode("utf-8")))
        if mark == "[":
            return float(self._char_class())
        if mark == ".":
            self.pos += 1
            return 4.0  # any character: up to four bytes
        match = self._NAME.match(self.text, self.pos)
        if match is None:
            raise ValueError(f"unexpected {self.text[self.pos :]!r} in GBNF rule {self.text!r}")
        self.pos = match.end()
        return self.lengths.rule(match.group(0))

    def _repeated(self, longest: float) -> float:
        """Apply the repetition marks after an item to its longest length."""
        while True:
            mark = self._peek()
            if mark == "?":
                self.pos += 1
            elif mark in ("*", "+"):
                self.pos += 1
                longest = math.inf if longest > 0 else 0.0
            elif mark == "{":
                end = self.text.index("}", self.pos)
                low, comma, high = self.text[self.pos + 1 : end].partition(",")
                self.pos = end + 1
                if not comma:  # {m}
                    times = float(int(low))
                else:  # {m,n} or the open {m,}
                    times = float(int(high)) if high.strip() else math.inf
                longest = 0.0 if longest == 0 else longest * times
            else:
                return longest

    def _peek(self) -> str:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def _char(self) -> str:
        """One possibly escaped character of a literal or class."""
        char = self.text[self.pos]
        if char != "\\":
            self.pos += 1
            return char
        kind = self.text[self.pos + 1]
        digits = {"x": 2, "u": 4, "U": 8}.get(kind)
        if digits is not None:
            code = self.text[self.pos + 2 : self.pos + 2 + digits]
            self.pos += 2 + digits
            return chr(int(code, 16))
        self.pos += 2
        return {"n": "\n", "r": "\r", "t": "\t"}.get(kind, kind)

    def _literal(self) -> str:
        self.pos += 1  # opening quote
        chars = []
        while self.text[self.pos] != '"':
            chars.append(self._char())
        self.pos += 1
        return "".join(chars)

    def _char_class(self) -> int:
        """The longest UTF-8 encoding among the characters a class admits."""
        self.pos += 1  # [
        negated = self.text[self.pos] == "^"
        if negated:
            self.pos += 1
        highest = 0
        while self.text[self.pos] != "]":
            char = self._char()
            if self.text[self.pos] == "-" and self.text[self.pos + 1] != "]":
                self.pos += 1
                char = self._char()
            highest = max(highest, ord(char))
        self.pos += 1
        # A negated class admits characters outside its list, up to four bytes long.
        return 4 if negated else len(chr(highest).encode("utf-8", "surrogatepass"))
