"""Build ``datasets/personas.jsonl`` from the authoring sources in this folder.

Usage::

    .venv/bin/python datasets/personas_src/build.py           # write the JSONL and print counts
    .venv/bin/python datasets/personas_src/build.py --check  # fail if the JSONL is out of date

The output is deterministic: timestamps come from each session's local start time plus fixed
gaps, and JSON keys keep their insertion order (written with ``ensure_ascii=False``).
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from dsl import Msg, Question, Session, User
from questions import QUESTIONS
from users_a import USERS as USERS_A
from users_b import USERS as USERS_B
from users_c import USERS as USERS_C

__all__ = ["build", "main"]

OUT = Path(__file__).resolve().parent.parent / "personas.jsonl"
USERS: list[User] = [*USERS_A, *USERS_B, *USERS_C]
CATEGORIES = {"preference", "knowledge", "context", "behavior", "goal", "correction"}
SECTIONS = {
    "workContext",
    "personalContext",
    "topOfMind",
    "recentMonths",
    "earlierContext",
    "longTermBackground",
}
TAGS = {
    "retraction",
    "restatement",
    "noise",
    "tool_calls",
    "multimodal",
    "long_message",
    "upload",
    "injection",
    "chinese",
}
TRUNCATE_AT = 1000


def _text(content: str | list[dict[str, Any]]) -> str:
    if isinstance(content, str):
        return content
    return " ".join(p["text"] for p in content if p["type"] == "text")


def _default_gap(prev: Msg, msg: Msg) -> int:
    """Seconds between ``prev`` and ``msg``: model latency, or reading plus typing time."""
    if msg.role == "tool":
        return 2
    if msg.role == "ai":
        return 4 + min(len(_text(msg.content)) // 90, 20)
    read = min(len(_text(prev.content)) // 20, 180)
    typing = min(len(_text(msg.content)) // 3, 600)
    return 15 + read + typing


def _iso(dt: datetime) -> str:
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _derived_tags(sess: Session) -> set[str]:
    tags: set[str] = set()
    for m in sess.msgs:
        if m.tool_calls:
            tags.add("tool_calls")
        if isinstance(m.content, list):
            tags.add("multimodal")
        if len(_text(m.content)) > TRUNCATE_AT:
            tags.add("long_message")
        if "<uploaded_files>" in _text(m.content):
            tags.add("upload")
    if sess.retracts:
        tags.add("retraction")
    if sess.noise:
        tags.add("noise")
    return tags


def _check_session(user: User, idx: int, sess: Session, seen: dict[str, int]) -> None:
    where = f"{user.user_id} session {idx + 1}"
    assert 4 <= len(sess.msgs) <= 10, f"{where}: {len(sess.msgs)} messages"
    assert set(sess.tags) <= TAGS, f"{where}: unknown tag"
    assert set(sess.sections) <= SECTIONS, f"{where}: unknown section"
    derivable = {"tool_calls", "multimodal", "long_message", "upload", "retraction", "noise"}
    assert _derived_tags(sess) == set(sess.tags) & derivable, (
        f"{where}: tags {sorted(sess.tags)} vs content {sorted(_derived_tags(sess))}"
    )
    if sess.noise:
        assert not sess.facts and not sess.retracts and not sess.restates, where
    else:
        assert sess.facts or sess.restates, f"{where}: memorable session without facts"
    call_ids: set[str] = set()
    for m in sess.msgs:
        if m.tool_calls:
            call_ids |= {c["id"] for c in m.tool_calls}
        if m.role == "tool":
            assert m.tool_call_id in call_ids, f"{where}: tool message without call"
    for f in sess.facts:
        assert f.category in CATEGORIES, f"{where}: {f.id} category"
        assert f.id not in seen, f"{where}: duplicate gold id {f.id}"
        assert f.id.startswith(user.user_id + "."), f"{where}: {f.id} prefix"
    for rid in [*sess.retracts, *sess.restates]:
        assert rid in seen, f"{where}: {rid} is not an earlier gold id"
    assert ("retraction" in sess.tags) == bool(sess.retracts), where
    assert ("restatement" in sess.tags) == bool(sess.restates), where
    joined = " ".join(_text(m.content) for m in sess.msgs if m.role == "human")
    if "injection" in sess.tags:
        assert sess.must_not_store, f"{where}: injection without must_not_store"
    for s in sess.must_not_store:
        assert s.casefold() in joined.casefold(), f"{where}: must_not_store {s!r} not in text"
    if "upload" in sess.tags:
        for m in sess.msgs:
            for line in _text(m.content).splitlines():
                if line.startswith("/mnt/user-data/uploads/"):
                    name = line.rsplit("/", 1)[1]
                    assert name in sess.must_not_store, f"{where}: {name} not in must_not_store"
    if "long_message" in sess.tags:
        longs = [_text(m.content) for m in sess.msgs if len(_text(m.content)) > TRUNCATE_AT]
        ev = [e for f in sess.facts for e in (f.evidence or [])]
        assert ev, f"{where}: long_message session needs evidence on its key fact"
        for e in ev:
            pos = [t.find(e) for t in longs if e in t]
            assert pos and min(pos) > TRUNCATE_AT, f"{where}: evidence {e!r} at {pos}"
    for f in sess.facts:
        for e in f.evidence or []:
            assert e in joined, f"{where}: evidence {e!r} not in human text"
    for f in sess.facts:
        seen[f.id] = idx


def _session_json(user: User, idx: int, sess: Session, not_before: datetime) -> dict[str, Any]:
    tz = ZoneInfo(user.tz)
    start = datetime.strptime(sess.start, "%Y-%m-%d %H:%M").replace(tzinfo=tz)
    assert start >= not_before, f"{user.user_id} session {idx + 1} overlaps the previous one"
    messages: list[dict[str, Any]] = []
    t = start
    prev: Msg | None = None
    for m in sess.msgs:
        if prev is not None:
            t += timedelta(seconds=m.gap if m.gap is not None else _default_gap(prev, m))
        out: dict[str, Any] = {"role": m.role, "content": m.content, "timestamp": _iso(t)}
        if m.tool_calls:
            out["tool_calls"] = m.tool_calls
        if m.role == "tool":
            out["tool_call_id"] = m.tool_call_id
            if m.name:
                out["name"] = m.name
        messages.append(out)
        prev = m
    facts = []
    for f in sess.facts:
        fj: dict[str, Any] = {"id": f.id, "content": f.content, "category": f.category}
        if f.evidence:
            fj["evidence"] = f.evidence
        facts.append(fj)
    return {
        "thread_id": f"{user.user_id}-{idx + 1:02d}",
        "started_at": _iso(start),
        "messages": messages,
        "labels": {
            "facts": facts,
            "retracts": sess.retracts,
            "sections": sess.sections,
            "noise": sess.noise,
            "must_not_store": sess.must_not_store,
            "tags": sess.tags,
        },
    }


def _question_json(user: User, q: Question, sessions: list[dict[str, Any]]) -> dict[str, Any]:
    where = f"{user.user_id} question {q.id}"
    assert q.id.startswith(user.user_id + ".q."), f"{where}: id prefix"
    assert q.kind in {"answerable", "abstain", "adversarial"}, f"{where}: kind"
    assert (q.answer is not None) == (q.kind == "answerable"), f"{where}: answer vs kind"
    asked = (q.after or len(sessions)) - 1
    known = {f["id"] for s in sessions[: asked + 1] for f in s["labels"]["facts"]}
    retracted = {r for s in sessions[: asked + 1] for r in s["labels"]["retracts"]}
    for fid in q.facts:
        assert fid in known and fid not in retracted, f"{where}: {fid} is not active then"
    turns = []
    for number, snippet in q.turns:
        messages = sessions[number - 1]["messages"]
        found = [k for k, m in enumerate(messages) if snippet in _text(m["content"])]
        assert len(found) == 1, f"{where}: turn {snippet!r} found {len(found)} times"
        turns.append({"session": sessions[number - 1]["thread_id"], "message": found[0]})
    out: dict[str, Any] = {"id": q.id, "question": q.question}
    if q.answer is not None:
        out["answer"] = q.answer
    out |= {"category": q.category, "kind": q.kind, "after_session": sessions[asked]["thread_id"]}
    evidence: dict[str, Any] = {}
    if q.facts:
        evidence["facts"] = q.facts
    if turns:
        evidence["turns"] = turns
    if evidence:
        out["evidence"] = evidence
    if q.wrong is not None:
        out["wrong_answer"] = q.wrong
    return out


def build() -> str:
    """Validate the sources and return the JSONL text."""
    lines = []
    ids = [u.user_id for u in USERS]
    assert len(ids) == len(set(ids)), "duplicate user ids"
    assert set(QUESTIONS) == set(ids), "questions for unknown users, or users without questions"
    texts = [q.question for qs in QUESTIONS.values() for q in qs]
    assert len(texts) == len(set(texts)), "question texts repeat (the simulated model tells "
    "questions apart by their text)"
    for user in USERS:
        seen: dict[str, int] = {}
        sessions = []
        last = datetime(2000, 1, 1, tzinfo=UTC)
        for idx, sess in enumerate(user.sessions):
            _check_session(user, idx, sess, seen)
            sj = _session_json(user, idx, sess, last)
            last = datetime.fromisoformat(sj["messages"][-1]["timestamp"])
            sessions.append(sj)
        all_facts = [f.content.casefold() for s in user.sessions for f in s.facts]
        for s in user.sessions:
            for bad in s.must_not_store:
                assert not any(bad.casefold() in c for c in all_facts), f"{user.user_id}: {bad}"
        owner = {
            "user_id": user.user_id,
            "persona": user.persona,
            "language": user.language,
            "sessions": sessions,
            "questions": [_question_json(user, q, sessions) for q in QUESTIONS[user.user_id]],
        }
        assert len(owner["questions"]) >= 4, f"{user.user_id}: fewer than 4 questions"
        lines.append(json.dumps(owner, ensure_ascii=False))
    return "\n".join(lines) + "\n"


def _report() -> None:
    sessions = [s for u in USERS for s in u.sessions]
    facts = Counter(f.category for s in sessions for f in s.facts)
    tags = Counter(t for s in sessions for t in s.tags)
    langs = Counter(u.language for u in USERS)
    months = {u.user_id: (u.sessions[0].start[:10], u.sessions[-1].start[:10]) for u in USERS}
    print(f"users: {len(USERS)}  languages: {dict(langs)}")
    print(f"sessions: {len(sessions)}  messages: {sum(len(s.msgs) for s in sessions)}")
    print(f"facts: {sum(facts.values())}  by category: {dict(sorted(facts.items()))}")
    print(f"retracted ids: {sum(len(s.retracts) for s in sessions)}")
    print(f"sessions per tag: {dict(sorted(tags.items()))}")
    questions = [q for qs in QUESTIONS.values() for q in qs]
    by_category = Counter(q.category for q in questions)
    print(f"questions: {len(questions)}  by category: {dict(sorted(by_category.items()))}")
    for uid, (a, b) in months.items():
        print(f"  {uid}: {a} .. {b}")


def main(argv: list[str]) -> int:
    """Write or check the JSONL."""
    text = build()
    if "--check" in argv:
        if OUT.read_text(encoding="utf-8") != text:
            print(f"{OUT} is out of date; run this script without --check", file=sys.stderr)
            return 1
        print(f"{OUT} is up to date")
        return 0
    OUT.write_text(text, encoding="utf-8")
    _report()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
