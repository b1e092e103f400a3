"""The JSON contract between the memory-update prompt and the pipeline.

The model must return one JSON object with exactly four keys::

    {"user": {...3 sections...}, "history": {...3 sections...},
     "newFacts": [{"content", "category", "confidence", "sourceError"?}, ...],
     "factsToRemove": ["fact_…", ...]}

The contract ships twice and the two agree: as a JSON Schema (draft 2020-12) file,
``schemas/memory_update.schema.json``, which `validate_update` applies (compiled once by
:mod:`memlab.core.jsondoc.schema_check`) to report every violation with its JSON Pointer and
keyword, as jsonschema's draft 2020-12 validator lists them; and as pydantic models (`MemoryUpdate`
and friends) for typed access once a reply is known to be valid.

Non-finite numbers: Python's `json` module decodes ``NaN``/``Infinity``, which are not JSON,
and a JSON Schema ``maximum`` check lets NaN through (every comparison with NaN is false).
`validate_update` therefore adds one violation with the custom keyword ``"finite"`` for every
non-finite number anywhere in the document, in addition to whatever the schema reports.
"""

from __future__ import annotations

import copy
import functools
import json
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import (
    Annotated,
    Any,
    Literal,
    NamedTuple,
    NotRequired,
    TypedDict,
    get_args,
)

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from memlab.core.base.jsontext import scan_json
from memlab.core.jsondoc.schema_check import CompiledSchema

__all__ = [
    "CONFIDENCE_BOUNDS",
    "FACT_CATEGORIES",
    "HISTORY_SECTIONS",
    "MAX_MESSAGE_CHARS",
    "MINIMAL_VALID_UPDATE",
    "SCHEMA_RESOURCE",
    "SECTION_NAMES",
    "TOP_LEVEL_KEYS",
    "UPDATE_CONTRACT",
    "UPLOAD_MARKER",
    "USER_SECTIONS",
    "Bounds",
    "FactCategory",
    "HistorySection",
    "HistorySections",
    "MemoryUpdate",
    "MemoryUpdateDict",
    "NewFact",
    "NewFactDict",
    "ReplyContract",
    "SchemaBounds",
    "SectionName",
    "SectionUpdate",
    "SectionUpdateDict",
    "UserSection",
    "UserSections",
    "Violation",
    "bounded_schema",
    "contract_schema",
    "minimal_update",
    "schema_contract",
    "updated_sections",
    "validate_update",
]

#: Package-relative location of the schema file.
SCHEMA_RESOURCE = "schemas/memory_update.schema.json"

# The vocabulary of the contract, declared once here. The schema file repeats it (a data file
# cannot import); tests check that the two agree.
FactCategory = Literal["preference", "knowledge", "context", "behavior", "goal", "correction"]
UserSection = Literal["workContext", "personalContext", "topOfMind"]
HistorySection = Literal["recentMonths", "earlierContext", "longTermBackground"]
SectionName = Literal[UserSection, HistorySection]

FACT_CATEGORIES: tuple[FactCategory, ...] = get_args(FactCategory)
USER_SECTIONS: tuple[UserSection, ...] = get_args(UserSection)
HISTORY_SECTIONS: tuple[HistorySection, ...] = get_args(HistorySection)
SECTION_NAMES: tuple[SectionName, ...] = (*USER_SECTIONS, *HISTORY_SECTIONS)
TOP_LEVEL_KEYS: tuple[str, ...] = ("user", "history", "newFacts", "factsToRemove")


def updated_sections(update: Mapping[str, Any]) -> Iterator[tuple[str, str, str]]:
    """``(group, name, summary)`` of each section ``update`` asks to write: ``shouldUpdate``
    true and a non-empty summary, in contract order (anything else is read as no update)."""
    for group, names in (("user", USER_SECTIONS), ("history", HISTORY_SECTIONS)):
        proposed = update.get(group)
        if not isinstance(proposed, Mapping):
            continue
        for name in names:
            section = proposed.get(name)
            if not isinstance(section, Mapping) or section.get("shouldUpdate") is not True:
                continue
            summary = section.get("summary")
            if isinstance(summary, str) and summary:
                yield group, name, summary


class Bounds(NamedTuple):
    """An inclusive numeric range, shared by every model that checks the same quantity."""

    low: float
    high: float


#: A fact's confidence, and so the confidence threshold, lies in this range.
CONFIDENCE_BOUNDS = Bounds(0.0, 1.0)
#: Each message longer than this many characters is cut there (and gets "...") before it
#: reaches the prompt; datasets tag such messages ``long_message``.
MAX_MESSAGE_CHARS = 1000
#: Opens a file-upload block in a human message; upload events are never to be stored.
UPLOAD_MARKER = "<uploaded_files>"

MINIMAL_VALID_UPDATE: dict[str, Any] = {
    "user": {name: {"summary": "", "shouldUpdate": False} for name in USER_SECTIONS},
    "history": {name: {"summary": "", "shouldUpdate": False} for name in HISTORY_SECTIONS},
    "newFacts": [],
    "factsToRemove": [],
}
"""The smallest reply that satisfies the contract (no changes). Use `minimal_update()` for a
copy you may modify."""


def minimal_update() -> dict[str, Any]:
    """Return a fresh deep copy of `MINIMAL_VALID_UPDATE`."""
    return copy.deepcopy(MINIMAL_VALID_UPDATE)


# --------------------------------------------------------------------------- pydantic models


def _not_blank(value: str) -> str:
    # Same notion of whitespace as the schema's "\S" pattern under Python's `re`.
    if not value.strip():
        raise ValueError("must contain at least one non-whitespace character")
    return value


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class SectionUpdate(_Strict):
    """One summary section: the new text and whether to overwrite the stored one."""

    summary: str
    shouldUpdate: bool


class UserSections(_Strict):
    """The three sections describing the user."""

    workContext: SectionUpdate
    personalContext: SectionUpdate
    topOfMind: SectionUpdate


class HistorySections(_Strict):
    """The three sections describing the user's history."""

    recentMonths: SectionUpdate
    earlierContext: SectionUpdate
    longTermBackground: SectionUpdate


class NewFact(_Strict):
    """A fact the model proposes to store."""

    content: Annotated[str, Field(min_length=1), AfterValidator(_not_blank)]
    category: FactCategory
    confidence: float = Field(
        ge=CONFIDENCE_BOUNDS.low, le=CONFIDENCE_BOUNDS.high, allow_inf_nan=False
    )
    sourceError: str | None = None

    @field_validator("sourceError", mode="before")
    @classmethod
    def _source_error_not_null(cls, value: Any) -> Any:
        # The schema allows the key to be absent but not null; defaults skip this check.
        if value is None:
            raise ValueError("sourceError must be a string when present (omit it instead of null)")
        return value


class MemoryUpdate(_Strict):
    """A complete, valid model reply."""

    user: UserSections
    history: HistorySections
    newFacts: list[NewFact]
    factsToRemove: list[str]

    def to_json_dict(self) -> dict[str, Any]:
        """Return the reply as a plain dict in contract form (absent `sourceError` omitted)."""
        return self.model_dump(exclude_none=True)


# --------------------------------------------------------------------------- typed dicts


class SectionUpdateDict(TypedDict):
    """:class:`SectionUpdate` as the parsed JSON holds it."""

    summary: str
    shouldUpdate: bool


class NewFactDict(TypedDict):
    """:class:`NewFact` as the parsed JSON holds it."""

    content: str
    category: FactCategory
    confidence: float
    sourceError: NotRequired[str]


class MemoryUpdateDict(TypedDict):
    """A valid reply as the parsed JSON holds it (what the parse ladder returns and the merge
    strategies apply); :class:`MemoryUpdate` is the same document as a model."""

    user: dict[UserSection, SectionUpdateDict]
    history: dict[HistorySection, SectionUpdateDict]
    newFacts: list[NewFactDict]
    factsToRemove: list[str]


# The typed dicts and the models name the same keys (declaration mistakes fail at import).
for _typed, _model in (
    (SectionUpdateDict, SectionUpdate),
    (NewFactDict, NewFact),
    (MemoryUpdateDict, MemoryUpdate),
):
    if set(_typed.__annotations__) != set(_model.model_fields):
        raise TypeError(f"{_typed.__name__} and {_model.__name__} name different keys")


# --------------------------------------------------------------------------- JSON Schema


@functools.cache
def _schema_text() -> str:
    return resources.files("memlab.core").joinpath(SCHEMA_RESOURCE).read_text(encoding="utf-8")


@functools.cache
def _loaded_schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(_schema_text())
    return schema


@functools.cache
def _validator() -> CompiledSchema:
    return CompiledSchema(_loaded_schema())


def contract_schema() -> dict[str, Any]:
    """Return a deep copy of the contract's JSON Schema (read from the package once)."""
    return copy.deepcopy(_loaded_schema())


class SchemaBounds(BaseModel):
    """Length limits added to the schema *sent* for constrained decoding (the grammar).

    A small model decoding under a grammar may repeat itself inside a string or an array
    until it runs out of tokens; with these limits every string and list must end, so the
    reply stays short and closes. Replies are still validated against the unbounded contract,
    so a bound never turns a valid reply into a violation.

    Attributes:
        summary_chars: ``maxLength`` of each section summary.
        fact_chars: ``maxLength`` of a new fact's ``content`` (and ``sourceError``).
        max_new_facts: ``maxItems`` of ``newFacts``.
        max_removals: ``maxItems`` of ``factsToRemove`` (ids also get ``maxLength`` 32).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    # Strict: a YAML ``true`` is not the number 1 (booleans are never numbers in settings).
    summary_chars: int = Field(160, ge=1, le=4000, strict=True)
    fact_chars: int = Field(120, ge=1, le=2000, strict=True)
    max_new_facts: int = Field(5, ge=0, le=100, strict=True)
    max_removals: int = Field(5, ge=0, le=100, strict=True)


_ID_CHARS = 32  # fact ids are "fact_" + 8 hex digits; room for other id schemes


def bounded_schema(schema: Mapping[str, Any], bounds: SchemaBounds) -> dict[str, Any]:
    """A copy of the contract ``schema`` with ``bounds`` as ``maxLength``/``maxItems``.

    The walk follows the contract's structure: the ``sectionUpdate`` and ``newFact``
    definitions and the two top-level arrays. Bounds the schema already sets lower are kept.
    """
    out = copy.deepcopy(dict(schema))
    defs = out.get("$defs", {})
    _limit(defs.get("sectionUpdate", {}).get("properties", {}).get("summary"), bounds.summary_chars)
    fact = defs.get("newFact", {}).get("properties", {})
    _limit(fact.get("content"), bounds.fact_chars)
    _limit(fact.get("sourceError"), bounds.fact_chars)
    top = out.get("properties", {})
    _limit(top.get("newFacts"), bounds.max_new_facts, key="maxItems")
    _limit(top.get("factsToRemove"), bounds.max_removals, key="maxItems")
    _limit(top.get("factsToRemove", {}).get("items"), _ID_CHARS)
    return out


def _limit(node: Any, value: int, key: str = "maxLength") -> None:
    if not isinstance(node, dict):
        raise ValueError(f"bounded_schema: the schema lacks a node to bound with {key}")
    current = node.get(key)
    node[key] = value if not isinstance(current, int) else min(current, value)


@dataclass(frozen=True)
class Violation:
    """One way a reply breaks the contract.

    Attributes:
        pointer: JSON Pointer (RFC 6901) to the offending value, "" for the whole document.
            For ``required`` and ``additionalProperties`` it points at the object that lacks
            or has the key (the standard instance location).
        keyword: The JSON Schema keyword that failed (``required``, ``type``, ``maximum``,
            ``additionalProperties``, ``enum``, ``minLength``, ``pattern``, …) or ``finite``
            for NaN/Infinity, which JSON cannot represent.
        message: Human-readable explanation.
    """

    pointer: str
    keyword: str
    message: str

    def __str__(self) -> str:
        return f"{self.pointer or '/'} [{self.keyword}]: {self.message}"

    def to_dict(self) -> dict[str, str]:
        """Return the violation as a JSON-ready dict."""
        return {"pointer": self.pointer, "keyword": self.keyword, "message": self.message}


def _pointer(path: tuple[str | int, ...]) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def _non_finite(obj: Any, path: tuple[str | int, ...]) -> list[tuple[tuple[str | int, ...], float]]:
    found: list[tuple[tuple[str | int, ...], float]] = []
    if isinstance(obj, float) and not math.isfinite(obj):
        found.append((path, obj))
    elif isinstance(obj, dict):
        for key, value in obj.items():
            found.extend(_non_finite(value, (*path, key)))
    elif isinstance(obj, list | tuple):
        for index, value in enumerate(obj):
            found.extend(_non_finite(value, (*path, index)))
    return found


def _sort_key(item: tuple[tuple[str | int, ...], Violation]) -> tuple[Any, ...]:
    path, violation = item
    # Array indices sort numerically ("/newFacts/2" before "/newFacts/10").
    parts = tuple((0, p, "") if isinstance(p, int) else (1, 0, str(p)) for p in path)
    return (parts, violation.keyword, violation.message)


def validate_update(obj: Any) -> list[Violation]:
    """Check `obj` against the contract and return every violation (empty when valid).

    Violations are sorted by pointer (array indices numerically), then keyword.
    """
    return _violations(_validator(), obj)


def _violations(validator: CompiledSchema, obj: Any) -> list[Violation]:
    """Every violation of ``obj`` against ``validator``'s schema, non-finite numbers too."""
    # The compiled check takes a tuple as an array and lets NaN through its range checks:
    # anything but a plain, finite JSON tree skips it and is walked in full.
    plain, non_finite = scan_json(obj)
    found: list[tuple[tuple[str | int, ...], Violation]] = []
    for error in validator.errors(obj, fast=plain and non_finite is None):
        found.append((error.path, Violation(_pointer(error.path), error.keyword, error.message)))
    for path, value in _non_finite(obj, ()) if non_finite is not None or not plain else ():
        message = f"{value} is not a finite number (NaN and Infinity are not valid JSON)"
        found.append((path, Violation(_pointer(path), "finite", message)))
    found.sort(key=_sort_key)
    return [violation for _, violation in found]


@dataclass(frozen=True)
class ReplyContract:
    """A JSON reply contract the parse ladder checks replies against.

    The ladder (:func:`memlab.core.jsondoc.parsing.parse_reply`) looks for an object with every one
    of ``keys`` and validates it with ``validate``; its failure taxonomy is the same for
    every contract, so the outcomes of every kind of LLM call are counted alike.

    Attributes:
        name: What the reply is (``memory_update``, ``tiered_summary``...).
        keys: The top-level keys that identify the object in a reply.
        validate: Every violation of a decoded object (empty when valid).
        schema: The JSON Schema, sent in ``json_schema`` output mode (``None``: the caller
            builds the schema it sends, as the updater does).
    """

    name: str
    keys: tuple[str, ...]
    validate: Callable[[Any], list[Violation]]
    schema: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)


UPDATE_CONTRACT = ReplyContract("memory_update", TOP_LEVEL_KEYS, validate_update)
"""The memory update's contract (the parse ladder's default)."""


@functools.cache
def _compiled(resource: str) -> tuple[dict[str, Any], CompiledSchema]:
    schema: dict[str, Any] = json.loads(
        resources.files("memlab.core").joinpath(resource).read_text(encoding="utf-8")
    )
    return schema, CompiledSchema(schema)


def schema_contract(name: str, resource: str) -> ReplyContract:
    """The contract of a JSON Schema file under ``memlab/core`` (its required keys identify
    the object; every violation is reported as for the update contract)."""
    schema, validator = _compiled(resource)
    keys = tuple(str(k) for k in schema.get("required", ()))
    return ReplyContract(name, keys, functools.partial(_violations, validator), schema)
