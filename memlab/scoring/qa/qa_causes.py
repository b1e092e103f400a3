"""Why an answer from memory is wrong: the fate of its evidence in the replay.

A question asked right after session ``i`` under the ``memory`` condition got the lane's
memory then (the replay's snapshot ``i``) through the lane's injection path. Each of its
evidence facts (gold fact ids) has a *fate* at that point:

- the snapshot holds it (a stored fact covers it, as the run's matcher decides):
  ``injected`` when a fact that reached the answer prompt covers it, else ``not_injected``
  (the budget or the policy left it out);
- the snapshot does not hold it: the last thing that happened to it in the replay's operation
  records (:func:`memlab.scoring.operations.gold_losses`): ``evicted`` by the cap,
  ``below_threshold`` (proposed with too little confidence; for a tiered memory, a key point
  rated at or below the importance threshold, its detail saying the values:
  ``below_threshold (importance 0.5 ≤ 0.7)``), ``duplicate`` (skipped as a
  duplicate), ``removed`` (a wrong removal, or forgotten: a memory that states it decayed,
  was merged or compressed away, as the replay's ``forgetting`` records say), or
  ``never_proposed`` (never stored: not proposed, or proposed in a reply that failed to parse).

The question's fate is the earliest stage of the pipeline at which one of its evidence facts
was lost (the order of :data:`FATES`), ``injected`` when all of them reached the prompt, and
``no_evidence`` when it has no evidence facts.

The *cause* of a wrong answer is its question's fate, except that ``injected`` splits by the
answer to the same question from the gold memory (the labelled facts, under the same judge):
``answered_wrong`` when that answer was right (the lane's memory held the evidence and still
misled: a stale value beside it, noise), ``wrong_with_gold_memory`` when it was wrong too (the
answerer fails even with a perfect memory). Without a graded ``gold_memory`` answer (not asked,
or left without a verdict) it is ``answered_wrong``.

An answer nothing graded (:data:`~memlab.scoring.qa.qa_verdicts.UNGRADED_STATUSES`: the judge's
reply named no single verdict, or the answer call failed) is counted wrong but was never found
wrong: its cause is ``no_verdict``, whatever its question's fate.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from memlab.datasets.models import Owner
from memlab.datasets.questions import Question
from memlab.scoring.operations import gold_losses, lost_golds
from memlab.scoring.qa.qa_verdicts import UNGRADED_STATUSES

__all__ = [
    "CAUSES",
    "CAUSE_TITLES",
    "FATES",
    "cause_of",
    "evidence_fates",
    "fate_key",
    "graded_right",
]

Covers = Callable[[str, str], bool]

FATES: tuple[str, ...] = (
    "never_proposed",
    "below_threshold",
    "duplicate",
    "evicted",
    "removed",
    "not_injected",
    "injected",
    "no_evidence",
)
"""An evidence fact's fates in pipeline order (the earliest loss names a question's fate)."""

CAUSES: tuple[str, ...] = (
    *FATES[: FATES.index("injected")],
    "answered_wrong",
    "wrong_with_gold_memory",
    "no_evidence",
    "no_verdict",
)
"""Every cause of a wrong answer from memory, in the order tables and charts list them (an
answer counted wrong without a verdict included: each counted wrong answer has one cause)."""

CAUSE_TITLES: dict[str, str] = {
    "never_proposed": "gold fact never proposed",
    "below_threshold": "proposed below the threshold",
    "duplicate": "dropped as a duplicate",
    "evicted": "evicted by the cap",
    "removed": "removed",
    "not_injected": "held but not injected (budget or policy)",
    "answered_wrong": "injected but answered wrong",
    "wrong_with_gold_memory": "injected, wrong from the gold memory too",
    "no_evidence": "no labelled evidence",
    "no_verdict": "no verdict (unreadable or no answer)",
}

_LOSS_FATES = {
    "never": "never_proposed",
    "threshold": "below_threshold",
    "duplicate": "duplicate",
    "cap": "evicted",
    "removed": "removed",
}


def evidence_fates(
    owner: Owner,
    record: Mapping[str, Any],
    asked: Sequence[tuple[Question, int, Sequence[str]]],
    covers: Covers,
) -> list[tuple[str, dict[str, str]]]:
    """The fate of each asked question's evidence (see the module docstring).

    Args:
        owner: The owner the replay belongs to.
        record: Its replay record (``calls``, ``snapshots``, ``fork``).
        asked: Per answer from memory: the question, the session it was asked after, and the
            ids of the memory facts the answer prompt received.
        covers: The run's matcher (``covers(stored, gold)``).

    Returns:
        Per answer, in order: the question's fate and each evidence fact's fate by gold id
        (a fate key, with the ratings in parentheses for a tiered key point rated below the
        threshold: :func:`fate_key` reads the key back).
    """
    snapshots: Sequence[Mapping[str, Any]] = record.get("snapshots", [])
    fork = record.get("fork")
    start = int(fork.get("at_session", 0)) if isinstance(fork, Mapping) else 0
    losses = (
        gold_losses(
            owner,
            record.get("calls", []),
            covers,
            start=start,
            start_memory=snapshots[start - 1] if 0 < start <= len(snapshots) else None,
        )
        or []
    )
    gold = owner.gold_facts()
    forgetting = [e for e in record.get("forgetting") or [] if isinstance(e, Mapping)]
    rated = _rated_below(record.get("calls", []))
    out = []
    for question, index, injected in asked:
        facts = [f for f in snapshots[index].get("facts", []) if isinstance(f, Mapping)]
        lost = dict(losses[index]) if index < len(losses) else {}
        evidence = {g: gold[g].content for g in question.evidence.facts if g in gold}
        forgotten = _forgotten(forgetting, index, facts, evidence, covers)
        for gold_id in forgotten:
            if lost.get(gold_id, "never") == "never":  # the call records do not see forgetting
                lost[gold_id] = "removed"
        below = _below_threshold(rated, index, evidence, covers)
        for gold_id, (session, note) in below.items():
            # The later of a rating and a forgetting event is the last thing that happened.
            if lost.get(gold_id, "never") == "never" or (
                gold_id in forgotten
                and session >= _forgotten_at(forgetting, index, evidence[gold_id], covers)
            ):
                lost[gold_id] = note
        detail = {
            gold_id: _fate(gold[gold_id].content, gold_id, facts, set(injected), lost, covers)
            for gold_id in question.evidence.facts
            if gold_id in gold
        }
        fate = min(map(fate_key, detail.values()), key=FATES.index) if detail else "no_evidence"
        out.append((fate, detail))
    return out


def fate_key(fate: str) -> str:
    """The fate an evidence fate names (``below_threshold (importance 0.5 ≤ 0.7)`` ->
    ``below_threshold``)."""
    return fate.split(" ", 1)[0]


_Rated = tuple[int, str, str]  # session index, key point, "importance 0.5 ≤ 0.7"


def _rated_below(calls: Sequence[Mapping[str, Any]]) -> list[_Rated]:
    """The key points a tiered memory's importance calls rated at or below the threshold,
    in call order (the ``below_threshold`` of the call records)."""
    found: list[_Rated] = []
    for call in calls:
        below = call.get("below_threshold") if isinstance(call, Mapping) else None
        if not isinstance(below, Mapping) or not isinstance(call.get("session_index"), int):
            continue
        threshold = below.get("threshold")
        for point in below.get("key_points") or []:
            if isinstance(point, Mapping) and isinstance(point.get("content"), str):
                note = f"importance {point.get('importance')} ≤ {threshold}"
                found.append((int(call["session_index"]), point["content"], note))
    return found


def _below_threshold(
    rated: Sequence[_Rated], index: int, evidence: Mapping[str, str], covers: Covers
) -> dict[str, tuple[int, str]]:
    """Evidence facts (id -> text) a key point rated below the threshold by snapshot
    ``index`` states: the last such rating's session and ``below_threshold (...)``."""
    found: dict[str, tuple[int, str]] = {}
    for session, content, note in rated:
        if session > index:
            break
        for gold_id, text in evidence.items():
            if covers(content, text):
                found[gold_id] = (session, f"below_threshold ({note})")
    return found


def _forgotten_at(
    events: Sequence[Mapping[str, Any]], index: int, text: str, covers: Covers
) -> int:
    """The session of the last forgetting event by snapshot ``index`` whose removed memories
    state ``text`` (-1 when none does)."""
    return max(
        (
            int(event["session_index"])
            for event in events
            if isinstance(event.get("session_index"), int) and event["session_index"] <= index
            for item in event.get("removed") or []
            if isinstance(item, Mapping) and covers(str(item.get("content", "")), text)
        ),
        default=-1,
    )


def _forgotten(
    events: Sequence[Mapping[str, Any]],
    index: int,
    facts: Sequence[Mapping[str, Any]],
    evidence: Mapping[str, str],
    covers: Covers,
) -> set[str]:
    """Evidence facts (id -> text) that forgetting events shown by snapshot ``index`` lost:
    a removed memory stated them and the snapshot's ``facts`` do not (forgetting regret's
    rule, :func:`memlab.scoring.operations.lost_golds`)."""
    removed = [
        str(item.get("content", ""))
        for event in events
        if isinstance(event.get("session_index"), int) and event["session_index"] <= index
        for item in event.get("removed") or []
        if isinstance(item, Mapping)
    ]
    left = [str(fact.get("content", "")) for fact in facts]
    return lost_golds(removed, left, evidence, covers)


def _fate(
    text: str,
    gold_id: str,
    facts: Sequence[Mapping[str, Any]],
    injected: set[str],
    lost: Mapping[str, str],
    covers: Covers,
) -> str:
    holders = [f for f in facts if covers(str(f.get("content", "")), text)]
    if holders:
        return "injected" if any(str(f.get("id")) in injected for f in holders) else "not_injected"
    why = lost.get(gold_id, "never")
    return why if why.startswith("below_threshold") else _LOSS_FATES.get(why, "never_proposed")


def cause_of(fate: str, gold_memory_right: bool | None, status: str = "judged") -> str:
    """The cause of a wrong answer from memory whose question's fate is ``fate`` and whose
    verdict row's status is ``status`` (:data:`~memlab.scoring.qa.qa_verdicts.VERDICT_STATUSES`),
    given whether the gold memory's answer to it was right (None: not asked or not graded)."""
    if status in UNGRADED_STATUSES:
        return "no_verdict"
    if fate != "injected":
        return fate
    return "wrong_with_gold_memory" if gold_memory_right is False else "answered_wrong"


def graded_right(status: str, correct: bool) -> bool | None:
    """Whether an answer was right as its verdict row says (``status``, ``correct``), None
    when nothing graded it: the ``gold_memory_right`` :func:`cause_of` takes."""
    return None if status in UNGRADED_STATUSES else bool(correct)
