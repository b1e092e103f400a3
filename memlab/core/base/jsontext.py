"""Fast copies and indented text of JSON values, identical to what the ``json`` module gives.

Every update copies the memory document several times and renders it into the prompt as
indented JSON. The standard library does both slowly for this shape of data: a deep copy
through ``copy.deepcopy`` or a JSON round trip, and ``json.dumps(indent=2)``, which falls back
to the pure-Python encoder whenever ``indent`` is set. The two functions here do the same work
in a fraction of the time and give exactly the same result:

- :func:`copy_json` equals ``json.loads(json.dumps(value))`` for every value that the JSON
  module accepts (tuples become lists, keys become strings), and raises ``TypeError`` for the
  values it rejects.
- :func:`dumps_indented` returns the same string as ``json.dumps(value, indent=indent,
  ensure_ascii=False)``. Containers holding only plain scalars (a fact, a section) go through
  the C encoder with the line break and indentation folded into the item separator; the
  rest is walked in Python. Anything unusual (subclasses of the JSON types, non-string keys)
  falls back to ``json.dumps`` for the whole value, so the output never differs.

JSON read from files memlab did not write (datasets, memory files, cache entries) is decoded
with :func:`loads_json`, which refuses values nested deeper than :data:`MAX_JSON_DEPTH`: deeper
values pass ``json.loads`` up to about 1,000 levels and then crash later steps (validation,
serialisation, prompt rendering) with ``RecursionError``. Every reader uses the same limit, so
what validation accepts, a replay can process.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any, TypeVar

from memlab.errors import MemlabError

__all__ = [
    "MAX_JSON_DEPTH",
    "JsonDepthError",
    "canonical_hash",
    "canonical_json",
    "copy_json",
    "dumps_indented",
    "few_brackets",
    "loads_json",
    "nesting_path",
    "scan_json",
]

MAX_JSON_DEPTH = 100
"""Deepest nesting of objects and arrays accepted in JSON input (datasets, memory, cache)."""

_T = TypeVar("_T")

# Exact types only: subclasses (IntEnum, str enums, OrderedDict, ...) take the slow, exact path.
_SCALARS = frozenset({str, int, float, bool, type(None)})
_STR = frozenset({str})


class _Unusual(Exception):
    """Raised inside the fast paths for a value that only the ``json`` module formats right."""


def copy_json(value: _T) -> _T:
    """Return a deep copy of a JSON value, equal to ``json.loads(json.dumps(value))``.

    One difference: integers longer than Python's int-to-text limit (4,300 digits by default)
    are copied, where ``json.dumps`` refuses them.

    Raises:
        TypeError: Some value is not JSON-serialisable.
        RecursionError: The value contains itself.
    """
    try:
        return _copy(value)  # type: ignore[no-any-return]
    except _Unusual:
        copied: _T = json.loads(json.dumps(value))
        return copied


def _copy(value: Any) -> Any:
    kind = type(value)
    if kind is dict:
        if not _STR.issuperset(map(type, value)):
            raise _Unusual  # non-string keys: JSON turns them into strings
        copied = dict(value)  # a C-level copy; only nested containers need more work
        if not _SCALARS.issuperset(map(type, copied.values())):
            for key, item in copied.items():
                if type(item) not in _SCALARS:
                    copied[key] = _copy(item)
        return copied
    if kind is list or kind is tuple:
        return [item if type(item) in _SCALARS else _copy(item) for item in value]
    if kind in _SCALARS:
        return value
    raise _Unusual


_MAX_DEPTH = MAX_JSON_DEPTH  # deeper values count as not plain: copying bounds recursion itself


class JsonDepthError(MemlabError, ValueError):
    """A JSON value is nested deeper than :data:`MAX_JSON_DEPTH`.

    Attributes:
        path: Keys and indexes leading to the first container that is too deep (its first
            ``limit`` steps), or ``None`` when the text was too deep to decode at all.
        limit: The nesting limit.
        where: ``path`` as a short field path such as ``sessions[0].messages[1]...`` (empty
            when ``path`` is ``None``).
    """

    def __init__(self, path: list[str | int] | None, limit: int) -> None:
        self.path = path
        self.limit = limit
        self.where = _render_path(path) if path else ""
        super().__init__(
            f"JSON nested more than {limit} levels deep; flatten the data (memlab accepts at "
            f"most {limit} levels of objects and arrays)"
        )


def _render_path(path: list[str | int], shown: int = 6) -> str:
    parts = [f"[{p}]" if isinstance(p, int) else f".{p}" for p in path[:shown]]
    text = "".join(parts).lstrip(".")
    if len(text) > 120:
        text = text[:117] + "..."
    return text + ("..." if len(path) > shown else "")


def _within_depth(value: Any, limit: int) -> bool:
    """Whether no container in ``value`` is nested deeper than ``limit`` (the common case,
    checked without building the paths :func:`nesting_path` reports).

    Level by level: a container whose children are all plain scalars (most of them: a fact,
    a message, a verdict) is passed over by one C-level type check, without a Python step per
    child. Anything else that is neither a scalar nor an exact ``dict``/``list`` (a subclass,
    a tuple) takes the general walk."""
    if limit < 1:
        return not isinstance(value, dict | list)
    level = [value] if type(value) is dict or type(value) is list else []
    if not level:
        return _within_depth_any(value, limit)
    depth = 1
    while level:
        deeper: list[Any] = []
        for container in level:
            children = container.values() if type(container) is dict else container
            if _SCALARS.issuperset(map(type, children)):
                continue
            for item in children:
                kind = type(item)
                if kind is dict or kind is list:
                    deeper.append(item)
                elif kind not in _SCALARS:
                    return _within_depth_any(value, limit)
        if deeper and depth >= limit:
            return False
        level = deeper
        depth += 1
    return True


def _within_depth_any(value: Any, limit: int) -> bool:
    """:func:`_within_depth` for values with subclasses of ``dict`` and ``list`` in them."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        container, depth = stack.pop()
        if isinstance(container, dict):
            children: Any = container.values()
        elif isinstance(container, list):
            children = container
        else:
            continue
        for item in children:
            if isinstance(item, dict | list):
                if depth >= limit:
                    return False
                stack.append((item, depth + 1))
    return True


def nesting_path(value: Any, limit: int = MAX_JSON_DEPTH) -> list[str | int] | None:
    """Path to the first container nested deeper than ``limit``, or ``None`` when none is.

    The outermost object or array is level 1. The walk is iterative, so any depth is safe,
    and it visits each container once.
    """
    if _within_depth(value, limit):
        return None
    stack: list[tuple[Any, list[str | int]]] = [(value, [])]
    while stack:
        container, path = stack.pop()
        if isinstance(container, dict):
            items: Any = container.items()
        elif isinstance(container, list):
            items = enumerate(container)
        else:
            continue
        if len(path) >= limit:
            return path[:limit]
        for key, item in items:
            if isinstance(item, dict | list):
                stack.append((item, [*path, key]))
    return None


def loads_json(text: str | bytes, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads`` for untrusted input: also refuses values nested deeper than ``max_depth``.

    Raises:
        json.JSONDecodeError: The text is not valid JSON.
        JsonDepthError: The value is nested too deeply (also when ``json.loads`` itself gives
            up with ``RecursionError``).
    """
    try:
        value = json.loads(text)
    except RecursionError:
        raise JsonDepthError(None, max_depth) from None
    if few_brackets(text, max_depth):
        return value
    path = nesting_path(value, max_depth)
    if path is not None:
        raise JsonDepthError(path, max_depth)
    return value


def few_brackets(text: str | bytes, limit: int) -> bool:
    """Whether ``text`` holds at most ``limit`` opening brackets, so no value decoded from it
    can nest deeper: each object and array begins with one (counting those inside strings
    too only overestimates). A cache entry or a run table's row passes without the walk of
    :func:`nesting_path`.
    The count is of the byte ``{``/``[`` in any encoding ``json.loads`` accepts."""
    if isinstance(text, str):
        return text.count("{") + text.count("[") <= limit
    return text.count(b"{") + text.count(b"[") <= limit


def scan_json(value: Any) -> tuple[bool, float | None]:
    """Walk ``value`` once: (is it a plain JSON tree?, a NaN or infinity found in it).

    Plain means exact JSON types with string keys, each container reached once and nested at
    most 100 deep; shared or self-containing containers, tuples and subclasses are not plain.
    The walk stops at the first NaN or infinity, or at the first thing that is not plain.
    """
    kind = type(value)
    if kind is not dict and kind is not list:
        if kind not in _SCALARS:
            return False, None
        return True, (value if kind is float and not math.isfinite(value) else None)
    stack: list[tuple[Any, int]] = [(value, 0)]
    seen: set[int] = set()
    while stack:
        container, depth = stack.pop()
        if id(container) in seen or depth > _MAX_DEPTH:
            return False, None
        seen.add(id(container))
        if type(container) is dict:
            if not _STR.issuperset(map(type, container)):
                return False, None
            values = container.values()
        else:
            values = container
        kinds = set(map(type, values))
        if float in kinds:
            for item in values:
                if type(item) is float and not math.isfinite(item):
                    return True, float(item)
        if kinds <= _SCALARS:
            continue  # a flat container: the common case, checked without a Python loop
        for item in values:
            item_kind = type(item)
            if item_kind is dict or item_kind is list:
                stack.append((item, depth + 1))
            elif item_kind not in _SCALARS:
                return False, None
    return True, None


def canonical_json(value: Any) -> str:
    """``value`` as canonical JSON: sorted keys, no whitespace, characters unescaped."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_hash(value: Any) -> str:
    """SHA-256 of ``value`` as canonical JSON (:func:`canonical_json`): the content address
    of lanes, fingerprints and snapshots."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def dumps_indented(value: Any, indent: int | str | None = 2) -> str:
    """Return ``json.dumps(value, indent=indent, ensure_ascii=False)``, computed faster.

    Raises:
        TypeError: Some value is not JSON-serialisable.
        ValueError: The value contains itself.
    """
    if type(indent) is not int or indent < 0:
        # A string indent ("\t") or None: the json module handles every form it accepts.
        return json.dumps(value, indent=indent, ensure_ascii=False)
    try:
        parts: list[str] = []
        _Writer(indent).write(value, 0, parts)
        return "".join(parts)
    except (_Unusual, RecursionError):
        return json.dumps(value, indent=indent, ensure_ascii=False)


def _is_flat(items: Any) -> bool:
    return _SCALARS.issuperset(map(type, items))


# Text of flat containers already written, by (indent, level, items, item types). Memory facts
# rarely change once stored, so most of a prompt's facts are found here. -0.0 == 0.0 (with
# different text), so containers holding a zero float are not remembered.
_flat_texts: dict[tuple[Any, ...], str] = {}
_FLAT_TEXTS_MAX = 20_000


class _Writer:
    """Writes one value as indented JSON; holds a C-backed encoder per nesting level."""

    def __init__(self, indent: int) -> None:
        self.indent = indent
        self._encoders: dict[int, json.JSONEncoder] = {}

    def _pad(self, level: int) -> str:
        return "\n" + " " * (self.indent * level)

    def _flat_encoder(self, level: int) -> json.JSONEncoder:
        # Without ``indent`` the C encoder is used; putting the newline and the indentation
        # into the item separator makes it write the indented layout of a flat container.
        encoder = self._encoders.get(level)
        if encoder is None:
            encoder = json.JSONEncoder(
                ensure_ascii=False, separators=("," + self._pad(level + 1), ": ")
            )
            self._encoders[level] = encoder
        return encoder

    def write(self, value: Any, level: int, out: list[str]) -> None:
        kind = type(value)
        if kind is dict:
            if not value:
                out.append("{}")
            elif _is_flat(value.values()) and _STR.issuperset(map(type, value)):
                self._write_flat(value, level, out, tuple(value.items()), value.values())
            else:
                self._write_dict(value, level, out)
        elif kind is list:
            if not value:
                out.append("[]")
            elif _is_flat(value):
                self._write_flat(value, level, out, tuple(value), value)
            else:
                self._write_list(value, level, out)
        elif kind is str:
            out.append(json.encoder.encode_basestring(value))
        elif kind is float:
            out.append(_float_text(value))
        elif kind is int:
            out.append(int.__repr__(value))
        elif value is True:
            out.append("true")
        elif value is False:
            out.append("false")
        elif value is None:
            out.append("null")
        else:
            raise _Unusual  # tuples, subclasses, unknown types: let ``json`` decide

    def _write_flat(
        self,
        value: dict[str, Any] | list[Any],
        level: int,
        out: list[str],
        items: tuple[Any, ...],
        values: Any,
    ) -> None:
        types = tuple(map(type, values))
        key = (self.indent, level, items, types)
        text = _flat_texts.get(key)
        if text is None:
            encoded = self._flat_encoder(level).encode(value)
            # "{a,<pad>b}" -> "{<pad>a,<pad>b<pad-1>}"
            text = encoded[0] + self._pad(level + 1) + encoded[1:-1] + self._pad(level)
            text += encoded[-1]
            if not (float in types and 0.0 in values):
                if len(_flat_texts) >= _FLAT_TEXTS_MAX:
                    _flat_texts.clear()
                _flat_texts[key] = text
        out.append(text)

    def _write_dict(self, value: dict[Any, Any], level: int, out: list[str]) -> None:
        inner = self._pad(level + 1)
        out.append("{")
        first = True
        for key, item in value.items():
            if type(key) is not str:
                raise _Unusual
            out.append(inner if first else "," + inner)
            first = False
            out.append(json.encoder.encode_basestring(key))
            out.append(": ")
            self.write(item, level + 1, out)
        out.append(self._pad(level) + "}")

    def _write_list(self, value: list[Any], level: int, out: list[str]) -> None:
        inner = self._pad(level + 1)
        out.append("[")
        for index, item in enumerate(value):
            out.append(inner if index == 0 else "," + inner)
            if (
                type(item) is dict
                and item
                and _is_flat(item.values())
                and _STR.issuperset(map(type, item))
            ):
                # A list of flat objects (the facts): skip the general dispatch.
                self._write_flat(item, level + 1, out, tuple(item.items()), item.values())
            else:
                self.write(item, level + 1, out)
        out.append(self._pad(level) + "]")


def _float_text(value: float) -> str:
    # The json module's spelling: repr for finite values, JavaScript names otherwise.
    if math.isfinite(value):
        return float.__repr__(value)
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"
