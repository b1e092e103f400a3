"""One compiled JSON Schema validator for the reply contract and the dataset format.

``jsonschema``'s draft 2020-12 validator is the validator of record: it lists every violation
of an invalid value. It is imported only when a value first fails (its import takes a good
part of a second, more when its optional format checkers are installed), so a command that
meets only valid replies and dataset lines never loads it.

"Valid?" is answered first by code that ``fastjsonschema`` generates from the schema, many
times faster than ``jsonschema`` on a line of the bundled ``personas`` dataset or on a reply
(``benchmarks/schema_bench.py`` measures both side by side). ``fastjsonschema`` implements
draft 7, so that check is used only when every keyword of the schema means the same in both
drafts; any other schema goes to ``jsonschema`` alone. A rejection by the fast check is always
confirmed by ``jsonschema``, which has the last word. ``format`` is an annotation, as in
draft 2020-12 by default: neither checks it.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["CompiledSchema", "SchemaError"]

logger = logging.getLogger(__name__)

# Keywords that mean the same in draft 7 (fastjsonschema) and draft 2020-12 (jsonschema) as
# memlab's schemas use them; a schema with any other keyword skips the fast check.
_SHARED_KEYWORDS = frozenset(
    {
        "$ref", "type", "enum", "const", "required", "properties", "additionalProperties",
        "items", "minItems", "maxItems", "minLength", "maxLength", "minimum", "maximum",
        "pattern", "not", "if", "then", "else", "allOf",
        # annotations
        "$schema", "$id", "$defs", "$comment", "title", "description", "default", "examples",
        "format", "errorMessage",
    }
)  # fmt: skip
_SUBSCHEMA = ("items", "not", "if", "then", "else", "additionalProperties")
_SUBSCHEMA_MAPS = ("properties", "$defs")


@dataclass(frozen=True)
class SchemaError:
    """One violation: the fields of a ``jsonschema.ValidationError`` that memlab reads.

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


class CompiledSchema:
    """A JSON Schema compiled once: :meth:`compiled_check` fast, :meth:`errors` complete.

    Args:
        schema: A draft 2020-12 schema. It is not modified (``fastjsonschema`` gets a copy:
            it writes resolved references into the schema it compiles).
    """

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self.schema = schema
        self._fast: Callable[[Any], Any] | None = None
        self._reference: Any = None  # the jsonschema validator, built on first need
        unshared = _unshared_keyword(schema)
        if unshared is None:
            import fastjsonschema

            self._fast = fastjsonschema.compile(
                copy.deepcopy(dict(schema)), use_default=False, use_formats=False
            )
        else:
            logger.debug("schema keyword %r: validated by jsonschema alone", unshared)

    def compiled_check(self, instance: Any) -> bool:
        """The fast check alone: ``True`` when ``fastjsonschema`` accepts ``instance``.

        It differs from draft 2020-12 on a few values: it takes a tuple as an array, and its
        ``pattern`` reads ``$`` as the very end of the text (``jsonschema`` also lets a final
        newline through). Callers that may hold tuples check for them first; a rejection is
        confirmed by ``jsonschema``. ``False`` when the schema has no fast check.
        """
        if self._fast is None:
            return False
        try:
            self._fast(instance)
        except Exception:  # any doubt (an error or a surprise) goes to jsonschema
            return False
        return True

    def errors(self, instance: Any, *, fast: bool = True) -> list[SchemaError]:
        """Every violation in ``instance``, in ``jsonschema``'s order (empty when valid).

        Args:
            fast: Try the fast check first (a valid value then never loads ``jsonschema``);
                only for plain JSON trees (see :meth:`compiled_check`).
        """
        if fast and self.compiled_check(instance):
            return []
        if self._reference is None:
            from jsonschema import Draft202012Validator

            self._reference = Draft202012Validator(self.schema)
        return [
            SchemaError(
                tuple(error.absolute_path),
                str(error.validator),
                error.validator_value,
                error.instance,
                error.schema if isinstance(error.schema, Mapping) else {},
                error.message,
            )
            for error in self._reference.iter_errors(instance)
        ]


def _unshared_keyword(node: Any) -> str | None:
    """The first keyword of ``node`` outside :data:`_SHARED_KEYWORDS` (``None``: all shared)."""
    if isinstance(node, bool):
        return None
    if not isinstance(node, Mapping):
        return repr(node)
    for key, value in node.items():
        if key not in _SHARED_KEYWORDS:
            return str(key)
        if key == "$ref" and not (isinstance(value, str) and value.startswith("#/")):
            return f"$ref {value!r}"  # remote references: left to jsonschema
        subs: list[Any] = []
        if key in _SUBSCHEMA_MAPS and isinstance(value, Mapping):
            subs = list(value.values())
        elif key == "allOf" and isinstance(value, list):
            subs = value
        elif key in _SUBSCHEMA:
            subs = [value]
        for sub in subs:
            found = _unshared_keyword(sub)
            if found is not None:
                return found
    return None
