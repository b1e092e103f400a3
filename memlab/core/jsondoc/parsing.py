"""Turn a model reply into a validated memory update: the parse ladder.

Rungs, tried in order; the one that produced the decoded object is recorded:

1. **strict**: the whole reply (whitespace-trimmed) is one JSON value.
2. **lenient**: remove ``<think>…</think>`` blocks (also a dangling ``</think>`` whose opening
   tag was in the prompt, and an unclosed ``<think>`` whose tag is dropped so the reasoning
   counts as prose), look inside markdown fences first, then take the first JSON object,
   decoded with `json.JSONDecoder.raw_decode` from each ``{``, that has the four top-level
   keys. What had to be removed is recorded in `ParseResult.wrappers` ("think", "fence",
   "prose").
3. **repair** (optional): fix common breakage and decode again: trailing commas, single-quoted
   strings, Python ``True``/``False``/``None``, raw control characters inside strings, ``//``
   comments, and truncation. A truncated reply is repaired by dropping the incomplete trailing
   element (an unterminated string is never completed, since half a fact is a wrong fact) and
   closing the open arrays and objects; if that does not validate, the incomplete element of
   each enclosing level is dropped in turn. Repair never invents keys.

Then the object is validated against the contract (`validate_update`). Every failure has a
`FailureCategory`; when a reply needs a rung that is disabled the category says why (fenced,
prose_wrapped, think_block). A failure never yields data: callers must not treat it as "no
changes".
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, cast

from memlab import plugins
from memlab.core.jsondoc.contract import UPDATE_CONTRACT, MemoryUpdateDict, ReplyContract, Violation
from memlab.core.jsondoc.json_repair import repair_scan

__all__ = [
    "PARSE_PRESETS",
    "WRAPPERS",
    "FailureCategory",
    "ParseOptions",
    "ParseResult",
    "Rung",
    "parse_options_for",
    "parse_reply",
]

FENCE, THINK, PROSE = "fence", "think", "prose"
#: Everything the lenient rung can strip, in the order it is applied.
WRAPPERS: tuple[str, ...] = (THINK, FENCE, PROSE)
_MAX_STARTS = 64  # '{' positions tried per region; replies are a few KB

_THINK_BLOCK_RE = re.compile(r"<(think|thinking)>.*?</\1>", re.DOTALL | re.IGNORECASE)
_THINK_CLOSE_RE = re.compile(r"</(?:think|thinking)>", re.IGNORECASE)
_THINK_OPEN_RE = re.compile(r"<(?:think|thinking)>", re.IGNORECASE)
_FENCE_RE = re.compile(r"```[ \t]*(?:[A-Za-z][\w+.-]*)?(.*?)```", re.DOTALL)
_FENCE_OPEN_RE = re.compile(r"```[ \t]*(?:[A-Za-z][\w+.-]*)?")
_DECODER = json.JSONDecoder()


class Rung(StrEnum):
    """Rung of the parse ladder that produced the decoded object."""

    STRICT = "strict"
    LENIENT = "lenient"
    REPAIR = "repair"


class FailureCategory(StrEnum):
    """Why a reply could not be turned into a valid update."""

    EMPTY = "empty"
    NO_JSON = "no_json"
    FENCED = "fenced"
    PROSE_WRAPPED = "prose_wrapped"
    THINK_BLOCK = "think_block"
    TRUNCATED = "truncated"
    INVALID_JSON = "invalid_json"
    WRONG_SHAPE = "wrong_shape"
    SCHEMA_VIOLATION = "schema_violation"


_WRAPPER_FAILURE = {
    THINK: (FailureCategory.THINK_BLOCK, "a <think> block"),
    FENCE: (FailureCategory.FENCED, "a markdown code fence"),
    PROSE: (FailureCategory.PROSE_WRAPPED, "surrounding prose"),
}


@dataclass(frozen=True)
class ParseOptions:
    """Which rungs of the ladder may be used.

    Attributes:
        lenient: Allow the lenient rung.
        repair: Allow the repair rung.
        validate: Validate against the contract (when false, only the four keys are checked).
        strip: Wrappers the lenient and repair rungs may remove (subset of `WRAPPERS`).
    """

    lenient: bool = True
    repair: bool = False
    validate: bool = True
    strip: frozenset[str] = frozenset(WRAPPERS)

    def __post_init__(self) -> None:
        unknown = set(self.strip) - set(WRAPPERS)
        if unknown:
            raise ValueError(
                f"ParseOptions.strip: unknown wrappers {sorted(unknown)}; use {list(WRAPPERS)}"
            )

    @classmethod
    def deerflow(cls) -> ParseOptions:
        """What the reference updater accepts: strict JSON, or a reply that is one fenced
        block (it drops the first line when the reply starts with a fence, and the last
        line when that is the closing fence). No think or prose stripping, no repair.
        Validation stays on: an invalid reply is a failure here, never an empty update."""
        return cls(lenient=True, repair=False, validate=True, strip=frozenset({FENCE}))

    @classmethod
    def strict_only(cls) -> ParseOptions:
        """Only the strict rung."""
        return cls(lenient=False, repair=False, validate=True)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form for result records."""
        return {
            "lenient": self.lenient,
            "repair": self.repair,
            "validate": self.validate,
            "strip": [w for w in WRAPPERS if w in self.strip],
        }


def _unknown_preset(name: str, known: Sequence[str]) -> ValueError:
    return ValueError(
        f"unknown parse preset {name!r}; known presets: {', '.join(known)}" + plugins.failure_hint()
    )


PARSE_PRESETS: plugins.Registry[Callable[[], ParseOptions]] = plugins.declare(
    "parse_preset",
    "parse preset",
    unknown=_unknown_preset,
    check=plugins.callable_entry,
    builtins={
        "default": ParseOptions,
        "deerflow": ParseOptions.deerflow,
        "strict_only": ParseOptions.strict_only,
        "repair": lambda: ParseOptions(lenient=True, repair=True),
    },
)
"""Named parse-ladder options (a lane's ``parse``): name -> a function returning them."""


def parse_options_for(name: str) -> ParseOptions:
    """The parse-ladder options of the preset ``name``.

    Raises:
        ValueError: Unknown name (the message lists the known ones).
    """
    return PARSE_PRESETS.lookup(name)()


@dataclass(frozen=True)
class ParseResult:
    """Outcome of `parse_reply`.

    Attributes:
        ok: True when `data` is a valid update.
        data: The decoded update when ok, else None.
        rung: Rung that decoded the object (also set for schema violations), else None.
        category: Why it failed; None when ok.
        violations: Contract violations (for schema_violation; for a truncated reply whose
            repair did not validate, those of the first repaired candidate).
        wrappers: What was stripped to reach the object ("think", "fence", "prose").
        error: Human-readable explanation ("" when ok).
        repairs: What the repair rung changed ("trailing_comma", "single_quotes",
            "python_literals", "control_chars", "comments", "truncation").
    """

    ok: bool
    data: MemoryUpdateDict | None = None
    rung: Rung | None = None
    category: FailureCategory | None = None
    violations: tuple[Violation, ...] = ()
    wrappers: tuple[str, ...] = ()
    error: str = ""
    repairs: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form for result records."""
        return {
            "ok": self.ok,
            "data": self.data,
            "rung": self.rung.value if self.rung is not None else None,
            "category": self.category.value if self.category is not None else None,
            "violations": [v.to_dict() for v in self.violations],
            "wrappers": list(self.wrappers),
            "error": self.error,
            "repairs": list(self.repairs),
        }


# --------------------------------------------------------------------------- extraction


@dataclass(frozen=True)
class _Region:
    """A stretch of the reply that may hold the object."""

    text: str
    fenced: bool
    outside: bool  # non-whitespace text in the body outside this region


@dataclass(frozen=True)
class _Body:
    text: str
    think: bool  # a think block (or its remains) was removed
    unclosed_think: bool
    regions: tuple[_Region, ...]


def _has_shape(value: Any, contract: ReplyContract) -> bool:
    return isinstance(value, dict) and all(key in value for key in contract.keys)


def _split_body(reply: str) -> _Body:
    body, count = _THINK_BLOCK_RE.subn("", reply)
    think = count > 0
    closes = list(_THINK_CLOSE_RE.finditer(body))
    if closes:  # the opening tag was part of the prompt: drop everything up to the last close
        body = body[closes[-1].end() :]
        think = True
    unclosed = False
    opening = _THINK_OPEN_RE.search(body)
    if opening:  # never closed: drop the tag, the reasoning after it counts as prose
        body = body[: opening.start()] + body[opening.end() :]
        think = unclosed = True
    return _Body(body, think, unclosed, _regions(body))


def _regions(body: str) -> tuple[_Region, ...]:
    fences = list(_FENCE_RE.finditer(body))
    regions: list[_Region] = []
    for match in fences:
        outside = (body[: match.start()] + body[match.end() :]).strip() != ""
        regions.append(_Region(match.group(1), fenced=True, outside=outside))
    remainder = _FENCE_RE.sub("\n", body)
    dangling = _FENCE_OPEN_RE.search(remainder)
    if dangling:  # an opening fence that never closes (usually a cut-off reply)
        before = remainder[: dangling.start()]
        outside = before.strip() != "" or any(m.group(1).strip() for m in fences)
        regions.append(_Region(remainder[dangling.end() :], fenced=True, outside=outside))
        remainder = before
    has_fenced_text = any(r.text.strip() for r in regions)
    regions.append(_Region(remainder, fenced=False, outside=has_fenced_text))
    return tuple(regions)


def _wrappers(body: _Body, region: _Region, start: int, end: int) -> tuple[str, ...]:
    found = {THINK} if body.think else set()
    if region.fenced:
        found.add(FENCE)
    if region.outside or region.text[:start].strip() or region.text[end:].strip():
        found.add(PROSE)
    return tuple(w for w in WRAPPERS if w in found)


def _starts(text: str) -> list[int]:
    starts: list[int] = []
    index = text.find("{")
    while index != -1 and len(starts) < _MAX_STARTS:
        starts.append(index)
        index = text.find("{", index + 1)
    return starts


def _decode_region(region: _Region) -> tuple[Any, bool]:
    """Decode the whole region if it is one JSON value: (value, True), else (None, False)."""
    stripped = region.text.strip()
    if not stripped:
        return None, False
    try:
        return json.loads(stripped), True
    except (ValueError, RecursionError):
        return None, False


def _find_object(
    body: _Body, contract: ReplyContract
) -> tuple[dict[str, Any], tuple[str, ...]] | None:
    """First object with the contract's top-level keys, with the wrappers around it."""
    for region in body.regions:
        value, whole = _decode_region(region)
        if whole:
            # A region that is one JSON value is taken as a whole, not searched inside.
            if _has_shape(value, contract):
                start = region.text.find(region.text.strip())
                return value, _wrappers(body, region, start, start + len(region.text.strip()))
            continue
        for start in _starts(region.text):
            try:
                value, end = _DECODER.raw_decode(region.text, start)
            except (ValueError, RecursionError):
                continue
            if _has_shape(value, contract):
                return value, _wrappers(body, region, start, end)
    return None


@dataclass
class _RepairOutcome:
    result: ParseResult | None = None
    truncated_violations: tuple[Violation, ...] = ()


def _try_repair(
    body: _Body, reply: str, options: ParseOptions, contract: ReplyContract
) -> _RepairOutcome:
    outcome = _RepairOutcome()
    if not options.lenient:
        # Without the lenient rung the reply itself must be the (broken) object.
        body = _Body(reply, False, False, (_Region(reply, fenced=False, outside=False),))
    allowed = options.strip if options.lenient else frozenset()
    for region in body.regions:
        starts = _starts(region.text)
        if not options.lenient:
            starts = starts[:1] if starts and starts[0] == 0 else []
        for start in starts:
            scan = repair_scan(region.text, start)
            if scan is None or not scan.changes:
                continue
            wrappers = _wrappers(body, region, start, scan.end)
            if not set(wrappers) <= allowed:
                continue
            repairs = tuple(sorted(scan.changes))
            for candidate in scan.candidates():
                try:
                    value = json.loads(candidate)
                except (ValueError, RecursionError):
                    continue
                if not _has_shape(value, contract):
                    continue
                result = _finish(value, Rung.REPAIR, wrappers, options, contract, repairs)
                if result.ok or not scan.truncated:
                    outcome.result = result
                    return outcome
                if not outcome.truncated_violations:
                    outcome.truncated_violations = result.violations
            if scan.truncated:
                break  # later starts are nested in this cut-off value
    return outcome


# --------------------------------------------------------------------------- ladder


def _finish(
    value: dict[str, Any],
    rung: Rung,
    wrappers: tuple[str, ...],
    options: ParseOptions,
    contract: ReplyContract,
    repairs: tuple[str, ...] = (),
) -> ParseResult:
    if options.validate:
        violations = tuple(contract.validate(value))
        if violations:
            shown = "; ".join(str(v) for v in violations[:5])
            more = f" (+{len(violations) - 5} more)" if len(violations) > 5 else ""
            return ParseResult(
                ok=False,
                rung=rung,
                category=FailureCategory.SCHEMA_VIOLATION,
                violations=violations,
                wrappers=wrappers,
                error=f"reply breaks the contract: {shown}{more}",
                repairs=repairs,
            )
    # Valid against the contract: the document has the typed dict's shape (for the update
    # contract; other contracts' callers read it as the plain object it is).
    data = cast(MemoryUpdateDict, value)
    return ParseResult(ok=True, data=data, rung=rung, wrappers=wrappers, repairs=repairs)


def _fail(category: FailureCategory, error: str, **extra: Any) -> ParseResult:
    return ParseResult(ok=False, category=category, error=error, **extra)


def _shape_error(value: Any, contract: ReplyContract) -> str:
    if isinstance(value, dict):
        missing = [key for key in contract.keys if key not in value]
        return f"JSON object lacks the top-level keys {missing}"
    kind = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return f"reply is {kind.get(type(value), 'a number')}, not a JSON object"


def _top_level_spans(text: str, contract: ReplyContract) -> tuple[bool, str]:
    """Walk the top-level '{' spans of `text` (nested braces are skipped).

    Returns (whether a span runs off the end, shape error of the first decodable object).
    """
    shape_error = ""
    pos = text.find("{")
    for _ in range(_MAX_STARTS):
        if pos == -1:
            break
        scan = repair_scan(text, pos)
        if scan is None:
            pos = text.find("{", pos + 1)
            continue
        if scan.truncated:
            return True, shape_error
        try:
            value, _end = _DECODER.raw_decode(text, pos)
        except (ValueError, RecursionError):
            pass
        else:
            shape_error = shape_error or _shape_error(value, contract)
        pos = text.find("{", scan.end)
    return False, shape_error


def _diagnose(
    body: _Body,
    reply: str,
    truncated_violations: tuple[Violation, ...],
    contract: ReplyContract,
) -> ParseResult:
    """Categorise a reply from which no rung got an update object."""
    truncated = False
    shape_error = ""
    for region in body.regions:
        value, whole = _decode_region(region)
        if whole:
            shape_error = shape_error or _shape_error(value, contract)
            continue
        region_truncated, region_shape = _top_level_spans(region.text, contract)
        truncated = truncated or region_truncated
        shape_error = shape_error or region_shape
    if truncated:
        return _fail(
            FailureCategory.TRUNCATED,
            "reply ends inside an unterminated JSON value (the model may have hit its token limit)",
            violations=truncated_violations,
        )
    if shape_error:
        return _fail(FailureCategory.WRONG_SHAPE, shape_error)
    if "{" not in body.text:
        if body.unclosed_think:
            return _fail(
                FailureCategory.TRUNCATED,
                "reply is an unclosed <think> block without JSON (the model may have run out "
                "of tokens while reasoning)",
            )
        where = " outside the <think> block" if "{" in reply else ""
        return _fail(FailureCategory.NO_JSON, f"reply contains no JSON object{where}")
    where = _where(body, reply)
    return _fail(FailureCategory.INVALID_JSON, f"reply contains malformed JSON{where}")


def _where(body: _Body, reply: str) -> str:
    """`` at line L, column C: <reason>`` of the first JSON error in the reply's first object
    ("" when it cannot be placed in the reply: a <think> block was cut out of its middle)."""
    offset = reply.find(body.text)
    start = body.text.find("{")
    if offset < 0 or start < 0:
        return ""
    try:
        json.JSONDecoder().raw_decode(body.text, start)
    except json.JSONDecodeError as exc:
        position = offset + exc.pos
        line = reply.count("\n", 0, position) + 1
        column = position - (reply.rfind("\n", 0, position) + 1) + 1
        return f" at line {line}, column {column}: {exc.msg}"
    except (ValueError, RecursionError):
        return ""
    return ""


def parse_reply(
    text: str,
    options: ParseOptions | None = None,
    contract: ReplyContract = UPDATE_CONTRACT,
) -> ParseResult:
    """Parse a model reply into a validated memory update (or a reply of another contract).

    Args:
        text: The raw reply.
        options: Rungs allowed; defaults to `ParseOptions()` (strict + lenient, no repair).
        contract: The reply's contract (default: the memory update's).

    Returns:
        A `ParseResult`; `data` is set only when `ok` is true.
    """
    if not isinstance(text, str):
        raise TypeError(f"parse_reply expects the reply text (str), got {type(text).__name__}")
    opts = options if options is not None else ParseOptions()
    stripped = text.strip()
    if not stripped:
        return _fail(FailureCategory.EMPTY, "reply is empty")

    try:
        value = json.loads(stripped)
    except (ValueError, RecursionError):
        pass
    else:
        if _has_shape(value, contract):
            return _finish(value, Rung.STRICT, (), opts, contract)
        return _fail(FailureCategory.WRONG_SHAPE, _shape_error(value, contract))

    body = _split_body(stripped)
    found = _find_object(body, contract)
    if found is not None:
        value, wrappers = found
        allowed = opts.strip if opts.lenient else frozenset()
        blocked = [w for w in wrappers if w not in allowed]
        if not blocked:
            return _finish(value, Rung.LENIENT, wrappers, opts, contract)
        category, what = _WRAPPER_FAILURE[blocked[0]]
        reason = "is disabled" if not opts.lenient else f"may not strip {blocked[0]}"
        return _fail(
            category,
            f"the JSON object is wrapped in {what}; the lenient rung {reason} in these options",
            wrappers=wrappers,
        )

    truncated_violations: tuple[Violation, ...] = ()
    if opts.repair:
        outcome = _try_repair(body, stripped, opts, contract)
        if outcome.result is not None:
            return outcome.result
        truncated_violations = outcome.truncated_violations
    return _diagnose(body, stripped, truncated_violations, contract)
