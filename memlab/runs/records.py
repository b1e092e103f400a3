"""Typed rows of a run's tables: one LLM call (``calls.jsonl``), one session
(``sessions.jsonl``) and one answer of memory QA (``qa/answers.jsonl``).

The models name and type the columns every row has (a session row's counts are those
:data:`memlab.scoring.count_specs.COUNT_SPECS` declares ``in_rows``); measures that only some
runs take (embedding duplicates, repeated ``sample`` indexes, later metrics) are kept as extra
fields.
Rows are validated when a sweep writes them and when a run is loaded, so a hand-edited or
foreign table fails with the file, line and column instead of a wrong number downstream.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError, create_model
from pydantic_core import SchemaValidator

from memlab.core.base.files import (
    MAX_TABLE_BYTES,
    FileReadError,
    io_reason,
    iter_lines,
    open_regular,
)
from memlab.core.base.jsontext import MAX_JSON_DEPTH, few_brackets, loads_json, nesting_path
from memlab.errors import MemlabError, excerpt
from memlab.scoring.count_specs import COUNT_SPECS

__all__ = ["CallRow", "QARow", "RecordError", "SessionRow", "read_rows", "typed_rows"]


class RecordError(MemlabError, ValueError):
    """A row of a run table does not have the columns memlab writes."""


class _Row(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    lane_id: str
    user_id: str
    session_index: int
    thread_id: str | None


class CallRow(_Row):
    """One LLM call (or skipped update) of a replay, flattened for a DataFrame."""

    started_at: str
    skipped: str | None
    saved: bool
    error: str | None
    error_stage: str | None
    prompt_chars: int
    prompt_sha256: str
    reply: str | None
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    finish_reason: str | None
    model: str | None
    backend: str | None
    cached: bool
    facts_before: int
    facts_after: int
    duration_s: float
    virtual_time: str
    parse_ok: bool
    parse_rung: str | None
    parse_category: str | None
    parse_wrappers: str
    violations: list[dict[str, Any]]
    n_violations: int


class _SessionLabels(_Row):
    noise: bool
    tags: str
    recall: float
    precision: float


_ROW_COUNTS: dict[str, Any] = {c.column: (int, ...) for c in COUNT_SPECS if c.in_rows}

SessionRow = create_model(
    "SessionRow",
    __base__=_SessionLabels,
    __doc__="The memory after one session of one owner under one lane, scored against the "
    "labels: its labels, recall and precision, and every count COUNT_SPECS declares in_rows.",
    **_ROW_COUNTS,
)


class QARow(BaseModel):
    """One answer of memory QA (``qa/answers.jsonl``): the question asked of one lane's
    replay of one owner under one condition, the answer and its cost, its scores against the
    answer keys, each judge's verdicts and, for an answer from memory, the fate of its
    evidence (:mod:`memlab.qa.answering`, :mod:`memlab.scoring.qa.qa_causes`)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    lane_id: str
    sample: int
    user_id: str
    session_index: int
    question_id: str
    category: str
    kind: str
    audited: bool
    answer_changed: bool
    audit_differs: bool = False
    condition: str
    context_tokens: int
    injected: list[str]
    dropped: int
    answer: str | None
    error: str | None
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    cached: bool
    # Absent from tables written before it was recorded (read as 0).
    replaced_chars: int = 0
    abstained: bool | None
    f1: float | None
    bleu1: float | None
    f1_original: float | None
    bleu1_original: float | None
    # mem0's F1; absent from tables written before it was recorded (read as None).
    mem0_f1: float | None = None
    mem0_f1_original: float | None = None
    verdicts: dict[str, dict[str, bool | None]]
    judge_tokens: int
    judge_errors: int
    # Absent from tables written before it was recorded (read as 0: not counted then).
    judge_unreadable: int = 0
    fate: str | None
    evidence_fates: dict[str, str] | None
    # A procedure question's: the gold steps its reply names, in order, and its step-order
    # accuracy (memlab.qa.procedure_scores); absent from every other answer (read as None).
    steps_named: list[int] | None = None
    step_accuracy: float | None = None


_R = TypeVar("_R", bound=BaseModel)


def _check(model: type[_R], row: Any, where: str) -> dict[str, Any]:
    try:
        return model.model_validate(row).model_dump()
    except ValidationError as exc:
        err = exc.errors()[0]
        column = ".".join(str(p) for p in err["loc"]) or "(row)"
        raise RecordError(
            f"{where}: column '{column}': {err['msg']} (got {excerpt(err.get('input'))}); "
            "this table was not written by this memlab, or was edited: rerun the sweep"
        ) from None


def typed_rows(
    model: type[_R], rows: Iterable[dict[str, Any]], source: str
) -> list[dict[str, Any]]:
    """``rows`` checked against ``model`` (extra columns kept), as plain dicts."""
    return [_check(model, row, f"{source} row {i + 1}") for i, row in enumerate(rows)]


@cache
def _fields_validator(model: type[BaseModel]) -> SchemaValidator | None:
    """The validator of ``model``'s fields alone (the model's own schema inside its config),
    or ``None`` when the model's schema is not a plain class around its fields."""
    schema = model.__pydantic_core_schema__
    inner = schema.get("schema") if schema["type"] == "model" else None
    if inner is None or inner["type"] != "model-fields" or schema.get("custom_init"):
        return None
    return SchemaValidator(inner, config=schema.get("config"))


def _validate_line(model: type[_R], raw: bytes) -> dict[str, Any]:
    """A row as the instance of ``model`` validated from ``raw`` holds it: its columns, then
    its extra columns as written (the row ``model_dump`` would copy). Validating the fields
    without building the instance takes a third less time over a large table.

    Raises:
        ValidationError: As ``model.model_validate_json`` would.
    """
    validator = _fields_validator(model)
    if validator is None:
        found = model.model_validate_json(raw)
        return {**found.__dict__, **(found.model_extra or {})}
    fields, extra, _set = validator.validate_json(raw)
    return {**fields, **extra} if extra else fields


def _read_row(model: type[_R], raw: bytes, where: str) -> dict[str, Any]:
    """One table row, validated straight from its JSON text by pydantic-core (twice as fast as
    ``json.loads`` and then the model) when that gives a row within the depth limit (a line
    with no more opening brackets than the limit is, without walking the row); a line it
    refuses (text ``json.loads`` reads differently, such as a lone surrogate or NaN) is read
    again that way, for the same row or the same error."""
    try:
        row: dict[str, Any] | None = _validate_line(model, raw)
    except ValidationError:
        row = None
    if row is not None and (few_brackets(raw, MAX_JSON_DEPTH) or nesting_path(row) is None):
        return row
    try:
        value = loads_json(raw)
    except ValueError as exc:
        raise RecordError(f"{where}: not a JSON row: {excerpt(exc)}") from None
    return _check(model, value, where)


def read_rows(path: Path, model: type[_R], *, inside: Path | None = None) -> list[dict[str, Any]]:
    """Read a JSON-lines table, checking each row against ``model``.

    Args:
        path: The table.
        model: The row model.
        inside: The run directory the table must stay in (no links followed).

    Raises:
        RecordError: Naming the file, the line and the column; or the file cannot be read
            (not a regular file, larger than memlab reads, a line too long).
    """
    rows: list[dict[str, Any]] = []
    try:
        with open_regular(path, what="run table", max_bytes=MAX_TABLE_BYTES, inside=inside) as f:
            for number, raw in enumerate(iter_lines(f, path=path, what="run table"), start=1):
                if not raw.strip():
                    continue
                rows.append(_read_row(model, raw, f"{path}:{number}"))
    except FileReadError as exc:
        raise RecordError(str(exc)) from None
    except OSError as exc:
        raise RecordError(f"{path}: cannot read the table: {io_reason(exc)}") from None
    return rows
