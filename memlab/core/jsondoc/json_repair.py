"""A scanner that rewrites broken JSON from a model reply into decodable candidates.

Used by the repair rung of :mod:`memlab.core.jsondoc.parsing`. Starting at a ``{``, it copies the
object while fixing what small models commonly break: trailing commas, single-quoted strings,
Python ``True``/``False``/``None``, raw control characters inside strings and ``//`` comments.
When the text ends inside the object, the scan is *truncated*: its candidates drop the
incomplete trailing element (an unterminated string is never completed, since half a fact is a
wrong fact) and close the open arrays and objects, then drop the incomplete element of each
enclosing level in turn. It never invents keys.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field

__all__ = ["RepairScan", "repair_scan"]

MAX_REPAIR_DEPTH = 6
"""Enclosing levels whose incomplete element may be dropped in turn."""
_TOKEN_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_+-.")
_PY_LITERALS = {"True": "true", "False": "false", "None": "null"}


@dataclass
class _Level:
    closer: str
    open_pos: int
    last_complete: int | None = None
    after_colon: bool = False


@dataclass
class RepairScan:
    """What :func:`repair_scan` found for one object."""

    written: str = ""  # the rewritten JSON (complete, or up to the cut-off)
    truncated: bool = False
    end: int = 0  # index in the region just after the object (len(text) when truncated)
    changes: set[str] = field(default_factory=set)
    stack: list[_Level] = field(default_factory=list)  # levels left open at the cut-off

    def candidates(self) -> Iterator[str]:
        """JSON texts to try: the rewrite itself, or for a cut-off one per open level,
        innermost first, each dropping the incomplete element of that level."""
        if not self.truncated:
            yield self.written
            return
        # The contract nests three levels deep; deeper cuts cannot produce a valid update.
        for depth in range(min(len(self.stack), MAX_REPAIR_DEPTH), 0, -1):
            level = self.stack[depth - 1]
            cut = level.last_complete if level.last_complete is not None else level.open_pos
            closers = "".join(lv.closer for lv in reversed(self.stack[:depth]))
            yield self.written[:cut].rstrip().rstrip(",") + closers


class _Writer:
    def __init__(self) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.comma: int | None = None  # index in parts of a comma not yet followed by a value

    def emit(self, text: str) -> None:
        if text.strip():
            self.comma = len(self.parts) if text == "," else None
        self.parts.append(text)
        self.size += len(text)

    def drop_comma(self) -> bool:
        if self.comma is None:
            return False
        self.parts[self.comma] = ""
        self.size -= 1
        self.comma = None
        return True

    def text(self) -> str:
        return "".join(self.parts)


def _read_string(text: str, i: int, changes: set[str]) -> tuple[str | None, int]:
    """Read the string starting at `text[i]`; return (JSON string literal, next index) or
    (None, len(text)) when it is unterminated."""
    quote = text[i]
    if quote == "'":
        changes.add("single_quotes")
    chars: list[str] = ['"']
    j = i + 1
    while j < len(text):
        ch = text[j]
        if ch == "\\":
            if j + 1 >= len(text):
                break
            nxt = text[j + 1]
            chars.append("'" if quote == "'" and nxt == "'" else "\\" + nxt)
            j += 2
            continue
        if ch == quote:
            chars.append('"')
            return "".join(chars), j + 1
        if ch == '"':  # only reachable inside a single-quoted string
            chars.append('\\"')
        elif ch < " ":
            changes.add("control_chars")
            chars.append(json.dumps(ch)[1:-1])
        else:
            chars.append(ch)
        j += 1
    return None, len(text)


def repair_scan(text: str, start: int) -> RepairScan | None:
    """Rewrite the JSON-ish value starting at `text[start]` ('{') into JSON candidates.

    Returns None when brackets are mismatched (nothing sensible to repair).
    """
    scan = RepairScan()
    out = _Writer()
    stack: list[_Level] = []
    i, n = start, len(text)
    while i < n:
        ch = text[i]
        if ch in "{[":
            out.emit(ch)
            stack.append(_Level("}" if ch == "{" else "]", out.size))
        elif ch in "}]":
            if not stack or stack[-1].closer != ch:
                return None
            if out.drop_comma():
                scan.changes.add("trailing_comma")
            stack.pop()
            out.emit(ch)
            _value_done(stack, out)
            if not stack:
                scan.end = i + 1
                scan.written = out.text()
                return scan
        elif ch in "\"'":
            literal, i = _read_string(text, i, scan.changes)
            if literal is None:
                break
            out.emit(literal)
            in_key = bool(stack) and stack[-1].closer == "}" and not stack[-1].after_colon
            if not in_key:
                _value_done(stack, out)
            continue
        elif ch == ":":
            out.emit(ch)
            if stack and stack[-1].closer == "}":
                stack[-1].after_colon = True
        elif ch == "/" and text.startswith("//", i):
            scan.changes.add("comments")
            newline = text.find("\n", i)
            i = n if newline == -1 else newline
            continue
        elif ch in _TOKEN_CHARS:
            token, i = _read_token(text, i, scan.changes)
            if token is None:
                break
            out.emit(token)
            _value_done(stack, out)
            continue
        else:
            out.emit(ch)
        i += 1
    return _cut_off(scan, out, stack, n)


def _value_done(stack: list[_Level], out: _Writer) -> None:
    """A value of the innermost level is complete: a cut-off may keep everything up to here."""
    if stack:
        stack[-1].last_complete = out.size
        stack[-1].after_colon = False


def _cut_off(scan: RepairScan, out: _Writer, stack: list[_Level], end: int) -> RepairScan:
    """The scan of a reply that ended at ``end`` with open containers: it was cut off."""
    scan.truncated = True
    scan.end = end
    scan.changes.add("truncation")
    scan.written = out.text()
    scan.stack = stack
    return scan


def _read_token(text: str, i: int, changes: set[str]) -> tuple[str | None, int]:
    """Read the number or literal starting at `text[i]`; return (JSON token, next index) or
    (None, len(text)) when the text ends inside it. Python literals become JSON ones."""
    j = i
    while j < len(text) and text[j] in _TOKEN_CHARS:
        j += 1
    if j >= len(text):
        return None, len(text)  # a number or literal cut off by the end of the reply
    token = text[i:j]
    if token in _PY_LITERALS:
        changes.add("python_literals")
        token = _PY_LITERALS[token]
    return token, j
