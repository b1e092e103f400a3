"""Operation scoring on hand-written call records: every row pinned whole.

Which stored text states which gold fact is plain text equality ignoring case (``covers``
below), and each expected row is counted by hand from the story in its test, not by the code
under test. Sessions start a day apart at ``T0``; each ends two seconds after it starts.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from builders import iso, one_turn

from memlab.datasets.models import Owner
from memlab.scoring.operations import (
    OPERATION_COUNTS,
    gold_losses,
    lost_golds,
    score_operations,
)

T0 = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)
DAY = timedelta(days=1)
DAY_AND_ANSWER = (86400 + 2) / 86400  # in days: a session starts a day later, answered in 2 s

LEEDS, DOG, CHESS, NURSE = "Lives in Leeds", "Has a dog", "Plays chess", "Works as a nurse"
VAN = "Drives a van"


def covers(stored: str, gold: str) -> bool:
    return stored.casefold() == gold.casefold()


def owner(*labels: dict[str, Any]) -> Owner:
    """One session per ``labels`` (``facts`` as ``(id, text)`` pairs, ``retracts`` as ids)."""
    sessions = []
    for index, session in enumerate(labels):
        pairs = session.get("facts", [])
        facts = [{"id": g, "content": t, "category": "context"} for g, t in pairs]
        extra = {"retracts": session["retracts"]} if "retracts" in session else {}
        sessions.append(one_turn(f"t{index}", T0 + index * DAY, f"s{index}", facts=facts, **extra))
    return Owner.model_validate({"user_id": "u", "sessions": sessions})


def stored(*facts: tuple[str, str]) -> list[dict[str, str]]:
    return [{"id": fid, "content": content} for fid, content in facts]


def call(index: int, at: timedelta | None = None, **applied: Any) -> dict[str, Any]:
    """A saved call of session ``index`` with the merge bookkeeping ``applied``, run ``at``
    after ``T0`` (no virtual time when ``None``)."""
    record: dict[str, Any] = {"session_index": index, "saved": True, "applied": applied}
    if at is not None:
        record["virtual_time"] = iso(T0 + at)
    return record


def row(**counts: Any) -> dict[str, Any]:
    """A session row: every operation count 0 but ``counts``."""
    return {**dict.fromkeys(OPERATION_COUNTS, 0), "gold_regret": 0, **counts}


def score(person: Owner, calls: Sequence[dict[str, Any]], **options: Any) -> Any:
    return score_operations(person, calls, covers, **options)


def test_adds_are_correct_redundant_spurious_or_neither() -> None:
    person = owner(
        {"facts": [("g1", LEEDS), ("g2", DOG), ("g3", CHESS)]},
        {"facts": [("g4", NURSE)]},
    )
    calls = [
        # correct g1, redundant (g1 again in the session), spurious, correct g2
        call(
            0,
            added=stored(("f1", LEEDS), ("f2", "lives in leeds"), ("f3", "Likes tea"), ("f4", DOG)),
        ),
        # g3 was revealed earlier and never stored: an add only; g1 is held: redundant;
        # g4 is expected here: correct
        call(1, added=stored(("f5", CHESS), ("f6", "LIVES IN LEEDS"), ("f7", NURSE))),
    ]
    assert score(person, calls) == [
        row(op_adds=4, op_adds_expected=3, op_adds_correct=2, op_adds_redundant=1,
            op_adds_spurious=1, op_adds_missed=1),
        row(op_adds=3, op_adds_expected=1, op_adds_correct=1, op_adds_redundant=1),
    ]  # fmt: skip


def test_removals_and_the_stale_episodes_they_end() -> None:
    person = owner(
        {"facts": [("g1", LEEDS), ("g2", DOG), ("g3", CHESS), ("g5", VAN)]},
        {"facts": [("g4", NURSE)], "retracts": ["g1", "g2", "g5"]},
        {},
    )
    calls = [
        call(
            0,
            added=stored(
                ("f1", LEEDS),
                ("f2", DOG),
                ("f3", CHESS),
                ("f4", "plays chess"),
                ("f6", "Likes tea"),
                ("f9", VAN),
            ),
        ),
        # the session's first call adds g4 (correct), its second removes g1 and g5 (correct),
        # one copy of g3 while another holds it, and a fact that states no gold
        call(1, DAY + timedelta(hours=6), added=stored(("f7", NURSE))),
        call(
            1,
            DAY + timedelta(hours=12),
            removed=stored(("f1", LEEDS), ("f3", CHESS), ("f6", "Likes tea"), ("f9", VAN)),
        ),
        # g2 removed a session late (its removal counts only as a removal); the last copy of
        # the active g3 removed (wrong); an add of the retracted g1 (spurious)
        call(
            2,
            2 * DAY + timedelta(hours=18),
            removed=stored(("f2", DOG), ("f4", CHESS)),
            added=stored(("f8", LEEDS)),
        ),
    ]
    episodes = [
        {"gold": "g1", "sessions": 0, "days": 0.5, "censored": False},
        {"gold": "g2", "sessions": 1, "days": 1.75, "censored": False},
        {"gold": "g5", "sessions": 0, "days": 0.5, "censored": False},
    ]
    assert score(person, calls) == [
        row(op_adds=6, op_adds_expected=4, op_adds_correct=4, op_adds_redundant=1,
            op_adds_spurious=1),
        row(op_adds=1, op_adds_expected=1, op_adds_correct=1, op_removals=4,
            op_removals_expected=3, op_removals_correct=2, op_removals_missed=1, stale_facts=3,
            stale_sessions=1, stale_days=2.75, stale_detail=episodes, stale_removed_0=2,
            stale_removed_1=1, stale_at_risk_0=3, stale_at_risk_1=1),
        row(op_adds=1, op_adds_spurious=1, op_removals=2, op_removals_wrong=1),
    ]  # fmt: skip
    assert gold_losses(person, calls, covers) == [{}, {}, {"g3": "removed"}]


def test_a_stale_fact_never_removed_is_censored_at_the_last_answer() -> None:
    person = owner(
        {"facts": [("g1", LEEDS), ("g2", DOG)]},
        {"retracts": ["g1", "g2"]},
        {},
    )
    calls = [
        call(0, added=stored(("f1", LEEDS), ("f2", DOG))),
        call(1, removed=stored(("f2", DOG))),  # no virtual time: the removal is at day 0
    ]
    episodes = [
        {"gold": "g1", "sessions": 2, "days": DAY_AND_ANSWER, "censored": True},
        {"gold": "g2", "sessions": 0, "days": 0.0, "censored": False},
    ]
    rows = score(person, calls)
    assert rows == [
        row(op_adds=2, op_adds_expected=2, op_adds_correct=2),
        row(op_removals=1, op_removals_expected=2, op_removals_correct=1, op_removals_missed=1,
            stale_facts=2, stale_sessions=2, stale_days=DAY_AND_ANSWER, stale_detail=episodes,
            stale_removed_0=1, stale_at_risk_0=2, stale_at_risk_1=1),
        row(),
    ]  # fmt: skip


def test_a_removal_stamped_before_its_session_lasted_no_time() -> None:
    person = owner({"facts": [("g1", LEEDS)]}, {"retracts": ["g1"]})
    calls = [
        call(0, added=stored(("f1", LEEDS))),
        call(1, DAY - timedelta(hours=1), removed=stored(("f1", LEEDS))),
    ]
    rows = score(person, calls)
    assert rows is not None
    assert rows[1]["stale_detail"] == [
        {"gold": "g1", "sessions": 0, "days": 0.0, "censored": False}
    ]


def test_losses_to_the_cap_the_threshold_and_duplicates() -> None:
    person = owner({"facts": [("g1", LEEDS), ("g2", DOG), ("g3", CHESS), ("g4", NURSE)]}, {})
    proposals = [{"content": CHESS, "confidence": 0.5}]
    calls = [
        # g2 added and evicted in one call (still a correct add); g3 skipped as a duplicate,
        # then below the threshold (the later reason wins); g4 only a duplicate (no regret)
        call(
            0,
            added=stored(("f1", LEEDS), ("f2", DOG)),
            evicted=stored(("f2", DOG)),
            skipped_duplicate=[{"content": CHESS}, {"content": "works as a nurse"}],
            skipped_below_threshold=proposals,
        ),
        # g2 stored again, then its fact rewritten by a near-duplicate merge into g4's text:
        # g2 lost, not to the cap any more, g4 held; a merge that kept the stored text changes
        # nothing
        call(
            1,
            added=stored(("f5", DOG)),
            merged=[
                {"keptId": "f5", "keptContent": NURSE, "replaced": True},
                {"keptId": "f1", "keptContent": "Lives in York", "replaced": False},
            ],
        ),
    ]
    assert score(person, calls) == [
        row(op_adds=2, op_adds_expected=4, op_adds_correct=2, op_adds_missed=2, gold_evicted=1,
            gold_below_threshold=1, gold_regret=2),
        row(op_adds=1, gold_regret=1),
    ]  # fmt: skip
    assert gold_losses(person, calls, covers) == [
        {"g2": "cap", "g3": "threshold", "g4": "duplicate"},
        {"g2": "never", "g3": "threshold"},
    ]


def test_eviction_after_a_duplicate_skip_is_the_cap() -> None:
    person = owner({"facts": [("g1", LEEDS)]})
    calls = [
        call(
            0,
            added=stored(("f1", LEEDS)),
            evicted=stored(("f1", LEEDS)),
            skipped_duplicate=[{"content": LEEDS}],
        ),
    ]
    assert gold_losses(person, calls, covers) == [{"g1": "cap"}]
    assert score(person, calls) == [
        row(op_adds=1, op_adds_expected=1, op_adds_correct=1, gold_evicted=1, gold_regret=1)
    ]


def test_every_gold_fact_proposed_below_the_threshold_counts() -> None:
    person = owner({"facts": [("g1", LEEDS), ("g2", DOG)]})
    below = ["junk", {"content": LEEDS, "confidence": 0.5}, {"content": DOG, "confidence": 0.1}]
    calls = [call(0, skipped_below_threshold=below, skipped_duplicate=None)]
    assert score(person, calls) == [
        row(op_adds_expected=2, op_adds_missed=2, gold_below_threshold=2, gold_regret=2)
    ]
    assert gold_losses(person, calls, covers) == [{"g1": "threshold", "g2": "threshold"}]


def test_a_fork_scores_from_its_session_on_its_start_memory() -> None:
    person = owner(
        {"facts": [("g1", LEEDS), ("g5", VAN)], "retracts": []},
        {"facts": [("g2", DOG)]},
        {"facts": [("g3", CHESS)]},
    )
    calls = [
        call(0, added=stored(("x", DOG))),  # before the fork: never replayed
        call(1, added=stored(("f1", "lives in leeds"))),  # held by the start memory
        call(2, added=stored(("f2", CHESS))),
    ]
    start_memory = {
        "facts": [{"id": "m1", "content": LEEDS}, "not a fact", {"id": "m2", "content": VAN}]
    }
    options = {"start": 1, "start_memory": start_memory}
    assert score(person, calls, **options) == [
        {},
        row(op_adds=1, op_adds_expected=1, op_adds_redundant=1, op_adds_missed=1),
        row(op_adds=1, op_adds_expected=1, op_adds_correct=1),
    ]  # fmt: skip
    assert gold_losses(person, calls, covers, **options) == [{}, {"g2": "never"}, {"g2": "never"}]


def test_labels_revealed_after_the_facts_that_state_them() -> None:
    person = owner(
        {},
        {"facts": [("g1", DOG), ("g2", LEEDS)]},
        {"facts": [("g3", CHESS)], "retracts": ["g1"]},
    )
    calls = [
        # both stored before their labels; a fact never stored is "removed" too
        call(0, added=stored(("f1", DOG), ("f2", CHESS)), removed=stored(("x", LEEDS))),
        # f2 goes before g3 is revealed: g3 is not held when its session starts
        call(1, removed=stored(("f2", CHESS))),
        # f1 states g1 although it was stored before g1 was revealed: a correct removal
        call(2, 2 * DAY + timedelta(hours=6), removed=stored(("f1", DOG))),
    ]
    episodes = [{"gold": "g1", "sessions": 0, "days": 0.25, "censored": False}]
    assert score(person, calls) == [
        row(op_adds=2, op_adds_spurious=2, op_removals=1),
        row(op_adds_expected=1, op_adds_missed=1, op_removals=1),
        row(op_adds_expected=1, op_adds_missed=1, op_removals=1, op_removals_expected=1,
            op_removals_correct=1, stale_facts=1, stale_days=0.25, stale_detail=episodes,
            stale_removed_0=1, stale_at_risk_0=1),
    ]  # fmt: skip


def test_a_fact_without_text_states_nothing_whatever_the_matcher() -> None:
    person = owner({"facts": [("g1", LEEDS)]})
    calls = [
        call(
            0,
            added=[{"id": "f1", "content": None}],
            skipped_below_threshold=[{"content": None}],
        )
    ]

    def any_text(stored: str, gold: str) -> bool:  # every text states every gold fact
        return bool(stored)

    assert score_operations(person, calls, any_text) == [
        row(op_adds=1, op_adds_expected=1, op_adds_spurious=1, op_adds_missed=1)
    ]
    assert gold_losses(person, calls, any_text) == [{"g1": "never"}]


def test_records_the_scoring_cannot_use_are_skipped() -> None:
    person = owner({"facts": [("g1", LEEDS)]})
    calls: list[dict[str, Any]] = [
        {"session_index": 0, "saved": False},  # a failed call
        {"session_index": 0, "applied": None},
        {"applied": {"added": stored(("x", LEEDS))}},  # no session: never replayed
        call(
            0,
            added=["junk", {"id": "f1", "content": 5}],
            removed=["junk"],
            evicted=["junk", {"id": "never-stored", "content": LEEDS}],
            merged=["junk", {"keptId": "f1", "keptContent": None, "replaced": False}],
            skipped_below_threshold="junk",
            skipped_duplicate=["junk", {"content": None}],
        ),
    ]
    assert score(person, calls) == [
        row(op_adds=1, op_adds_expected=1, op_adds_spurious=1, op_adds_missed=1)
    ]
    assert gold_losses(person, calls, covers) == [{"g1": "never"}]


def test_a_saved_call_without_bookkeeping_makes_both_results_unavailable() -> None:
    person = owner({"facts": [("g1", LEEDS)]})
    calls = [call(0, added=stored(("f1", LEEDS))), {"session_index": 0, "saved": True}]
    assert score(person, calls) is None
    assert gold_losses(person, calls, covers) is None


def test_lost_golds_states_and_holds_by_the_matcher() -> None:
    golds = {"g1": LEEDS, "g2": DOG, "g3": CHESS}
    removed = ["lives in leeds", "HAS A DOG", "Likes tea", "Plays chess"]
    assert lost_golds(removed, ["plays chess", "Has a cat"], golds, covers) == {"g1", "g2"}
    assert lost_golds([], [LEEDS], golds, covers) == set()


def test_each_lost_gold_fact_counts_and_only_lost_active_ones() -> None:
    jazz = "Likes jazz"
    person = owner(
        {"facts": [("g1", LEEDS), ("g2", DOG), ("g3", CHESS), ("g4", NURSE), ("g5", VAN),
                   ("g6", jazz)]},
        {"retracts": ["g5"]},
    )  # fmt: skip
    calls = [
        call(0, added=stored(("f1", LEEDS), ("f2", DOG), ("f3", CHESS), ("f4", NURSE),
                             ("f5", VAN), ("f8", jazz), ("f6", "lives in leeds"),
                             ("f7", "LIVES IN LEEDS"))),
        # two wrong removals; evictions of two active gold facts (counted), of a copy of g1
        # that two more hold and of the retracted g5 (neither counted); g1 proposed below the
        # threshold while held (no loss)
        call(1, DAY + timedelta(hours=12), removed=stored(("f3", CHESS), ("f4", NURSE)),
             evicted=stored(("f1", LEEDS), ("f2", DOG), ("f5", VAN), ("f8", jazz)),
             skipped_below_threshold=[{"content": "lives in leeds", "confidence": 0.1}]),
    ]  # fmt: skip
    episodes = [{"gold": "g5", "sessions": 0, "days": 0.5, "censored": False}]
    assert score(person, calls) == [
        row(op_adds=8, op_adds_expected=6, op_adds_correct=6, op_adds_redundant=2),
        row(op_removals=2, op_removals_wrong=2, op_removals_expected=1, op_removals_missed=1,
            stale_facts=1, gold_evicted=2, gold_regret=2, stale_detail=episodes,
            stale_days=0.5, stale_removed_0=1, stale_at_risk_0=1),
    ]  # fmt: skip
    assert gold_losses(person, calls, covers) == [
        {},
        {"g2": "cap", "g3": "removed", "g4": "removed", "g6": "cap"},
    ]


def test_a_call_without_a_session_is_never_replayed() -> None:
    person = owner({"facts": [("g1", LEEDS)]}, {})
    calls = [{"saved": True, "applied": {"added": stored(("x", LEEDS))}}]
    assert score(person, calls) == [row(op_adds_expected=1, op_adds_missed=1), row()]
