"""Forgetting events by kind and forgetting regret, on hand-built forgetting records.

The expected counts are counted by hand from the story below (which memory states which gold
fact is plain text equality, ignoring case), not by the code under test.

Owner ``u``, four sessions:

- session 0 reveals g1 "Lives in Leeds", g2 "Has a dog", g3 "Plays chess";
- session 1 reveals g4 "Works as a nurse"; its events: a merge of a second "Has a dog" into
  the first (kept: nothing lost), then a decay removing "Plays chess", "Has a dog" and the
  non-gold "Likes tea" (g3 and g2 lost: 2);
- session 2 retracts g2; its events: a compression of "Lives in Leeds" and "Works as a nurse"
  into a summary that states neither (g4 lost: 1; g1 is not, a second "lives in leeds" is
  still stored and removed only by the next event), a decay of that second copy (g1 lost: 1),
  a decay of a third "Has a dog" (g2 is retracted: not a loss);
- session 3: nothing.

Totals: decayed 3 events, 5 memories, 3 gold lost; merged 1, 1, 0; compressed 1, 2, 1.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from builders import one_turn

from memlab.datasets.models import Owner
from memlab.scoring.forgetting import FORGETTING_COUNTS, forgetting_counts
from memlab.scoring.operations import lost_golds

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
DAY = timedelta(days=1)


def covers(stored: str, gold: str) -> bool:
    return stored.casefold() == gold.casefold()


def _gold(gid: str, content: str) -> dict[str, str]:
    return {"id": gid, "content": content, "category": "context"}


def _owner() -> Owner:
    return Owner.model_validate(
        {
            "user_id": "u",
            "sessions": [
                one_turn(
                    "t0",
                    T0,
                    "hello",
                    facts=[
                        _gold("g1", "Lives in Leeds"),
                        _gold("g2", "Has a dog"),
                        _gold("g3", "Plays chess"),
                    ],
                ),
                one_turn("t1", T0 + DAY, "work", facts=[_gold("g4", "Works as a nurse")]),
                one_turn("t2", T0 + 2 * DAY, "the dog is gone", retracts=["g2"]),
                one_turn("t3", T0 + 3 * DAY, "bye"),
            ],
        }
    )


def _snapshot(*contents: str) -> dict[str, Any]:
    return {"facts": [{"id": f"s{i}", "content": c} for i, c in enumerate(contents)]}


def _item(mid: str, content: str) -> dict[str, str]:
    return {"id": mid, "content": content}


def _event(kind: str, session: int, removed: list[dict[str, str]], kept: Any = None) -> Any:
    at = (T0 + session * DAY).isoformat()
    return {"kind": kind, "at": at, "removed": removed, "kept": kept, "session_index": session}


SNAPSHOTS = [
    _snapshot("Lives in Leeds", "Has a dog", "Plays chess", "Likes tea", "Has a dog"),
    _snapshot("Lives in Leeds", "lives in leeds", "Works as a nurse"),
    _snapshot("Summary of older memories"),
    _snapshot("Summary of older memories"),
]
EVENTS = [
    _event("merged", 1, [_item("m5", "Has a dog")], kept=_item("m2", "Has a dog")),
    _event(
        "decayed",
        1,
        [_item("m3", "Plays chess"), _item("m2", "Has a dog"), _item("m4", "Likes tea")],
    ),
    _event(
        "compressed",
        2,
        [_item("m1", "Lives in Leeds"), _item("m6", "Works as a nurse")],
        kept=_item("m7", "Summary of older memories"),
    ),
    _event("decayed", 2, [_item("m9", "lives in leeds")]),
    _event("decayed", 2, [_item("m10", "Has a dog")]),
]


def test_events_and_regret_by_kind_equal_the_hand_count() -> None:
    counts = forgetting_counts(_owner(), EVENTS, SNAPSHOTS, covers)
    assert counts == {
        "forget_decayed": 3,
        "forget_merged": 1,
        "forget_compressed": 1,
        "forget_decayed_memories": 5,
        "forget_merged_memories": 1,
        "forget_compressed_memories": 2,
        "lost_decayed": 3,
        "lost_merged": 0,
        "lost_compressed": 1,
    }
    assert set(counts) == set(FORGETTING_COUNTS)


def test_a_strategy_without_records_is_not_applicable_never_zero() -> None:
    assert forgetting_counts(_owner(), None, SNAPSHOTS, covers) is None
    # A strategy that forgets and forgot nothing: zeros.
    assert forgetting_counts(_owner(), [], SNAPSHOTS, covers) == dict.fromkeys(FORGETTING_COUNTS, 0)


def test_the_kept_memory_and_later_removals_count_as_left() -> None:
    # Without its survivor the merge loses "Has a dog" (active at session 1): 1.
    merge = _event("merged", 1, [_item("m5", "Has a dog")])
    alone = forgetting_counts(_owner(), [merge], [_snapshot(), _snapshot(), *SNAPSHOTS[2:]], covers)
    assert alone is not None and alone["lost_merged"] == 1
    # The compression alone, with the second copy in the snapshot it would leave: nothing lost
    # of g1; with the copy gone from the snapshot and no later event, g1 and g4 are lost.
    compression = [EVENTS[2]]
    kept_copy = [*SNAPSHOTS[:2], _snapshot("Summary of older memories", "lives in leeds")]
    found = forgetting_counts(_owner(), compression, [*kept_copy, SNAPSHOTS[3]], covers)
    assert found is not None and found["lost_compressed"] == 1
    found = forgetting_counts(_owner(), compression, SNAPSHOTS, covers)
    assert found is not None and found["lost_compressed"] == 2


def test_lost_golds_is_the_operations_definition() -> None:
    golds = {"g1": "Lives in Leeds", "g2": "Has a dog"}
    assert lost_golds(["lives in leeds", "Has a cat"], ["Has a dog"], golds, covers) == {"g1"}
    assert lost_golds(["Lives in Leeds"], ["LIVES IN LEEDS"], golds, covers) == set()
    assert lost_golds([], [], golds, covers) == set()


@pytest.mark.parametrize(
    ("event", "problem"),
    [
        (_event("evicted", 1, []), "kind 'evicted'"),
        (_event("decayed", 7, []), "at session 7"),
    ],
)
def test_a_bad_record_names_itself(event: Any, problem: str) -> None:
    with pytest.raises(ValueError, match=problem) as caught:
        forgetting_counts(_owner(), [event], SNAPSHOTS, covers)
    assert "forgetting record 1" in str(caught.value)
