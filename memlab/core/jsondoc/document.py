"""The memory document: its shape, timestamps, fact ids and fact-text normalisation.

A memory document is a JSON object::

    {
      "version": "1.0",
      "lastUpdated": "2025-01-06T09:12:00Z",
      "user":    {"workContext": {"summary": "", "updatedAt": ""}, ...},
      "history": {"recentMonths": {"summary": "", "updatedAt": ""}, ...},
      "facts":   [{"id": "fact_1a2b3c4d", "content": ..., "category": ..., "confidence": ...,
                   "createdAt": ..., "source": ...}, ...]
    }

Timestamps are UTC ISO-8601 strings with a trailing ``Z``.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import NotRequired, Protocol, TypedDict, TypeVar

from memlab.core.base.jsontext import copy_json

# The document's sections are the contract's: one definition for both.
from memlab.core.jsondoc.contract import HISTORY_SECTIONS, USER_SECTIONS

__all__ = [
    "DOCUMENT_VERSION",
    "HISTORY_SECTIONS",
    "REQUIRED_DOCUMENT_KEYS",
    "USER_SECTIONS",
    "FactIdGenerator",
    "MemoryDocument",
    "SectionState",
    "SeededFactIds",
    "StoredFact",
    "copy_document",
    "create_empty_memory",
    "document_problems",
    "is_fact_id",
    "new_fact_id",
    "normalize_fact_text",
    "parse_utc",
    "random_fact_ids",
    "utc_iso",
    "utc_now",
]

_T = TypeVar("_T")

DOCUMENT_VERSION = "1.0"
# Keys a stored document must have (with these JSON types) to be accepted by a store.
REQUIRED_DOCUMENT_KEYS: dict[str, type] = {"user": dict, "history": dict, "facts": list}


class SectionState(TypedDict):
    """A stored summary section."""

    summary: str
    updatedAt: str


class StoredFact(TypedDict):
    """A stored fact (see the module docstring)."""

    id: str
    content: str
    category: str
    confidence: float
    createdAt: str
    source: str
    sourceError: NotRequired[str]


class MemoryDocument(TypedDict):
    """The memory document (see the module docstring)."""

    version: str
    lastUpdated: str
    user: dict[str, SectionState]
    history: dict[str, SectionState]
    facts: list[StoredFact]


_FACT_PREFIX = "fact_"
_HEX = frozenset("0123456789abcdef")


def utc_now() -> datetime:
    """Return the current time as a timezone-aware UTC datetime."""
    return datetime.now(UTC)


def utc_iso(dt: datetime) -> str:
    """Format an aware datetime as UTC ISO-8601 with a trailing ``Z``.

    Seconds precision (``2025-01-06T09:12:00Z``) unless the microseconds are non-zero, in which
    case all six digits are kept (``2025-01-06T09:12:00.000250Z``).

    Raises:
        ValueError: ``dt`` is naive (has no timezone).
    """
    exact = type(dt) is datetime and dt.tzinfo is UTC
    if exact:
        # One update stamps the same virtual moment several times (its start, the merge,
        # the store, the record): strftime once per moment.
        known = _iso_texts.get(dt)
        if known is not None:
            return known
    if dt.tzinfo is None or dt.utcoffset() is None:
        raise ValueError(
            f"utc_iso needs a timezone-aware datetime, got naive {dt!r}; "
            "use datetime.now(UTC) or dt.replace(tzinfo=UTC)."
        )
    moment = dt.astimezone(UTC)
    if moment.microsecond:
        text = moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    else:
        text = moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    if exact:
        if len(_iso_texts) >= _ISO_TEXTS_MAX:
            _iso_texts.clear()
        _iso_texts[dt] = text
    return text


# Texts of recent UTC moments (exact datetimes in UTC only, so equal keys give equal texts).
_iso_texts: dict[datetime, str] = {}
_ISO_TEXTS_MAX = 4096


def parse_utc(value: object) -> datetime | None:
    """Parse an ISO-8601 timestamp into an aware UTC datetime; ``None`` if it is not one.

    A timestamp without an offset is taken to be UTC.
    """
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def copy_document(document: _T) -> _T:
    """Deep-copy a JSON document (dicts, lists, str, numbers, bool, None).

    The copy equals a JSON round trip (``json.loads(json.dumps(document))``), made several
    times faster by :func:`memlab.core.base.jsontext.copy_json`. Raises ``TypeError`` for values
    that are not JSON and ``RecursionError`` for a document that contains itself.
    """
    return copy_json(document)


def create_empty_memory(now: datetime | None = None) -> MemoryDocument:
    """Return a new empty memory document whose ``lastUpdated`` is ``now`` (default: now)."""
    return {
        "version": DOCUMENT_VERSION,
        "lastUpdated": utc_iso(now if now is not None else utc_now()),
        "user": {name: {"summary": "", "updatedAt": ""} for name in USER_SECTIONS},
        "history": {name: {"summary": "", "updatedAt": ""} for name in HISTORY_SECTIONS},
        "facts": [],
    }


def document_problems(document: object) -> list[str]:
    """Return what makes ``document`` unusable as a memory document (empty list when usable).

    Only the top-level shape is checked: a JSON object with ``user`` and ``history`` objects
    and a ``facts`` array. Sections and facts are read tolerantly elsewhere.
    """
    if not isinstance(document, Mapping):
        return [f"top level is a JSON {_json_type(document)}, expected an object"]
    problems = []
    for key, expected in REQUIRED_DOCUMENT_KEYS.items():
        if key not in document:
            problems.append(f"missing required key {key!r}")
        elif not isinstance(document[key], expected):
            problems.append(
                f"key {key!r} is a JSON {_json_type(document[key])}, "
                f"expected {_json_type(expected())}"
            )
    return problems


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def normalize_fact_text(text: str) -> str:
    """Return the key used to detect duplicate facts: stripped and case-folded."""
    return text.strip().casefold()


def is_fact_id(value: object) -> bool:
    """True when ``value`` looks like a generated fact id (``fact_`` + 8 lowercase hex)."""
    return (
        isinstance(value, str)
        and len(value) == len(_FACT_PREFIX) + 8
        and value.startswith(_FACT_PREFIX)
        and set(value[len(_FACT_PREFIX) :]) <= _HEX
    )


class FactIdGenerator(Protocol):
    """Callable returning a new fact id: ``"fact_"`` followed by 8 lowercase hex characters."""

    def __call__(self) -> str: ...


def new_fact_id() -> str:
    """Return a random fact id (uuid4-based, like DeerFlow)."""
    return _FACT_PREFIX + uuid.uuid4().hex[:8]


def random_fact_ids() -> FactIdGenerator:
    """Return a generator of random (uuid4-based) fact ids."""
    return new_fact_id


class SeededFactIds:
    """Deterministic fact ids: the same seed always yields the same sequence.

    Ids never repeat within one generator (a drawn id that was already issued is redrawn), so
    replays and tests get stable, collision-free ids.

    Args:
        seed: Any int or str; strings are hashed deterministically (not with ``hash()``).

    Example:
        >>> ids = SeededFactIds(7)
        >>> ids() == SeededFactIds(7)()
        True
    """

    def __init__(self, seed: int | str) -> None:
        self.seed = seed
        self._rng = random.Random(seed)
        self._issued: set[str] = set()

    def __call__(self) -> str:
        if len(self._issued) >= 16**8:
            raise RuntimeError("SeededFactIds exhausted all 16**8 ids")
        while True:
            candidate = f"{_FACT_PREFIX}{self._rng.getrandbits(32):08x}"
            if candidate not in self._issued:
                self._issued.add(candidate)
                return candidate

    def __repr__(self) -> str:
        return f"SeededFactIds({self.seed!r}, issued={len(self._issued)})"
