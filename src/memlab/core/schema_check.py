"""One compiled JSON Schema validator for the reply contract and the dataset format.

:class:`CompiledSchema` answers "valid?" with code that ``fastjsonschema`` generates from the
schema (about 12 times faster than ``jsonschema``'s validator on a line of the bundled
``personas`` dataset), and lists every violation of an invalid value by walking the schema
itself (about 5 times faster than ``jsonschema``). The walk reports what ``jsonschema``'s
draft 2020-12 validator reports for the same value (the same instance paths, keywords, order
and messages; ``tests/test_schema_check.py`` compares both on a corpus of broken inputs)
without importing ``jsonschema``, whose import alone takes most of a second (its format
checkers load optional packages, one of which builds a grammar at import).

Only the keywords memlab's schemas use are supported; a schema with any other validation
keyword is refused when it is compiled, so a keyword can never be skipped silently. ``format``
is an annotation, as in draft 2020-12 by default: it is not checked.
"""

from __future__ import annotations

import copy
import numbers
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["CompiledSchema", "SchemaError"]

# Keywords that only describe (or that the walk reads through another keyword).
_ANNOTATIONS = frozenset(
    [
        "$schema",
        "$id",
        "$defs",
        "$comment",
        "title",
        "description",
        "default",
        "examples",
        "format",
        "errorMessage",
        "then",
        "else",
    ]
)
_SCHEMA_MAPS = frozenset({"properties", "$defs"})  # name -> subschema


@dataclass(frozen=True)
class SchemaError:
    """One violation, with the fields of a ``jsonschema.ValidationError`` that memlab reads.

    Attributes:
        path: Where the offending value is, from the document's root (keys and indices).
        keyword: The schema keyword that failed (``required``, ``type``, ``enum`` ...).
        value: That keyword's value in the schema (``["a", "b"]`` for an ``enum``).
        instance: The offending value.
        schema: The (sub)schema holding the keyword (its ``errorMessage``, its ``properties``).
        message: What ``jsonschema`` says (``"'x' is not one of ['a', 'b']"``).
    """

    path: tuple[str | int, ...]
    keyword: str
    value: Any
    instance: Any
    schema: Mapping[str, Any]
    message: str


_Errors = Iterator[tuple[tuple[str | int, ...], str, str]]  # (relative path, keyword, message)


class CompiledSchema:
    """A JSON Schema compiled once: :meth:`compiled_check` fast, :meth:`errors` complete.

    Args:
        schema: A draft 2020-12 schema whose references are local (``#/$defs/NAME``). It is
            not modified (``fastjsonschema`` gets a copy: it writes resolved references into
            the schema it compiles).

    Raises:
        ValueError: The schema uses a keyword or a reference the walk does not support.
    """

    def __init__(self, schema: Mapping[str, Any]) -> None:
        import fastjsonschema

        self.schema = schema
        _check_supported(schema, schema)
        self._fast: Callable[[Any], Any] = fastjsonschema.compile(
            copy.deepcopy(dict(schema)), use_default=False, use_formats=False
        )
        self._patterns: dict[str, re.Pattern[str]] = {}

    def compiled_check(self, instance: Any) -> bool:
        """The compiled check alone: ``True`` when ``fastjsonschema`` accepts ``instance``.

        It differs from draft 2020-12 on a few values: it takes a tuple as an array, and its
        ``pattern`` reads ``$`` as the very end of the text (``jsonschema`` also lets a final
        newline through). Callers that may hold tuples check for them first; a rejection is
        confirmed by the walk, which has the last word.
        """
        try:
            self._fast(instance)
        except Exception:  # any doubt (an error or a surprise) goes to the walk
            return False
        return True

    def errors(self, instance: Any, *, fast: bool = True) -> list[SchemaError]:
        """Every violation in ``instance``, in ``jsonschema``'s order (empty when valid).

        Args:
            fast: Try the compiled check first (a valid value then costs no walk); only for
                plain JSON trees (see :meth:`compiled_check`).
        """
        if fast and self.compiled_check(instance):
            return []
        return list(self._walk(instance, self.schema, ()))

    # --- the walk: one generator per keyword, as jsonschema's validators ------------------

    def _walk(
        self, instance: Any, schema: Mapping[str, Any], path: tuple[str | int, ...]
    ) -> Iterator[SchemaError]:
        for keyword, value in schema.items():
            check = _KEYWORDS.get(keyword)
            if check is None:
                continue
            for error in check(self, value, instance, schema, path):
                yield (
                    error
                    if isinstance(error, SchemaError)
                    else SchemaError(path, keyword, value, instance, schema, error)
                )

    def _valid_under(self, instance: Any, schema: Mapping[str, Any]) -> bool:
        return next(self._walk(instance, schema, ()), None) is None

    def _search(self, pattern: str, text: str) -> bool:
        compiled = self._patterns.get(pattern)
        if compiled is None:
            compiled = self._patterns[pattern] = re.compile(pattern)
        return compiled.search(text) is not None


_Check = Callable[
    [CompiledSchema, Any, Any, Mapping[str, Any], tuple[str | int, ...]],
    Iterator["SchemaError | str"],
]


def _is_type(instance: Any, kind: str) -> bool:
    if kind == "object":
        return isinstance(instance, dict)
    if kind == "array":
        return isinstance(instance, list)
    if kind == "string":
        return isinstance(instance, str)
    if kind == "boolean":
        return isinstance(instance, bool)
    if kind == "null":
        return instance is None
    if isinstance(instance, bool):
        return False
    if kind == "integer":
        return isinstance(instance, int) or (isinstance(instance, float) and instance.is_integer())
    if kind == "number":
        return isinstance(instance, numbers.Number)
    raise ValueError(f"unknown JSON Schema type {kind!r}")


def _unbool(value: Any) -> Any:
    # True == 1 in Python, not in JSON: tell them apart as jsonschema does.
    return ("bool", value) if isinstance(value, bool) else value


def _equal(one: Any, two: Any) -> bool:
    if one is two:
        return True
    if isinstance(one, str) or isinstance(two, str):
        return bool(one == two)
    if isinstance(one, Sequence) and isinstance(two, Sequence):
        return len(one) == len(two) and all(_equal(a, b) for a, b in zip(one, two, strict=True))
    if isinstance(one, Mapping) and isinstance(two, Mapping):
        return len(one) == len(two) and all(k in two and _equal(v, two[k]) for k, v in one.items())
    return bool(_unbool(one) == _unbool(two))


def _type(v: CompiledSchema, types: Any, instance: Any, *_: Any) -> Iterator[str]:
    kinds = [types] if isinstance(types, str) else list(types)
    if not any(_is_type(instance, kind) for kind in kinds):
        yield f"{instance!r} is not of type {', '.join(repr(kind) for kind in kinds)}"


def _enum(v: CompiledSchema, enums: Any, instance: Any, *_: Any) -> Iterator[str]:
    if all(not _equal(each, instance) for each in enums):
        yield f"{instance!r} is not one of {enums!r}"


def _const(v: CompiledSchema, const: Any, instance: Any, *_: Any) -> Iterator[str]:
    if not _equal(instance, const):
        yield f"{const!r} was expected"


def _required(v: CompiledSchema, names: Any, instance: Any, *_: Any) -> Iterator[str]:
    if isinstance(instance, dict):
        for name in names:
            if name not in instance:
                yield f"{name!r} is a required property"


def _properties(
    v: CompiledSchema, props: Any, instance: Any, _s: Any, path: tuple[str | int, ...]
) -> Iterator[SchemaError]:
    if isinstance(instance, dict):
        for name, sub in props.items():
            if name in instance:
                yield from v._walk(instance[name], sub, (*path, name))


def _additional(
    v: CompiledSchema, allowed: Any, instance: Any, schema: Mapping[str, Any], *_: Any
) -> Iterator[str]:
    # Only true or false (checked at compile): a schema here would be walked in set order.
    if allowed or not isinstance(instance, dict):
        return
    known = schema.get("properties", {})
    extras = sorted({name for name in instance if name not in known}, key=str)
    if extras:
        verb = "was" if len(extras) == 1 else "were"
        listed = ", ".join(repr(name) for name in extras)
        yield f"Additional properties are not allowed ({listed} {verb} unexpected)"


def _items(
    v: CompiledSchema, sub: Any, instance: Any, _s: Any, path: tuple[str | int, ...]
) -> Iterator[SchemaError]:
    if isinstance(instance, list):
        for index, item in enumerate(instance):
            yield from v._walk(item, sub, (*path, index))


def _size(kind: str, low: bool) -> _Check:
    sized = list if kind == "array" else str

    def check(v: CompiledSchema, limit: Any, instance: Any, *_: Any) -> Iterator[str]:
        if not isinstance(instance, sized):
            return
        if low and len(instance) < limit:
            yield f"{instance!r} {'should be non-empty' if limit == 1 else 'is too short'}"
        elif not low and len(instance) > limit:
            yield f"{instance!r} {'is expected to be empty' if limit == 0 else 'is too long'}"

    return check


def _minimum(v: CompiledSchema, low: Any, instance: Any, *_: Any) -> Iterator[str]:
    if _is_type(instance, "number") and instance < low:
        yield f"{instance!r} is less than the minimum of {low!r}"


def _maximum(v: CompiledSchema, high: Any, instance: Any, *_: Any) -> Iterator[str]:
    if _is_type(instance, "number") and instance > high:
        yield f"{instance!r} is greater than the maximum of {high!r}"


def _pattern(v: CompiledSchema, pattern: Any, instance: Any, *_: Any) -> Iterator[str]:
    if isinstance(instance, str) and not v._search(pattern, instance):
        yield f"{instance!r} does not match {pattern!r}"


def _not(v: CompiledSchema, sub: Any, instance: Any, *_: Any) -> Iterator[str]:
    if v._valid_under(instance, sub):
        yield f"{instance!r} should not be valid under {sub!r}"


def _if(
    v: CompiledSchema, sub: Any, instance: Any, schema: Mapping[str, Any], path: Any
) -> Iterator[SchemaError]:
    branch = "then" if v._valid_under(instance, sub) else "else"
    if branch in schema:
        yield from v._walk(instance, schema[branch], path)


def _all_of(
    v: CompiledSchema, subs: Any, instance: Any, _s: Any, path: Any
) -> Iterator[SchemaError]:
    for sub in subs:
        yield from v._walk(instance, sub, path)


def _ref(v: CompiledSchema, ref: Any, instance: Any, _s: Any, path: Any) -> Iterator[SchemaError]:
    yield from v._walk(instance, _resolve(ref, v.schema), path)


_KEYWORDS: dict[str, _Check] = {
    "$ref": _ref,
    "type": _type,
    "enum": _enum,
    "const": _const,
    "required": _required,
    "properties": _properties,
    "additionalProperties": _additional,
    "items": _items,
    "minItems": _size("array", low=True),
    "maxItems": _size("array", low=False),
    "minLength": _size("string", low=True),
    "maxLength": _size("string", low=False),
    "minimum": _minimum,
    "maximum": _maximum,
    "pattern": _pattern,
    "not": _not,
    "if": _if,
    "allOf": _all_of,
}


def _check_supported(node: Any, root: Mapping[str, Any]) -> None:
    """Refuse a keyword the walk does not know, or a reference it cannot follow."""
    if isinstance(node, bool):
        raise ValueError("boolean schemas are not supported; write {} or {'not': {}}")
    if not isinstance(node, Mapping):
        raise ValueError(f"a schema must be an object, got {node!r}")
    for key, value in node.items():
        if key not in _KEYWORDS and key not in _ANNOTATIONS:
            raise ValueError(f"JSON Schema keyword {key!r} is not supported by CompiledSchema")
        if key == "$ref":
            _resolve(value, root)
        if key in _SCHEMA_MAPS:
            for sub in value.values():
                _check_supported(sub, root)
        elif key == "allOf":
            for sub in value:
                _check_supported(sub, root)
        elif key in ("items", "not", "if", "then", "else"):
            _check_supported(value, root)
        elif key == "additionalProperties" and not isinstance(value, bool):
            raise ValueError("additionalProperties must be true or false in CompiledSchema")


def _resolve(ref: Any, root: Mapping[str, Any]) -> Mapping[str, Any]:
    """The subschema a local reference (``#/$defs/NAME``, a JSON Pointer) points at."""
    if not (isinstance(ref, str) and ref.startswith("#/")):
        raise ValueError(f"only local references (#/...) are supported, got {ref!r}")
    node: Any = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, Mapping) or part not in node:
            raise ValueError(f"reference {ref!r} points at nothing in the schema")
        node = node[part]
    if not isinstance(node, Mapping):
        raise ValueError(f"reference {ref!r} does not point at a schema object")
    return node
