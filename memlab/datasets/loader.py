"""Load, validate and summarize labeled JSONL datasets (docs/dataset-format.md).

Each line is checked in three stages and every problem is reported with the file, the
1-based line number and a field path such as ``sessions[3].messages[2].timestamp``:

1. JSON decoding (with the column of the syntax error);
2. the JSON Schema ``dataset.schema.json`` (structure, types, enums, role-specific fields);
3. the pydantic models, then the cross-field checks of :meth:`Owner.consistency_problems`
   and, across lines, unique user ids.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from memlab.core.base.files import (
    MAX_DATASET_BYTES,
    MAX_LINE_BYTES,
    FileReadError,
    io_reason,
    iter_lines,
    open_regular,
)
from memlab.core.base.jsontext import JsonDepthError, loads_json
from memlab.core.base.safe_text import safe_json
from memlab.core.jsondoc.contract import FACT_CATEGORIES, SECTION_NAMES
from memlab.core.jsondoc.schema_check import CompiledSchema, SchemaError
from memlab.datasets.models import (
    LONG_MESSAGE_CHARS,
    TAG_NAMES,
    UPLOAD_MARKER,
    Owner,
    Session,
)
from memlab.datasets.questions import question_stats
from memlab.errors import MemlabError, excerpt

__all__ = [
    "DatasetError",
    "DatasetValidationError",
    "dataset_schema",
    "dataset_stats",
    "format_stats",
    "iter_dataset",
    "load_dataset",
    "parse_owner_line",
    "validate_dataset",
    "write_dataset",
]

logger = logging.getLogger(__name__)

_MAX_MESSAGE = 200
_ROLES = ("human", "ai", "tool", "system")
_JSON_TYPES: dict[type, str] = {
    dict: "object",
    list: "array",
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    type(None): "null",
}


class DatasetError(MemlabError, ValueError):
    """A problem in a dataset file, located by file, line and field path.

    Attributes:
        path: the file as given by the caller.
        line: 1-based line number (0 when the problem concerns the whole file).
        field: field path inside the line such as ``sessions[3].messages[2].timestamp``;
            empty when the problem concerns the whole line.
        message: what is wrong and how to fix it.
        column: 1-based column of a JSON syntax error, else None.
    """

    def __init__(
        self, path: str, line: int, field: str, message: str, column: int | None = None
    ) -> None:
        self.path = path
        self.line = line
        self.field = field
        self.message = message
        self.column = column
        super().__init__(self._render())

    def _render(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return (
            f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"
        )

    @property
    def errors(self) -> list[DatasetError]:
        """All errors carried by this exception (just itself for a single error)."""
        return [self]

    def __str__(self) -> str:
        return self._render()


class DatasetValidationError(DatasetError):
    """Several dataset errors; ``path``/``line``/``field``/``message`` are the first one's."""

    def __init__(self, errors: Sequence[DatasetError]) -> None:
        if not errors:
            raise ValueError("DatasetValidationError needs at least one error")
        self._errors = list(errors)
        first = self._errors[0]
        super().__init__(first.path, first.line, first.field, first.message, first.column)

    @property
    def errors(self) -> list[DatasetError]:
        """Every error, in file order."""
        return list(self._errors)

    def _render(self) -> str:
        if len(getattr(self, "_errors", ())) <= 1:
            return super()._render()
        lines = [f"{len(self._errors)} errors:"]
        lines.extend(DatasetError._render(e) for e in self._errors)
        return "\n".join(lines)


@lru_cache(maxsize=1)
def dataset_schema() -> dict[str, Any]:
    """Return the JSON Schema of one dataset line (draft 2020-12)."""
    text = resources.files("memlab.datasets").joinpath("dataset.schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@lru_cache(maxsize=1)
def _validator() -> CompiledSchema:
    return CompiledSchema(dataset_schema())


def _render_path(parts: Iterable[str | int]) -> str:
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out


def _short(text: str) -> str:
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 3] + "..."


def _schema_problems(obj: Any) -> list[tuple[str, str]]:
    def order(err: SchemaError) -> tuple[tuple[int, int, str], ...]:
        return tuple((0, p, "") if isinstance(p, int) else (1, 0, p) for p in err.path)

    problems: list[tuple[str, str]] = []
    for err in sorted(_validator().errors(obj), key=order):
        path: list[str | int] = list(err.path)
        schema = err.schema
        if err.keyword == "required" and isinstance(err.instance, dict):
            for name in err.value:
                if name not in err.instance and repr(name) in err.message:
                    problems.append((_render_path([*path, name]), "missing required field"))
        elif err.keyword == "additionalProperties" and isinstance(err.instance, dict):
            allowed = sorted(schema.get("properties", {}))
            for name in err.instance:
                if name not in allowed:
                    problems.append(
                        (_render_path([*path, name]), f"unknown field; allowed here: {allowed}")
                    )
        elif "errorMessage" in schema:
            problems.append((_render_path(path), str(schema["errorMessage"])))
        elif err.keyword == "type":
            expected = err.value
            wanted = " or ".join(expected) if isinstance(expected, list) else str(expected)
            got = _JSON_TYPES.get(type(err.instance), type(err.instance).__name__)
            problems.append((_render_path(path), f"must be of type {wanted}, got {got}"))
        elif err.keyword in ("minItems", "minLength") and err.value == 1:
            problems.append((_render_path(path), "must not be empty"))
        elif err.keyword == "maxLength" and isinstance(err.instance, str):
            problems.append(
                (
                    _render_path(path),
                    f"is {len(err.instance)} characters; at most {err.value} are allowed "
                    "(shorten it)",
                )
            )
        else:
            problems.append((_render_path(path), _short(err.message)))
    return list(dict.fromkeys(problems))


def _pydantic_path(obj: Any, loc: Sequence[int | str]) -> str:
    # Pydantic locations contain union/tag labels that are not in the data; keep only
    # the steps that actually index into the decoded JSON.
    parts: list[str | int] = []
    node = obj
    for step in loc:
        in_dict = isinstance(node, dict) and isinstance(step, str) and step in node
        in_list = isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node)
        if in_dict or in_list:
            node = node[step]
            parts.append(step)
    return _render_path(parts)


def parse_owner_line(obj: Any) -> tuple[Owner | None, list[tuple[str, str]]]:
    """Validate one decoded line; return the owner (or None) and ``(field, message)`` problems."""
    problems = _schema_problems(obj)
    if problems:
        return None, problems
    try:
        owner = Owner.model_validate(obj)
    except ValidationError as exc:
        found = [(_pydantic_path(obj, e["loc"]), _short(str(e["msg"]))) for e in exc.errors()]
        return None, list(dict.fromkeys(found))
    problems = owner.consistency_problems()
    return (None, problems) if problems else (owner, [])


def _display(path: str | os.PathLike[str]) -> str:
    return os.fspath(path)


def _decode_line(name: str, lineno: int, raw: bytes) -> tuple[Any, DatasetError | None]:
    """The line's JSON value, or the error that stops it (blank, not UTF-8, JSON, depth)."""
    body = raw.rstrip(b"\r\n")
    if not body.strip():
        blank = "blank line; remove it (one JSON object per line, no blank lines)"
        return None, DatasetError(name, lineno, "", blank)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        message = f"not UTF-8 (byte {exc.start + 1}); save the file as UTF-8"
        return None, DatasetError(name, lineno, "", message)
    try:
        # Kept, with what UTF-8 cannot encode replaced, so every prompt and record is writable.
        value, _ = safe_json(loads_json(text), decoded_from=text, where=f"{name}:{lineno}")
    except json.JSONDecodeError as exc:
        message = f"invalid JSON at column {exc.colno}: {exc.msg}"
        return None, DatasetError(name, lineno, "", message, column=exc.colno)
    except JsonDepthError as exc:
        # Deeper values crash later steps; refused here so validate and run agree.
        return None, DatasetError(name, lineno, exc.where, str(exc))
    return value, None


def _scan(path: str | os.PathLike[str]) -> Iterator[tuple[Owner | None, list[DatasetError]]]:
    """Yield ``(owner, errors)`` per line, including the file-level checks."""
    name = _display(path)
    try:
        handle = open_regular(path, what="dataset", max_bytes=MAX_DATASET_BYTES)
    except OSError as exc:  # FileReadError too: a FIFO, a device, a file too large
        yield None, [DatasetError(name, 0, "", f"cannot open dataset: {io_reason(exc)}")]
        return
    first_line_of: dict[str, int] = {}
    count = 0
    with handle:
        lines = iter_lines(handle, path=path, what="dataset", max_line_bytes=MAX_LINE_BYTES)
        for lineno, raw in enumerate(_stop_at_limit(lines), start=1):
            if isinstance(raw, FileReadError):
                yield None, [DatasetError(name, lineno, "", raw.reason)]
                return
            count += 1
            obj, error = _decode_line(name, lineno, raw)
            if error is not None:
                yield None, [error]
                continue
            owner, problems = parse_owner_line(obj)
            errors = [DatasetError(name, lineno, field, msg) for field, msg in problems]
            user_id = obj.get("user_id") if isinstance(obj, dict) else None
            if isinstance(user_id, str):
                first = first_line_of.setdefault(user_id, lineno)
                if first != lineno:
                    duplicate = f"duplicate user id {excerpt(user_id)} (first used on line {first})"
                    errors.append(DatasetError(name, lineno, "user_id", duplicate))
            yield (None if errors else owner), errors
    if count == 0:
        empty = "the file is empty; expected one JSON object (one memory owner) per line"
        yield None, [DatasetError(name, 0, "", empty)]


def _stop_at_limit(lines: Iterator[bytes]) -> Iterator[bytes | FileReadError]:
    """The lines, then the error that stopped them (a line or the file beyond its limit)."""
    try:
        yield from lines
    except FileReadError as exc:
        yield exc


def iter_dataset(path: str | os.PathLike[str]) -> Iterator[Owner]:
    """Stream the owners of a dataset file, validating each line.

    Raises:
        DatasetError: at the first invalid line (a :class:`DatasetValidationError` carrying
            every problem of that line).
    """
    for owner, errors in _scan(path):
        if errors:
            raise DatasetValidationError(errors)
        if owner is not None:
            yield owner


def validate_dataset(path: str | os.PathLike[str]) -> list[DatasetError]:
    """Validate a whole file and return every error (empty list when valid)."""
    return [err for _, errors in _scan(path) for err in errors]


def load_dataset(path: str | os.PathLike[str], *, collect: bool = False) -> list[Owner]:
    """Load and validate a dataset file.

    Args:
        path: a JSONL dataset file.
        collect: when True, check the whole file before raising, so the exception lists
            every error of every line; when False, stop at the first invalid line.

    Raises:
        DatasetError: a :class:`DatasetValidationError` whose ``errors`` lists the problems.
    """
    if not collect:
        return list(iter_dataset(path))
    owners: list[Owner] = []
    errors: list[DatasetError] = []
    for owner, line_errors in _scan(path):
        errors.extend(line_errors)
        if owner is not None:
            owners.append(owner)
    if errors:
        raise DatasetValidationError(errors)
    return owners


def write_dataset(owners: Iterable[Owner], dest: str | os.PathLike[str]) -> int:
    """Write owners as JSONL atomically (temp file + rename); return the number written."""
    target = Path(dest)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    count = 0
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
            for owner in owners:
                out.write(owner.to_json_line() + "\n")
                count += 1
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return count


def _session_language(owner: Owner, session: Session) -> str:
    if owner.language.lower().split("-")[0] == "zh" or session.has_cjk():
        return "zh"
    return owner.language


def _detected(owner: Owner, session: Session) -> set[str]:
    """Special cases visible in the content (tags that need no human judgement)."""
    found: set[str] = set()
    msgs = session.messages
    if session.labels.retracts:
        found.add("retraction")
    if session.labels.noise:
        found.add("noise")
    if any(m.tool_calls for m in msgs):
        found.add("tool_calls")
    if any(m.is_multimodal for m in msgs):
        found.add("multimodal")
    if any(len(m.text) > LONG_MESSAGE_CHARS for m in msgs):
        found.add("long_message")
    if any(UPLOAD_MARKER in m.text for m in msgs):
        found.add("upload")
    if _session_language(owner, session) == "zh":
        found.add("chinese")
    return found


_DETECTABLE = frozenset(
    {"retraction", "noise", "tool_calls", "multimodal", "long_message", "upload", "chinese"}
)


def dataset_stats(owners: Sequence[Owner]) -> dict[str, Any]:
    """Count users, sessions, messages and labels by kind (a plain JSON-able dict).

    ``special_cases`` maps each tag to ``{"tagged": sessions carrying the tag, "detected":
    sessions whose content shows it}``; ``detected`` is None for tags that cannot be derived
    from content (``restatement``, ``injection``). Question counts (``questions``,
    ``questions_by_kind``, ...) come from :func:`~memlab.datasets.questions.question_stats`.
    """
    roles: Counter[str] = Counter({r: 0 for r in _ROLES})
    categories: Counter[str] = Counter({c: 0 for c in FACT_CATEGORIES})
    sections: Counter[str] = Counter({s: 0 for s in SECTION_NAMES})
    tagged: Counter[str] = Counter({t: 0 for t in TAG_NAMES})
    detected: Counter[str] = Counter()
    languages: Counter[str] = Counter()
    totals: Counter[str] = Counter()
    for owner in owners:
        for session in owner.sessions:
            totals["sessions"] += 1
            labels = session.labels
            for msg in session.messages:
                roles[msg.role] += 1
                totals["tool_calls"] += len(msg.tool_calls or [])
                totals["multimodal_messages"] += msg.is_multimodal
                totals["images"] += len(msg.images)
                totals["long_messages"] += len(msg.text) > LONG_MESSAGE_CHARS
                totals["upload_blocks"] += msg.text.count(UPLOAD_MARKER)
            categories.update(f.category for f in labels.facts)
            sections.update(labels.sections)
            tagged.update(set(labels.tags))
            detected.update(_detected(owner, session))
            languages[_session_language(owner, session)] += 1
            totals["retracted_ids"] += len(labels.retracts)
            totals["noise_sessions"] += labels.noise
            totals["must_not_store"] += len(labels.must_not_store)
    return {
        "users": len(owners),
        "sessions": totals["sessions"],
        "messages": sum(roles.values()),
        "messages_by_role": dict(roles),
        "tool_calls": totals["tool_calls"],
        "multimodal_messages": totals["multimodal_messages"],
        "images": totals["images"],
        "long_messages": totals["long_messages"],
        "upload_blocks": totals["upload_blocks"],
        "gold_facts": sum(categories.values()),
        "gold_facts_by_category": dict(categories),
        "retractions": totals["retracted_ids"],
        "noise_sessions": totals["noise_sessions"],
        "must_not_store": totals["must_not_store"],
        "section_updates": sum(sections.values()),
        "section_updates_by_name": dict(sections),
        "sessions_by_language": dict(sorted(languages.items())),
        "sessions_by_tag": dict(tagged),
        "special_cases": {
            tag: {
                "tagged": tagged[tag],
                "detected": detected[tag] if tag in _DETECTABLE else None,
            }
            for tag in TAG_NAMES
        },
        **question_stats([q for owner in owners for q in owner.questions]),
    }


def format_stats(stats: dict[str, Any]) -> str:
    """Render :func:`dataset_stats` output as an aligned plain-text table."""
    rows: list[tuple[str, str]] = []

    def add(label: str, value: Any) -> None:
        rows.append((label, "-" if value is None else str(value)))

    def add_group(label: str, total: Any, parts: dict[str, Any]) -> None:
        add(label, total)
        for key, value in parts.items():
            add(f"  {key}", value)

    add("users", stats["users"])
    add("sessions", stats["sessions"])
    add_group("messages", stats["messages"], stats["messages_by_role"])
    add("tool calls", stats["tool_calls"])
    add("multimodal messages", stats["multimodal_messages"])
    add("images", stats["images"])
    add(f"long messages (>{LONG_MESSAGE_CHARS} chars)", stats["long_messages"])
    add("upload blocks", stats["upload_blocks"])
    add_group("gold facts", stats["gold_facts"], stats["gold_facts_by_category"])
    add("retracted gold ids", stats["retractions"])
    add("noise sessions", stats["noise_sessions"])
    add("must_not_store strings", stats["must_not_store"])
    add_group("section updates", stats["section_updates"], stats["section_updates_by_name"])
    add_group("sessions by language", stats["sessions"], stats["sessions_by_language"])
    add_group("questions", stats["questions"], stats["questions_by_kind"])
    for key, value in stats["questions_by_category"].items():
        add(f"  category {key}", value)
    add("  with gold fact evidence", stats["questions_with_fact_evidence"])
    add("  with turn evidence", stats["questions_with_turn_evidence"])
    add("  without evidence", stats["questions_without_evidence"])
    if stats["questions_audited"]:
        add("  audited", stats["questions_audited"])
        add("  answer changed by the audit", stats["questions_answer_changed"])
    width = max(len(label) for label, _ in rows)
    num = max(len(value) for _, value in rows)
    lines = [f"{label:<{width}}  {value:>{num}}" for label, value in rows]

    cases = stats["special_cases"]
    head = ("special case (sessions)", "tagged", "detected")
    case_rows = [
        (tag, str(c["tagged"]), "-" if c["detected"] is None else str(c["detected"]))
        for tag, c in cases.items()
    ]
    w0 = max(len(head[0]), *(len(r[0]) for r in case_rows))
    w1 = max(len(head[1]), *(len(r[1]) for r in case_rows))
    w2 = max(len(head[2]), *(len(r[2]) for r in case_rows))
    lines.append("")
    for a, b, c in [head, *case_rows]:
        lines.append(f"{a:<{w0}}  {b:>{w1}}  {c:>{w2}}")
    return "\n".join(lines)
