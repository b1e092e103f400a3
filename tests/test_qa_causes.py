"""The fate of a question's evidence and the cause of a wrong answer, on hand-built replays.

The replay record is written by hand (its snapshots and, through ``gold_losses``, what the
operation records say happened to each lost fact), so every expected fate is read off the
record, not computed by the code under test.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from memlab.datasets.models import Owner
from memlab.scoring.qa import qa_causes
from memlab.scoring.qa.qa_causes import (
    CAUSE_TITLES,
    CAUSES,
    FATES,
    cause_of,
    evidence_fates,
    graded_right,
)

JOB, CAT, TEA = "Works as a nurse in Leeds", "Has a cat called Miso", "Likes green tea"


def _owner() -> Owner:
    def session(n: int, facts: list[tuple[str, str]]) -> dict[str, Any]:
        start = f"2025-01-0{n + 1}T10:00:00Z"
        return {
            "thread_id": f"t{n}",
            "started_at": start,
            "messages": [
                {"role": "human", "content": f"Session {n}.", "timestamp": start},
                {"role": "ai", "content": "Noted.", "timestamp": f"2025-01-0{n + 1}T10:00:05Z"},
            ],
            "labels": {"facts": [{"id": i, "content": c, "category": "context"} for i, c in facts]},
        }

    def ask(qid: str, after: int, facts: list[str]) -> dict[str, Any]:
        evidence: dict[str, Any] = (
            {"facts": facts} if facts else {"turns": [{"session": 0, "message": 0}]}
        )
        return {
            "id": qid,
            "question": f"Question {qid}?",
            "answer": "x",
            "category": "c",
            "kind": "answerable",
            "after_session": after,
            "evidence": evidence,
        }

    return Owner.model_validate(
        {
            "user_id": "zoe",
            "sessions": [session(0, [("job", JOB), ("cat", CAT)]), session(1, [("tea", TEA)])],
            "questions": [
                ask("q.job", 0, ["job"]),
                ask("q.cat", 0, ["cat"]),
                ask("q.both", 1, ["job", "tea"]),
                ask("q.turn", 0, []),
            ],
        }
    )


def _exact(stored: str, gold: str) -> bool:
    return stored == gold


SNAPSHOTS = [
    {"facts": [{"id": "m1", "content": JOB}]},
    {"facts": [{"id": "m1", "content": JOB}, {"id": "m2", "content": "Likes tea a lot"}]},
]


def _fates(
    losses: Sequence[Mapping[str, str]],
    asked: Sequence[tuple[str, int, Sequence[str]]],
    monkeypatch: pytest.MonkeyPatch,
    record: Mapping[str, Any] | None = None,
) -> tuple[list[tuple[str, dict[str, str]]], dict[str, Any]]:
    owner = _owner()
    seen: dict[str, Any] = {}

    def losses_of(*args: Any, **kwargs: Any) -> list[dict[str, str]]:
        seen.update(kwargs)
        return [dict(found) for found in losses]

    monkeypatch.setattr(qa_causes, "gold_losses", losses_of)
    questions = {q.id: q for q in owner.questions}
    found = evidence_fates(
        owner,
        record or {"calls": [], "snapshots": SNAPSHOTS},
        [(questions[q], index, injected) for q, index, injected in asked],
        _exact,
    )
    return found, seen


def test_a_held_fact_is_injected_or_not_by_the_ids_the_prompt_received(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    found, _ = _fates(
        [{}, {}], [("q.job", 0, ["m1"]), ("q.job", 0, ["m9"]), ("q.job", 0, [])], monkeypatch
    )
    assert found == [
        ("injected", {"job": "injected"}),
        ("not_injected", {"job": "not_injected"}),
        ("not_injected", {"job": "not_injected"}),
    ]


@pytest.mark.parametrize(
    ("loss", "fate"),
    [
        ("never", "never_proposed"),
        ("threshold", "below_threshold"),
        ("duplicate", "duplicate"),
        ("cap", "evicted"),
        ("removed", "removed"),
        ("something new", "never_proposed"),
    ],
)
def test_a_lost_fact_takes_the_fate_of_its_last_loss(
    loss: str, fate: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    found, _ = _fates([{"cat": loss}, {}], [("q.cat", 0, ["m1"])], monkeypatch)
    assert found == [(fate, {"cat": fate})]


def test_a_fact_with_no_recorded_loss_was_never_proposed(monkeypatch: pytest.MonkeyPatch) -> None:
    # A fact the losses do not name, and a session past the losses' end.
    found, _ = _fates([{}], [("q.cat", 0, []), ("q.both", 1, ["m1"])], monkeypatch)
    assert found == [
        ("never_proposed", {"cat": "never_proposed"}),
        ("never_proposed", {"job": "injected", "tea": "never_proposed"}),
    ]


def test_the_earliest_loss_of_several_evidence_facts_is_the_questions_fate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    found, _ = _fates([{}, {"tea": "cap"}], [("q.both", 1, ["m1", "m2"])], monkeypatch)
    assert found == [("evicted", {"job": "injected", "tea": "evicted"})]
    found, _ = _fates(
        [{}, {}],
        [("q.both", 1, [])],
        monkeypatch,
        record={
            "calls": [],
            "snapshots": [
                SNAPSHOTS[0],
                {"facts": [{"id": "m1", "content": JOB}, {"id": "m3", "content": TEA}]},
            ],
        },
    )
    assert found == [("not_injected", {"job": "not_injected", "tea": "not_injected"})]


def test_a_question_without_evidence_facts_has_no_evidence(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    found, _ = _fates([{}, {}], [("q.turn", 0, ["m1"])], monkeypatch)
    assert found == [("no_evidence", {})]


def test_a_fork_starts_the_losses_at_its_session_with_the_memory_before_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    record = {"calls": [], "snapshots": SNAPSHOTS, "fork": {"at_session": 1}}
    _, seen = _fates([{}, {}], [("q.job", 0, ["m1"])], monkeypatch, record=record)
    assert seen == {"start": 1, "start_memory": SNAPSHOTS[0]}
    _, seen = _fates([{}, {}], [("q.job", 0, ["m1"])], monkeypatch)
    assert seen == {"start": 0, "start_memory": None}
    beyond = {"calls": [], "snapshots": SNAPSHOTS, "fork": {"at_session": 3}}
    _, seen = _fates([{}, {}], [("q.job", 0, ["m1"])], monkeypatch, record=beyond)
    assert seen == {"start": 3, "start_memory": None}


def test_gold_losses_unavailable_means_every_lost_fact_was_never_proposed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    owner = _owner()
    monkeypatch.setattr(qa_causes, "gold_losses", lambda *a, **k: None)
    question = next(q for q in owner.questions if q.id == "q.cat")
    found = evidence_fates(
        owner, {"calls": [], "snapshots": SNAPSHOTS}, [(question, 0, [])], _exact
    )
    assert found == [("never_proposed", {"cat": "never_proposed"})]


def test_the_cause_of_a_wrong_answer() -> None:
    for fate in FATES:
        if fate != "injected":
            assert cause_of(fate, True) == cause_of(fate, None) == fate
    assert cause_of("injected", True) == "answered_wrong"
    assert cause_of("injected", None) == "answered_wrong"
    assert cause_of("injected", False) == "wrong_with_gold_memory"


def test_an_answer_nothing_graded_has_no_verdict_as_its_cause_whatever_its_fate() -> None:
    """Counted wrong but never found wrong: no cause that says why it was wrong."""
    for fate in FATES:
        for gold in (True, False, None):
            assert cause_of(fate, gold, "no_verdict") == "no_verdict"
            assert cause_of(fate, gold, "answer_error") == "no_verdict"
    # An abstention on an answerable question is wrong by rule: graded, its fate stays.
    assert cause_of("evicted", None, "abstained") == "evicted"
    assert cause_of("injected", False, "judged") == "wrong_with_gold_memory"
    # A gold-memory answer nothing graded says nothing about the gold memory.
    assert graded_right("no_verdict", False) is None
    assert graded_right("answer_error", False) is None
    assert graded_right("abstained", False) is False
    assert graded_right("judged", True) is True


def test_causes_and_their_titles_in_pipeline_order() -> None:
    assert FATES == (
        "never_proposed",
        "below_threshold",
        "duplicate",
        "evicted",
        "removed",
        "not_injected",
        "injected",
        "no_evidence",
    )
    assert CAUSES == (
        "never_proposed",
        "below_threshold",
        "duplicate",
        "evicted",
        "removed",
        "not_injected",
        "answered_wrong",
        "wrong_with_gold_memory",
        "no_evidence",
        "no_verdict",
    )
    assert list(CAUSE_TITLES) == list(CAUSES)
    assert CAUSE_TITLES["no_verdict"].startswith("no verdict")
    assert CAUSE_TITLES["answered_wrong"] == "injected but answered wrong"
    assert len(set(CAUSE_TITLES.values())) == len(CAUSES)


def test_the_replay_losses_are_read_from_the_owner_its_calls_and_the_matcher(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    owner = _owner()
    calls = [{"session_index": 0, "marker": "the record's calls"}]
    passed: list[tuple[Any, ...]] = []

    def losses_of(*args: Any, **kwargs: Any) -> list[dict[str, str]]:
        passed.append(args)
        return [{}, {}]

    monkeypatch.setattr(qa_causes, "gold_losses", losses_of)
    question = next(q for q in owner.questions if q.id == "q.job")
    evidence_fates(owner, {"calls": calls, "snapshots": SNAPSHOTS}, [(question, 0, [])], _exact)
    evidence_fates(owner, {"snapshots": SNAPSHOTS}, [(question, 0, [])], _exact)
    assert passed[0][0] is owner and passed[0][1] == calls and passed[0][2] is _exact
    assert passed[1][1] == []  # a record without calls: no operations


def test_missing_parts_of_a_record_are_empty(monkeypatch: pytest.MonkeyPatch) -> None:
    # A fork at the last snapshot starts from it; a fork without a session starts at 0.
    last = {"calls": [], "snapshots": SNAPSHOTS, "fork": {"at_session": 2}}
    _, seen = _fates([{}, {}], [], monkeypatch, record=last)
    assert seen == {"start": 2, "start_memory": SNAPSHOTS[1]}
    _, seen = _fates([{}, {}], [], monkeypatch, record={"calls": [], "fork": {}})
    assert seen == {"start": 0, "start_memory": None}
    # No snapshots: nothing to start from, whatever the fork says.
    _, seen = _fates([{}, {}], [], monkeypatch, record={"fork": {"at_session": 1}})
    assert seen == {"start": 1, "start_memory": None}
    # A snapshot without facts, and a fact without text, hold nothing.
    bare = {"calls": [], "snapshots": [{}, {"facts": [{"id": "m1"}, "not a fact"]}]}
    found, _ = _fates(
        [{}, {}], [("q.job", 0, ["m1"]), ("q.job", 1, ["m1"])], monkeypatch, record=bare
    )
    assert found == [("never_proposed", {"job": "never_proposed"})] * 2


def test_a_fact_a_forgetting_event_removed_was_removed_not_never_proposed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A tiered memory stored the job in session 0 and forgot it (decay) before snapshot 1;
    # its call records carry no per-fact bookkeeping, so the operation walk knows no loss.
    record = {
        "calls": [],
        "snapshots": [
            {"facts": [{"id": "m1", "content": JOB}]},
            {"facts": [{"id": "m2", "content": TEA}]},
        ],
        "forgetting": [
            {"kind": "decayed", "session_index": 1, "removed": [{"id": "m1", "content": JOB}]},
            # An event shown only by a later snapshot, and one without a session, change
            # nothing at snapshot 1.
            {"kind": "decayed", "session_index": 2, "removed": [{"id": "m9", "content": CAT}]},
            {"kind": "merged", "removed": [{"id": "m8", "content": CAT}]},
        ],
    }
    found, _ = _fates(
        [{}, {}],
        [("q.job", 0, ["m1"]), ("q.both", 1, ["m2"]), ("q.cat", 1, [])],
        monkeypatch,
        record=record,
    )
    assert found == [
        ("injected", {"job": "injected"}),  # before the event: held and injected
        ("removed", {"job": "removed", "tea": "injected"}),
        ("never_proposed", {"cat": "never_proposed"}),
    ]
    # A loss the call records name is kept (the walk saw it first).
    found, _ = _fates([{}, {"job": "cap"}], [("q.both", 1, ["m2"])], monkeypatch, record=record)
    assert found == [("evicted", {"job": "evicted", "tea": "injected"})]


def _rated(session: int, *points: tuple[str, float]) -> dict[str, Any]:
    """A tiered importance call's record listing the key points rated at or below 0.7."""
    return {
        "call": "importance",
        "session_index": session,
        "below_threshold": {
            "threshold": 0.7,
            "key_points": [{"content": c, "importance": r} for c, r in points],
        },
    }


def test_a_tiered_key_point_rated_below_the_threshold_says_its_rating(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The cat was rated 0.5 in session 0; the tea exactly 0.7 in session 1; the job was
    # stored, then forgotten in session 1 and rated 0.7 again only in session 1's fold.
    record = {
        "calls": [_rated(0, (CAT, 0.5)), _rated(1, (TEA, 0.7))],
        "snapshots": [{"facts": []}, {"facts": []}],
        "forgetting": [],
    }
    found, _ = _fates(
        [{}, {}], [("q.cat", 0, []), ("q.cat", 1, []), ("q.both", 1, [])], monkeypatch, record
    )
    assert found == [
        ("below_threshold", {"cat": "below_threshold (importance 0.5 ≤ 0.7)"}),
        ("below_threshold", {"cat": "below_threshold (importance 0.5 ≤ 0.7)"}),
        (
            "never_proposed",
            {"job": "never_proposed", "tea": "below_threshold (importance 0.7 ≤ 0.7)"},
        ),
    ]
    # A rating after the snapshot changes nothing before it.
    found, _ = _fates([{}, {}], [("q.job", 0, [])], monkeypatch, dict(record, calls=[
        _rated(1, (JOB, 0.5))]))  # fmt: skip
    assert found == [("never_proposed", {"job": "never_proposed"})]


def test_the_later_of_a_low_rating_and_a_forgetting_event_is_the_fate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    forgot = {"kind": "decayed", "session_index": 1, "removed": [{"id": "m1", "content": JOB}]}
    snapshots = [{"facts": [{"id": "m1", "content": JOB}]}, {"facts": []}]
    # Rated low in session 0 (another mention), stored anyway later, forgotten in session 1.
    before = {"calls": [_rated(0, (JOB, 0.5))], "snapshots": snapshots, "forgetting": [forgot]}
    found, _ = _fates([{}, {}], [("q.job", 1, [])], monkeypatch, before)
    assert found == [("removed", {"job": "removed"})]
    # Forgotten at the start of session 1, then mentioned again and rated low: below.
    after = dict(before, calls=[_rated(1, (JOB, 0.6))])
    found, _ = _fates([{}, {}], [("q.job", 1, [])], monkeypatch, after)
    assert found == [("below_threshold", {"job": "below_threshold (importance 0.6 ≤ 0.7)"})]


def test_the_ratings_below_the_threshold_are_counted_over_wrong_answers() -> None:
    import pandas as pd

    from memlab.scoring.qa.qa_metrics import threshold_ratings

    low, edge = "below_threshold (importance 0.5 ≤ 0.7)", "below_threshold (importance 0.7 ≤ 0.7)"

    def row(qid: str, right: bool, fate: str, fates: dict[str, str]) -> dict[str, Any]:
        return {
            "lane_id": "tiered", "sample": 0, "user_id": "zoe", "session_index": 0,
            "question_id": qid, "category": "c", "kind": "answerable", "condition": "memory",
            "abstained": False, "verdicts": {"strict": {"answer": right}}, "fate": fate,
            "evidence_fates": fates,
        }  # fmt: skip

    answers = pd.DataFrame(
        [
            row("q1", False, "below_threshold", {"a": low, "b": "injected"}),
            row("q2", False, "below_threshold", {"c": low, "d": edge}),
            row("q3", True, "below_threshold", {"e": low}),  # right: no cause to explain
            row("q4", False, "never_proposed", {"f": "never_proposed", "g": low}),
            row("q5", False, "below_threshold", {"h": "below_threshold"}),  # no values kept
        ]
    )
    table = threshold_ratings(answers, "strict")
    assert {(r, n) for r, n in table[["rating", "evidence"]].to_numpy()} == {
        ("importance 0.5 ≤ 0.7", 2),
        ("importance 0.7 ≤ 0.7", 1),
        ("proposed below the threshold", 1),
    }
    assert set(table["lane_id"]) == {"tiered"}


def test_only_the_forgetting_of_that_fact_by_that_snapshot_orders_it_against_a_rating(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The job is forgotten in session 0 and rated low in session 0 (a tie: the rating is the
    # last thing that happened). An event forgetting another fact in session 1, and one
    # forgetting the job again after the snapshot asked about, do not move the job's
    # forgetting later; a call without ratings before the rating hides nothing.
    forgot = {"kind": "decayed", "session_index": 0, "removed": [{"id": "m1", "content": JOB}]}
    other = {"kind": "decayed", "session_index": 1, "removed": [{"id": "m2", "content": CAT}]}
    again = {"kind": "merged", "session_index": 1, "removed": [{"id": "m3", "content": JOB}]}
    record = {
        "calls": [{"call": "extract", "session_index": 0}, _rated(0, (JOB, 0.5))],
        "snapshots": [{"facts": []}, {"facts": []}],
        "forgetting": [forgot, other],
    }
    low = ("below_threshold", {"job": "below_threshold (importance 0.5 ≤ 0.7)"})
    found, _ = _fates([{}, {}], [("q.job", 0, []), ("q.job", 1, [])], monkeypatch, record)
    assert found == [low, low]
    found, _ = _fates(
        [{}, {}], [("q.job", 0, [])], monkeypatch, dict(record, forgetting=[forgot, again])
    )
    assert found == [low]
