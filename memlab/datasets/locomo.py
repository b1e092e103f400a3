"""Convert LoCoMo (``locomo10.json``, CC BY-NC 4.0) into memlab's dataset format.

Each LoCoMo conversation between speakers A and B becomes two memory owners: one where A's
turns are ``human`` and B's are ``ai``, and the mirror image. Mapping:

- owner ``user_id``: ``<sample_id>.<speaker>`` (e.g. ``conv-26.Caroline``), passed through
  :func:`~memlab.core.base.safe_names.encode_component` so that it can name a file (a name with
  other characters keeps a readable part plus a hash suffix);
- session ``thread_id``: ``<sample_id>/session_<n>``; ``started_at`` is the session's
  ``date_time`` ("1:56 pm on 8 May, 2023"), read as UTC because LoCoMo gives no timezone;
  message timestamps follow at 30 s per turn;
- gold facts: the session's observations about the owner (``observation`` ->
  ``session_<n>_observation`` -> speaker -> ``[text, dia_id(s)]``), ids
  ``<sample_id>/<speaker>/s<n>/o<k>``, category ``context`` (LoCoMo observations carry no
  category), ``evidence`` = the dialogue ids;
- image turns (``blip_caption``, usually ``img_url``) become multimodal content: the turn's
  text, one ``image_url`` part per URL carrying the caption (``locomo:<sample_id>/<dia_id>``
  when the turn has no URL), and a text part ``[image: <caption>]`` so that the pipeline,
  which reads only text parts, still sees what the image shows;
- the ``qa`` items become questions of the owner they are asked of, with the original or the
  audited answer key (:mod:`memlab.datasets.locomo_qa`).

The source is untrusted input: every shape the mapping does not expect is a
:class:`LocomoFormatError` naming the sample and field, and the owners are validated like a
dataset file before anything is written. The data is converted at run time and never committed.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from memlab.core.base.files import FileReadError, io_reason, read_bytes
from memlab.core.base.jsontext import JsonDepthError, loads_json
from memlab.core.base.safe_names import encode_component
from memlab.core.base.safe_text import safe_json
from memlab.datasets.loader import parse_owner_line, write_dataset
from memlab.datasets.locomo_qa import (
    AnswerKey,
    AuditFinding,
    LocomoFormatError,
    QuestionCounts,
    check_audit_matches,
    default_audit_path,
    load_audit,
    locomo_questions,
)
from memlab.datasets.models import (
    GoldFact,
    ImagePart,
    ImageURL,
    Message,
    Owner,
    Part,
    Session,
    SessionLabels,
    TagName,
    TextPart,
)
from memlab.errors import excerpt

__all__ = [
    "MAX_SOURCE_BYTES",
    "TURN_SPACING",
    "ImportSummary",
    "LocomoFormatError",
    "convert_conversation",
    "convert_locomo",
    "import_locomo",
    "parse_locomo_datetime",
]

logger = logging.getLogger(__name__)

#: Time between two consecutive turns of a session (LoCoMo has one timestamp per session).
TURN_SPACING = timedelta(seconds=30)

MAX_SOURCE_BYTES = 64 * 1024 * 1024
"""Largest source file read (``locomo10.json`` is about 3 MB)."""

_SESSION_KEY = re.compile(r"^session_(\d+)$")
_DATE_FORMATS = ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y")


@dataclass(frozen=True)
class ImportSummary:
    """What :func:`import_locomo` wrote."""

    source: Path
    dest: Path
    conversations: int
    owners: int
    sessions: int
    messages: int
    gold_facts: int
    image_turns: int
    questions: int = 0
    answer_key: str = "original"
    audited: int = 0
    answers_changed: int = 0
    unresolved_evidence: int = 0

    def __str__(self) -> str:
        key = f"answer key {self.answer_key}"
        if self.answer_key == "audited":
            key += f": {self.audited} questions audited, {self.answers_changed} answers changed"
        elif self.audited:
            key += (
                f", audit recorded: {self.audited} questions audited, the audit changes "
                f"{self.answers_changed} answers"
            )
        return (
            f"{self.conversations} conversations -> {self.owners} owners, "
            f"{self.sessions} sessions, {self.messages} messages, {self.gold_facts} gold facts, "
            f"{self.image_turns} image turns, {self.questions} questions ({key}; "
            f"{self.unresolved_evidence} evidence ids name no turn); written to {self.dest}"
        )


def parse_locomo_datetime(text: str) -> datetime:
    """Parse a LoCoMo ``date_time`` such as ``"1:56 pm on 8 May, 2023"`` as UTC."""
    cleaned = " ".join(str(text).split())
    for fmt in _DATE_FORMATS:
        try:
            return datetime.strptime(cleaned, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    raise LocomoFormatError(
        f"unrecognized LoCoMo date_time {excerpt(text)}; expected e.g. '1:56 pm on 8 May, 2023'"
    )


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), "a number" if isinstance(value, int | float) else "null"
    )


def _name(key: str) -> str:
    """A key or id as part of an error location: one line, at most 40 characters."""
    text = " ".join(key.split())
    return text if len(text) <= 40 else text[:37] + "..."


def _fail(where: str, problem: str) -> LocomoFormatError:
    return LocomoFormatError(f"{where}: {problem}")


def _text(value: Any, where: str, *, required: bool = True) -> str:
    """A non-empty string (or, when not required, a string that may be empty)."""
    if not isinstance(value, str) or (required and not value.strip()):
        wanted = "a non-empty string" if required else "a string"
        raise _fail(where, f"expected {wanted}, got {_kind(value)} {excerpt(value, 40)}")
    return value


def _evidence(raw: Any, where: str) -> list[str]:
    # Usually "D1:3"; a few observations give "D4:17, D4:19" or a list of ids.
    items = raw if isinstance(raw, list) else [raw]
    out: list[str] = []
    for item in items:
        out.extend(p.strip() for p in _text(item, where, required=False).split(",") if p.strip())
    return out


def _content(turn: dict[str, Any], sample_id: str, where: str) -> str | list[Part]:
    text = _text(turn.get("text", ""), f"{where}.text", required=False)
    caption = turn.get("blip_caption")
    if caption is None or caption == "":
        return text
    caption = _text(caption, f"{where}.blip_caption")
    dia_id = _text(turn.get("dia_id", "?"), f"{where}.dia_id")
    urls = turn.get("img_url") or [f"locomo:{sample_id}/{dia_id}"]
    if isinstance(urls, str):
        urls = [urls]
    if not isinstance(urls, list):
        raise _fail(f"{where}.img_url", f"expected a URL or a list of URLs, got {_kind(urls)}")
    parts: list[Part] = [TextPart(text=text)] if text else []
    for k, url in enumerate(urls):
        url = _text(url, f"{where}.img_url[{k}]")
        parts.append(ImagePart(image_url=ImageURL(url=url), caption=caption))
    parts.append(TextPart(text=f"[image: {caption}]"))
    return parts


def _session_numbers(conv: dict[str, Any], where: str) -> list[int]:
    numbers = []
    for key, value in conv.items():
        match = _SESSION_KEY.match(key)
        if not match:
            continue
        if not isinstance(value, list):
            raise _fail(f"{where}.{key}", f"expected a list of turns, got {_kind(value)}")
        if value:
            numbers.append(int(match.group(1)))
        else:
            logger.warning("%s.%s has no turns; skipped", where, key)
    return sorted(numbers)


_Observations = dict[int, dict[str, list[tuple[str, list[str] | None]]]]


def _observations(sample: dict[str, Any], speakers: tuple[str, str], where: str) -> _Observations:
    """Observations as ``{session number: {speaker: [(text, evidence)]}}``, shapes checked."""
    raw = sample.get("observation")
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise _fail(f"{where}.observation", f"expected an object, got {_kind(raw)}")
    out: _Observations = {}
    for key, per_speaker in raw.items():
        at = f"{where}.observation.{_name(key)}"
        match = re.fullmatch(r"session_(\d+)_observation", key)
        if match is None:
            raise _fail(at, "expected keys named session_<n>_observation")
        if not isinstance(per_speaker, dict):
            raise _fail(at, f"expected an object of speakers, got {_kind(per_speaker)}")
        session: dict[str, list[tuple[str, list[str] | None]]] = {}
        for speaker, items in per_speaker.items():
            spot = f"{at}.{_name(speaker)}"
            if speaker not in speakers:
                raise _fail(spot, f"not one of the conversation's speakers {list(speakers)}")
            if not isinstance(items, list):
                raise _fail(spot, f"expected a list of [text, evidence] pairs, got {_kind(items)}")
            session[speaker] = [_observation(item, f"{spot}[{k}]") for k, item in enumerate(items)]
        out[int(match.group(1))] = session
    return out


def _observation(item: Any, where: str) -> tuple[str, list[str] | None]:
    # A bare string would otherwise become one gold fact per character.
    if not isinstance(item, list) or not 1 <= len(item) <= 2:
        raise _fail(where, f"expected a [text, evidence] pair, got {_kind(item)} {excerpt(item)}")
    text = _text(item[0], f"{where}[0]")
    return text, (_evidence(item[1], f"{where}[1]") if len(item) > 1 else None)


def _header(sample: Any, where: str) -> tuple[str, dict[str, Any], tuple[str, str]]:
    if not isinstance(sample, dict):
        raise _fail(where, f"expected a conversation object, got {_kind(sample)}")
    sample_id = _text(sample.get("sample_id"), f"{where}.sample_id")
    conv = sample.get("conversation")
    if not isinstance(conv, dict):
        raise _fail(f"{where}.conversation", f"expected an object, got {_kind(conv)}")
    speakers = (
        _text(conv.get("speaker_a"), f"{where}.conversation.speaker_a"),
        _text(conv.get("speaker_b"), f"{where}.conversation.speaker_b"),
    )
    if speakers[0] == speakers[1]:
        raise _fail(
            f"{where}.conversation.speaker_b",
            f"both speakers are {excerpt(speakers[0])}; the two owners would be the same",
        )
    return sample_id, conv, speakers


def convert_conversation(
    sample: Any,
    where: str = "sample",
    *,
    findings: Mapping[int, AuditFinding] | None = None,
    counts: QuestionCounts | None = None,
) -> list[Owner]:
    """Convert one LoCoMo sample into two owners (speaker A first, then speaker B).

    Args:
        sample: One element of the LoCoMo list.
        where: How errors name the sample (e.g. ``"locomo10.json: [3]"``).
        findings: The answer-key audit's findings for this sample by qa index (the audited
            key); None keeps the original key.
        counts: Receives the question counts (questions, audited, unresolved evidence).

    Raises:
        LocomoFormatError: The sample does not have the expected shape.
    """
    sample_id, conv, speakers = _header(sample, where)
    where = f"{where} ({_name(sample_id)})"
    numbers = _session_numbers(conv, f"{where}.conversation")
    if not numbers:
        raise _fail(f"{where}.conversation", "no session_<n> turns found")
    observations = _observations(sample, speakers, where)
    try:
        owners = [
            _owner(sample_id, conv, speakers, owner, numbers, observations, where)
            for owner in speakers
        ]
        questions, found = locomo_questions(sample, owners, numbers, findings, where)
    except ValidationError as exc:  # a value the dataset models refuse
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise _fail(where, f"{field}: {first['msg']}") from None
    if counts is not None:
        counts.add(found)
    return [o.model_copy(update={"questions": q}) for o, q in zip(owners, questions, strict=True)]


def _owner(
    sample_id: str,
    conv: dict[str, Any],
    speakers: tuple[str, str],
    owner_name: str,
    numbers: list[int],
    observations: _Observations,
    where: str,
) -> Owner:
    where = f"{where}.conversation"
    other = speakers[1] if owner_name == speakers[0] else speakers[0]
    sessions: list[Session] = []
    prev_end: datetime | None = None
    for n in numbers:
        date_key = f"session_{n}_date_time"
        if date_key not in conv:
            raise _fail(f"{where}.{date_key}", "missing")
        start = parse_locomo_datetime(_text(conv[date_key], f"{where}.{date_key}"))
        if prev_end is not None and start < prev_end:
            # Keep the output valid (sessions must not overlap) without reordering.
            logger.warning("%s session_%d starts before the previous one ends; shifted", where, n)
            start = prev_end
        turns = conv[f"session_{n}"]
        messages = _messages(turns, owner_name, speakers, start, sample_id, f"{where}.session_{n}")
        facts = [
            GoldFact(
                id=f"{sample_id}/{owner_name}/s{n}/o{k}",
                content=text,
                category="context",
                evidence=evidence,
            )
            for k, (text, evidence) in enumerate(observations.get(n, {}).get(owner_name, []), 1)
        ]
        tags: list[TagName] = ["multimodal"] if any(m.is_multimodal for m in messages) else []
        sessions.append(
            Session(
                thread_id=f"{sample_id}/session_{n}",
                started_at=start,
                messages=messages,
                labels=SessionLabels(facts=facts, tags=tags),
            )
        )
        prev_end = messages[-1].timestamp
    return Owner(
        user_id=encode_component(f"{sample_id}.{owner_name}"),
        persona=f"LoCoMo {sample_id}: {owner_name} talking with {other}.",
        language="en",
        sessions=sessions,
    )


def _messages(
    turns: list[Any],
    owner_name: str,
    speakers: tuple[str, str],
    start: datetime,
    sample_id: str,
    at: str,
) -> list[Message]:
    """A session's turns as messages: the owner's are ``human``, the other speaker's ``ai``."""
    messages = []
    for k, turn in enumerate(turns):
        where = f"{at}[{k}]"
        if not isinstance(turn, dict):
            raise _fail(where, f"expected a turn object, got {_kind(turn)}")
        speaker = turn.get("speaker")
        if speaker not in speakers:
            raise _fail(f"{where}.speaker", f"unknown speaker {excerpt(speaker)}")
        messages.append(
            Message(
                role="human" if speaker == owner_name else "ai",
                content=_content(turn, sample_id, where),
                timestamp=start + k * TURN_SPACING,
            )
        )
    return messages


def _read_source(src: str | os.PathLike[str]) -> list[Any]:
    path = Path(src)
    try:
        raw = read_bytes(path, what="LoCoMo source", max_bytes=MAX_SOURCE_BYTES)
    except FileNotFoundError:
        raise LocomoFormatError(
            f"LoCoMo source not found: {path}; pass the path of locomo10.json "
            "(github.com/snap-research/LoCoMo, data/locomo10.json)"
        ) from None
    except FileReadError as exc:
        raise LocomoFormatError(str(exc)) from None
    except OSError as exc:
        reason = io_reason(exc)
        raise LocomoFormatError(f"{excerpt(str(path), 200)}: cannot read: {reason}") from None
    try:
        text = raw.decode("utf-8")
        data, _ = safe_json(loads_json(text), decoded_from=text, where=str(path))
    except UnicodeDecodeError as exc:
        raise LocomoFormatError(
            f"{path}: not UTF-8 text (invalid byte at offset {exc.start}); save it as UTF-8"
        ) from None
    except json.JSONDecodeError as exc:
        raise LocomoFormatError(
            f"{path}: not valid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    except JsonDepthError as exc:
        raise LocomoFormatError(f"{path}: {exc}") from None
    if not isinstance(data, list) or not data:
        raise LocomoFormatError(f"{path}: expected a JSON list of conversation objects")
    return data


def _convert_samples(
    samples: list[Any],
    source: str,
    findings: Mapping[tuple[int, int], AuditFinding] | None = None,
    counts: QuestionCounts | None = None,
) -> list[Owner]:
    owners: list[Owner] = []
    first_index: dict[str, int] = {}
    if findings is not None:
        check_audit_matches(findings, samples, source)
    for index, sample in enumerate(samples):
        mine = None if findings is None else {n: f for (c, n), f in findings.items() if c == index}
        converted = convert_conversation(
            sample, where=f"{source}: [{index}]", findings=mine, counts=counts
        )
        sample_id = str(sample["sample_id"])
        earlier = first_index.setdefault(sample_id, index)
        if earlier != index:
            raise LocomoFormatError(
                f"{source}: [{index}].sample_id: duplicate sample id {excerpt(sample_id)} "
                f"(already used by [{earlier}])"
            )
        owners.extend(converted)
    _validate_owners(owners, source)
    return owners


def _validate_owners(owners: list[Owner], source: str) -> None:
    """Check the owners as ``memlab datasets validate`` would check the written file."""
    seen: set[str] = set()
    for owner in owners:
        if owner.user_id in seen:
            raise LocomoFormatError(
                f"{source}: two owners map to the user id {excerpt(owner.user_id)}; make the "
                "sample ids and speaker names distinct"
            )
        seen.add(owner.user_id)
        _, problems = parse_owner_line(json.loads(owner.to_json_line()))
        if problems:
            field, message = problems[0]
            raise LocomoFormatError(
                f"{source}: owner {excerpt(owner.user_id)} would be invalid: {field}: {message}"
            )


def convert_locomo(
    src_path: str | os.PathLike[str],
    *,
    answer_key: AnswerKey = "original",
    audit: str | os.PathLike[str] | None = None,
) -> list[Owner]:
    """Convert a LoCoMo JSON file into owners (two per conversation, in file order).

    Args:
        src_path: ``locomo10.json``.
        answer_key: ``original``, or ``audited`` to apply the answer-key audit.
        audit: The audit file (default for ``audited``: ``audit/errors.json`` beside the
            source); with ``original``, each audited question records the audit's answer
            and keeps LoCoMo's.

    Raises:
        LocomoFormatError: The file cannot be read or has an unexpected shape.
        LocomoAuditError: The audit cannot be read or belongs to another source.
    """
    findings = _findings(src_path, answer_key, audit)
    return _convert_samples(_read_source(src_path), os.fspath(src_path), findings)


def _findings(
    src: str | os.PathLike[str], answer_key: str, audit: str | os.PathLike[str] | None
) -> dict[tuple[int, int], AuditFinding] | None:
    if answer_key not in ("original", "audited"):
        raise LocomoFormatError(
            f"unknown answer key {excerpt(answer_key)}; use 'original' or 'audited'"
        )
    if answer_key == "original":  # the audit recorded beside LoCoMo's answers, when given
        if audit is None:
            return None
        return {k: replace(f, applied=False) for k, f in load_audit(audit).items()}
    return load_audit(audit if audit is not None else default_audit_path(src))


def _same_file(a: Path, b: Path) -> bool:
    """True when ``a`` and ``b`` name one file: the same resolved path (links followed) or,
    when both exist, the same inode (a hard link)."""
    try:
        if a.resolve() == b.resolve():
            return True
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def _refuse_an_input(target: Path, inputs: Mapping[str, Path]) -> None:
    """Refuse ``--out`` naming one of the files the import reads (it would be overwritten)."""
    shown = excerpt(str(target), 200)
    for name, path in inputs.items():
        if _same_file(path, target):
            raise LocomoFormatError(f"--out {shown} is the {name}; write to another file")


def import_locomo(
    src: str | os.PathLike[str],
    dest: str | os.PathLike[str],
    *,
    answer_key: AnswerKey = "original",
    audit: str | os.PathLike[str] | None = None,
) -> ImportSummary:
    """Convert ``src`` and write the owners to ``dest`` as JSONL (atomically).

    Nothing is written unless every owner is valid; ``dest`` may not be ``src`` nor the audit
    that is read (the same file by any path, link or hard link). ``answer_key`` and ``audit``
    are as in :func:`convert_locomo`.

    Raises:
        LocomoFormatError: Bad source, or ``dest`` is the source or a directory.
        LocomoAuditError: The audit cannot be read or belongs to another source.
    """
    source, target = Path(src), Path(dest)
    shown = excerpt(str(target), 200)
    inputs = {"source file": source}
    if answer_key == "audited":  # the audit is read too, named or beside the source
        inputs["audit file"] = Path(audit) if audit is not None else default_audit_path(source)
    _refuse_an_input(target, inputs)
    try:
        is_dir = target.is_dir()
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise LocomoFormatError(f"--out {shown} cannot be used: {reason}") from None
    if is_dir:
        raise LocomoFormatError(f"--out {shown} is a directory; name a .jsonl file")
    findings = _findings(source, answer_key, audit)
    samples = _read_source(source)
    counts = QuestionCounts()
    owners = _convert_samples(samples, os.fspath(source), findings, counts)
    try:
        write_dataset(owners, target)
    except OSError as exc:
        raise LocomoFormatError(f"cannot write {shown}: {io_reason(exc)}") from None
    sessions = [s for o in owners for s in o.sessions]
    summary = ImportSummary(
        source=source,
        dest=target,
        conversations=len(samples),
        owners=len(owners),
        sessions=len(sessions),
        messages=sum(len(s.messages) for s in sessions),
        gold_facts=sum(len(s.labels.facts) for s in sessions),
        # Each image turn appears once per owner of its conversation.
        image_turns=sum(1 for s in sessions for m in s.messages if m.images) // 2,
        questions=counts.questions,
        answer_key=answer_key,
        audited=counts.audited,
        answers_changed=counts.answers_changed,
        unresolved_evidence=len(counts.unresolved_evidence),
    )
    for ref in counts.unresolved_evidence:
        logger.info("LoCoMo evidence id that names no turn, dropped: %s", ref)
    logger.info("imported LoCoMo: %s", summary)
    return summary
