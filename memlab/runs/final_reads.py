"""The final memory of an owner record, parsed without building the rest of the record.

An owner record holds every call and snapshot of an owner's replay (some 80 KB for 20
sessions); a report's fact-level diff needs only its ``final_memory`` (2 KB). pydantic-core's
JSON parser checks the whole text and the record's shape (``calls`` and ``snapshots`` lists
of objects) but skips over the fields it ignores without making Python objects of them, six
times faster than ``json.loads`` of the whole record.

It answers only when it can vouch for the same result as the full read
(:func:`memlab.runs.run.read_owner_record`): anything it does not accept (text
``json.loads`` reads differently, such as a lone surrogate or another encoding; a final memory
nested too deep; a field of the wrong type) gives ``None``, and the caller reads the record
in full, with its errors.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from memlab.core.base.jsontext import MAX_JSON_DEPTH, nesting_path

__all__ = ["parse_final_memory"]


class _Object(BaseModel):
    """Any JSON object (its fields skipped)."""

    model_config = ConfigDict(extra="ignore")


class _FinalRead(BaseModel):
    """What the fast read takes of an owner record; the other fields are skipped."""

    model_config = ConfigDict(extra="ignore", strict=True)

    user_id: str
    calls: list[_Object]
    snapshots: list[_Object]
    final_memory: dict[str, Any]


def parse_final_memory(raw: bytes) -> tuple[str, dict[str, Any]] | None:
    """``(user_id, final_memory)`` of the owner record ``raw``, or ``None`` when only the full
    read can tell (see the module docstring)."""
    try:
        record = _FinalRead.model_validate_json(raw)
    except ValidationError:
        return None
    memory = record.final_memory
    facts = memory.get("facts", [])
    if not isinstance(facts, list) or not all(isinstance(f, dict) for f in facts):
        return None
    # The record is level 1 of the depth limit, its final memory level 2.
    if nesting_path(memory, MAX_JSON_DEPTH - 1) is not None:
        return None
    return record.user_id, memory
