"""Convert LoCoMo (``locomo10.json``, CC BY-NC 4.0) into memlab's dataset format.

Each LoCoMo conversation between speakers A and B becomes two memory owners: one where A's
turns are ``human`` and B's are ``ai``, and the mirror image. Mapping:

- owner ``user_id``: ``<sample_id>/<speaker>`` (e.g. ``conv-26/Caroline``);
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
  which reads only text parts, still sees what the image shows.

The data is converted at run time and never committed.
"""

from __future__ import annotations

import json
import logging
import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memlab.datasets.loader import write_dataset
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
from memlab.errors import MemlabError

__all__ = [
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

_SESSION_KEY = re.compile(r"^session_(\d+)$")
_DATE_FORMATS = ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y")


class LocomoFormatError(MemlabError, ValueError):
    """The source file does not have the LoCoMo structure expected here."""


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

    def __str__(self) -> str:
        return (
            f"{self.conversations} conversations -> {self.owners} owners, "
            f"{self.sessions} sessions, {self.messages} messages, {self.gold_facts} gold facts, "
            f"{self.image_turns} image turns; written to {self.dest}"
        )


def parse_locomo_datetime(text: str) -> datetime:
    """Parse a LoCoMo ``date_time`` such as ``"1:56 pm on 8 May, 2023"`` as UTC."""
    cleaned = " ".join(text.split())
    for fmt in _DATE_FORMATS:
        try:
            return datetime.strptime(cleaned, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    raise LocomoFormatError(
        f"unrecognized LoCoMo date_time {text!r}; expected e.g. '1:56 pm on 8 May, 2023'"
    )


def _evidence(raw: Any) -> list[str]:
    # Usually "D1:3"; a few observations give "D4:17, D4:19" or a list of ids.
    items = raw if isinstance(raw, list) else [raw]
    out: list[str] = []
    for item in items:
        out.extend(part.strip() for part in str(item).split(",") if part.strip())
    return out


def _content(turn: dict[str, Any], sample_id: str) -> str | list[Part]:
    text = str(turn.get("text", ""))
    caption = turn.get("blip_caption")
    if not caption:
        return text
    urls = turn.get("img_url") or [f"locomo:{sample_id}/{turn.get('dia_id', '?')}"]
    if isinstance(urls, str):
        urls = [urls]
    parts: list[Part] = []
    if text:
        parts.append(TextPart(text=text))
    parts.extend(ImagePart(image_url=ImageURL(url=str(u)), caption=str(caption)) for u in urls)
    parts.append(TextPart(text=f"[image: {caption}]"))
    return parts


def _session_numbers(sample_id: str, conv: dict[str, Any]) -> list[int]:
    numbers = []
    for key, value in conv.items():
        match = _SESSION_KEY.match(key)
        if not match:
            continue
        if not isinstance(value, list):
            raise LocomoFormatError(f"{sample_id}: conversation.{key} is not a list of turns")
        if value:
            numbers.append(int(match.group(1)))
        else:
            logger.warning("%s: %s has no turns; skipped", sample_id, key)
    return sorted(numbers)


def convert_conversation(sample: dict[str, Any]) -> list[Owner]:
    """Convert one LoCoMo sample into two owners (speaker A first, then speaker B)."""
    try:
        sample_id = str(sample["sample_id"])
        conv: dict[str, Any] = sample["conversation"]
        speakers = (str(conv["speaker_a"]), str(conv["speaker_b"]))
    except (KeyError, TypeError) as exc:
        raise LocomoFormatError(
            f"a LoCoMo sample needs sample_id, conversation.speaker_a/speaker_b (missing {exc})"
        ) from exc
    observations: dict[str, Any] = sample.get("observation") or {}
    numbers = _session_numbers(sample_id, conv)
    if not numbers:
        raise LocomoFormatError(f"{sample_id}: no session_<n> turns found")

    owners = []
    for owner_name in speakers:
        other = speakers[1] if owner_name == speakers[0] else speakers[0]
        sessions: list[Session] = []
        prev_end: datetime | None = None
        for n in numbers:
            date_key = f"session_{n}_date_time"
            if date_key not in conv:
                raise LocomoFormatError(f"{sample_id}: {date_key} is missing")
            start = parse_locomo_datetime(str(conv[date_key]))
            if prev_end is not None and start < prev_end:
                # Keep the output valid (sessions must not overlap) without reordering.
                logger.warning(
                    "%s session_%d starts before the previous one ends; shifted", sample_id, n
                )
                start = prev_end
            messages = []
            for k, turn in enumerate(conv[f"session_{n}"]):
                speaker = turn.get("speaker")
                if speaker not in speakers:
                    raise LocomoFormatError(
                        f"{sample_id} session_{n} turn {k}: unknown speaker {speaker!r}"
                    )
                messages.append(
                    Message(
                        role="human" if speaker == owner_name else "ai",
                        content=_content(turn, sample_id),
                        timestamp=start + k * TURN_SPACING,
                    )
                )
            per_speaker = observations.get(f"session_{n}_observation") or {}
            facts = [
                GoldFact(
                    id=f"{sample_id}/{owner_name}/s{n}/o{k}",
                    content=str(item[0]),
                    category="context",
                    evidence=_evidence(item[1]) if len(item) > 1 else None,
                )
                for k, item in enumerate(per_speaker.get(owner_name) or [], start=1)
            ]
            tags: list[TagName] = []
            if any(m.is_multimodal for m in messages):
                tags.append("multimodal")
            sessions.append(
                Session(
                    thread_id=f"{sample_id}/session_{n}",
                    started_at=start,
                    messages=messages,
                    labels=SessionLabels(facts=facts, tags=tags),
                )
            )
            prev_end = messages[-1].timestamp
        owners.append(
            Owner(
                user_id=f"{sample_id}/{owner_name}",
                persona=f"LoCoMo {sample_id}: {owner_name} talking with {other}.",
                language="en",
                sessions=sessions,
            )
        )
    return owners


def _read_source(src: str | os.PathLike[str]) -> list[dict[str, Any]]:
    path = Path(src)
    if not path.is_file():
        raise FileNotFoundError(
            f"LoCoMo source not found: {path}; pass the path of locomo10.json "
            "(github.com/snap-research/LoCoMo, data/locomo10.json)"
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise LocomoFormatError(f"{path}: not valid JSON ({exc})") from exc
    if not isinstance(data, list) or not all(isinstance(s, dict) for s in data):
        raise LocomoFormatError(f"{path}: expected a JSON list of conversation objects")
    return data


def convert_locomo(src_path: str | os.PathLike[str]) -> list[Owner]:
    """Convert a LoCoMo JSON file into owners (two per conversation, in file order)."""
    owners: list[Owner] = []
    for sample in _read_source(src_path):
        owners.extend(convert_conversation(sample))
    return owners


def import_locomo(src: str | os.PathLike[str], dest: str | os.PathLike[str]) -> ImportSummary:
    """Convert ``src`` and write the owners to ``dest`` as JSONL (atomically)."""
    samples = _read_source(src)
    owners = [owner for sample in samples for owner in convert_conversation(sample)]
    write_dataset(owners, dest)
    sessions = [s for o in owners for s in o.sessions]
    summary = ImportSummary(
        source=Path(src),
        dest=Path(dest),
        conversations=len(samples),
        owners=len(owners),
        sessions=len(sessions),
        messages=sum(len(s.messages) for s in sessions),
        gold_facts=sum(len(s.labels.facts) for s in sessions),
        # Each image turn appears once per owner of its conversation.
        image_turns=sum(1 for s in sessions for m in s.messages if m.images) // 2,
    )
    logger.info("imported LoCoMo: %s", summary)
    return summary
