"""One walker for the JSON Schema transformers of the backends.

A backend sometimes sends a schema other than the contract's: llama.cpp's grammar converter and
OpenAI's strict mode each accept a subset of JSON Schema. Each transformer is a small subclass
of :class:`SchemaTransformer` that says what becomes of a keyword and of a finished node; the
walk itself (copying, descending into subschemas and named subschema maps) is written once.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

__all__ = ["SchemaTransformer"]

# Keywords whose value maps names to subschemas (the names themselves are not keywords).
_NAMED_SUBSCHEMAS = ("properties", "$defs", "definitions")


class SchemaTransformer:
    """Returns a transformed deep copy of a schema; the schema given is never changed."""

    def __call__(self, schema: Mapping[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self._node(copy.deepcopy(dict(schema)))
        return result

    def keyword(self, node: Mapping[str, Any], key: str, value: Any) -> tuple[str, Any] | None:
        """What ``key: value`` of ``node`` becomes (a key and a value), or ``None`` to drop it."""
        return key, value

    def finish(self, node: Mapping[str, Any], out: dict[str, Any]) -> dict[str, Any]:
        """The transformed node ``out`` of the original ``node``, once its keywords are done."""
        return out

    def _node(self, node: Any) -> Any:
        if isinstance(node, list):
            return [self._node(item) for item in node]
        if not isinstance(node, dict):
            return node
        out: dict[str, Any] = {}
        for key, value in node.items():
            kept = self.keyword(node, key, value)
            if kept is None:
                continue
            new_key, new_value = kept
            if new_key in _NAMED_SUBSCHEMAS and isinstance(new_value, dict):
                out[new_key] = {name: self._node(sub) for name, sub in new_value.items()}
            else:
                out[new_key] = self._node(new_value)
        return self.finish(node, out)
