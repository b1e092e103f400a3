"""The tiered memory's forgetting rules against arithmetic done by hand.

Every expected number below is worked out in the comment beside it (powers of 0.95, cosines of
integer vectors), not read from the code under test. The rules run through the store, which
applies them, and where useful as the pure functions of ``memlab.memory.storage.forgetting``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from memlab.memory.storage.forgetting import compression_candidates, idle_days, merge_plan
from memlab.memory.storage.items import ForgettingRules, MemoryItem
from memlab.memory.storage.store import TieredStore

T0 = datetime(2025, 1, 1, tzinfo=UTC)
DAY = timedelta(days=1)
MICRO = timedelta(microseconds=1)
RULES = ForgettingRules()

# Against e_0 = (1, 0, 0, 0): (9, 3, 3, 1) has norm sqrt(81 + 9 + 9 + 1) = 10, cosine 9/10 = 0.9
# exactly; (10, 3, 3, 1) has norm sqrt(119), cosine 10 / 10.9087 = 0.9167.
E0 = (1.0, 0.0, 0.0, 0.0)
AT_09 = (9.0, 3.0, 3.0, 1.0)
ABOVE_09 = (10.0, 3.0, 3.0, 1.0)


class TableEmbed:
    """Vectors chosen by the test: ``text -> vector``; unknown texts embed to e_0."""

    def __init__(self, table: dict[str, Sequence[float]], dim: int = 4) -> None:
        self.table = table
        self.dim = dim

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        default = [1.0] + [0.0] * (self.dim - 1)
        return np.array([self.table.get(t, default) for t in texts], dtype=np.float32)


def store(table: dict[str, Sequence[float]] | None = None) -> TieredStore:
    return TieredStore(None, embed=TableEmbed(table or {}), vectors="numpy", ids=_counter())


def _counter() -> Callable[[], str]:
    count = iter(range(1, 10_000))
    return lambda: f"m{next(count):03d}"


def add(s: TieredStore, content: str, importance: float = 0.5, at: datetime = T0) -> MemoryItem:
    return s.add_memory(content, category="context", importance=importance, at=at, source="t")


# ---------------------------------------------------------------- decay and delete


def test_decay_keeps_31_idle_days_and_deletes_at_32() -> None:
    # 0.5 * 0.95**d < 0.1  <=>  d > ln(0.2) / ln(0.95) = 31.38: day 31 stays, day 32 goes.
    s = store()
    add(s, "a")
    assert s.forget(T0 + 31 * DAY, RULES) == []
    (item,) = s.memories()
    # 0.5 * 0.95**31 = 0.101953412872 (bc -l)
    assert item.importance == pytest.approx(0.101953412872, abs=1e-11)
    events = s.forget(T0 + 32 * DAY, RULES)
    assert [e.kind for e in events] == ["decayed"]
    # one more day: 0.5 * 0.95**32 = 0.096855742229
    assert events[0].removed[0].importance == pytest.approx(0.096855742229, abs=1e-11)
    assert events[0].kept is None
    assert s.memories() == []


def test_exactly_the_delete_threshold_stays() -> None:
    # decay 0.5 a day: 0.2 -> 0.1 after exactly one day (exact in binary floating point).
    rules = ForgettingRules(decay_per_day=0.5)
    s = store()
    add(s, "a", importance=0.2)
    add(s, "b", importance=0.2, at=T0 - MICRO)  # idle one microsecond longer: below 0.1
    events = s.forget(T0 + DAY, rules)
    assert [item.content for e in events for item in e.removed] == ["b"]
    assert [(m.content, m.importance) for m in s.memories()] == [("a", 0.1)]


def test_forgetting_often_or_once_decays_alike() -> None:
    # ten daily passes or one after ten days: 0.8 * 0.95**10 = 0.478989551390 (bc -l)
    daily, once = store(), store()
    add(daily, "a", importance=0.8)
    add(once, "a", importance=0.8)
    for day in range(1, 11):
        daily.forget(T0 + day * DAY, RULES)
    once.forget(T0 + 10 * DAY, RULES)
    assert daily.memories()[0].importance == pytest.approx(0.478989551390, abs=1e-11)
    assert once.memories()[0].importance == pytest.approx(daily.memories()[0].importance)


def test_recall_restarts_decay() -> None:
    # Recalled on day 6: at day 10 only 4 idle days count: 0.5 * 0.95**4 = 0.407253125
    s = store({"a": E0, "b": (0.0, 1.0, 0.0, 0.0)})
    add(s, "a")
    add(s, "b")
    assert [m.content for m, _score in s.recall_memories("a", 1, at=T0 + 6 * DAY)] == ["a"]
    s.forget(T0 + 10 * DAY, RULES)
    importance = {m.content: m.importance for m in s.memories()}
    assert importance["a"] == pytest.approx(0.407253125, abs=1e-12)
    assert importance["b"] == pytest.approx(0.299368469619, abs=1e-11)  # 0.5 * 0.95**10


def test_idle_days_never_negative_and_counts_from_the_later_anchor() -> None:
    day = 86_400_000_000  # microseconds
    days = idle_days(np.array([0, 4 * day, 9 * day]), np.array([2 * day, 2 * day, 0]), 5 * day)
    assert days.tolist() == [3.0, 1.0, 0.0]


# ---------------------------------------------------------------- merge


def test_a_pair_at_exactly_the_merge_threshold_is_kept() -> None:
    s = store({"first": E0, "second one": AT_09})
    add(s, "first")
    add(s, "second one")
    assert s.forget(T0, RULES) == []
    assert len(s.memories()) == 2


def test_a_pair_above_the_threshold_keeps_the_longer_content() -> None:
    s = store({"short": E0, "the longer one": ABOVE_09, "other": (0.0, 1.0, 0.0, 0.0)})
    short, longer, _other = add(s, "short"), add(s, "the longer one"), add(s, "other")
    events = s.forget(T0, RULES)
    assert [(e.kind, e.removed, e.kept) for e in events] == [("merged", (short,), longer)]
    assert [m.content for m in s.memories()] == ["the longer one", "other"]
    record = events[0].to_record()
    assert record == {
        "kind": "merged",
        "at": "2025-01-01T00:00:00Z",
        "removed": [{"id": short.id, "content": "short"}],
        "kept": {"id": longer.id, "content": "the longer one"},
    }


def test_equal_lengths_keep_the_older_item() -> None:
    s = store({"aaaa": ABOVE_09, "bbbb": E0})
    older = add(s, "aaaa", at=T0)
    newer = add(s, "bbbb", at=T0 + MICRO)
    events = s.forget(T0 + MICRO, RULES)
    assert [(e.removed[0].id, e.kept.id if e.kept else None) for e in events] == [
        (newer.id, older.id)
    ]


def _unit(degrees: float) -> tuple[float, float, float, float]:
    return (math.cos(math.radians(degrees)), math.sin(math.radians(degrees)), 0.0, 0.0)


def test_the_most_similar_pair_merges_first() -> None:
    # Angles 0, 18.2 and 26.3 degrees: A~B cos(18.2) = 0.950, B~C cos(8.1) = 0.990,
    # A~C cos(26.3) = 0.896 (below 0.9). B is the longest. B~C merges first (C dropped for B),
    # then A~B (A dropped for B): two events in that order, only B stays.
    s = store({"A a": _unit(0), "B bbbbbbb": _unit(18.2), "C ccc": _unit(26.3)})
    a, b, c = add(s, "A a"), add(s, "B bbbbbbb"), add(s, "C ccc")
    events = s.forget(T0, RULES)
    assert [(e.removed[0].id, e.kept) for e in events] == [(c.id, b), (a.id, b)]
    assert [m.id for m in s.memories()] == [b.id]


def test_an_item_already_dropped_takes_no_one_with_it() -> None:
    # Angles 0, 8.1 and 26.3 degrees: A~B 0.990 (B dropped for the longer A), then B~C 0.950
    # is skipped because B is gone; A~C 0.896 is below 0.9, so C stays.
    s = store({"A aaaaaaaa": _unit(0), "B bbbb": _unit(8.1), "C c": _unit(26.3)})
    a, b, c = add(s, "A aaaaaaaa"), add(s, "B bbbb"), add(s, "C c")
    events = s.forget(T0, RULES)
    assert [(e.removed[0].id, e.kept) for e in events] == [(b.id, a)]
    assert [m.id for m in s.memories()] == [a.id, c.id]


def test_only_new_items_are_compared_again_but_a_new_threshold_compares_all() -> None:
    s = store({"x one": E0, "x two": ABOVE_09})
    add(s, "x one")
    add(s, "x two")
    assert s.forget(T0, ForgettingRules(merge_above=0.95)) == []  # 0.9167 <= 0.95
    assert s.forget(T0, ForgettingRules(merge_above=0.95)) == []
    events = s.forget(T0, RULES)  # threshold lowered to 0.9: the old pair now merges
    assert [e.kind for e in events] == ["merged"]


def test_merge_plan_with_fresh_rows_matches_the_full_plan() -> None:
    rng = np.random.default_rng(3)
    base = rng.normal(size=(6, 8))
    vectors = np.vstack([base, base[:3] + rng.normal(scale=0.05, size=(3, 8))])
    lengths = [n % 4 + 1 for n in range(9)]
    full = merge_plan(lengths, vectors, RULES)
    fresh = merge_plan(lengths, vectors, RULES, fresh=[False] * 6 + [True] * 3)
    assert len(full) == 3  # each perturbed copy merges with its original, and nothing else
    assert fresh == full
    many = np.vstack([vectors, rng.normal(size=(11, 8))])
    assert merge_plan(lengths + [1] * 11, many, RULES, fresh=[True] * 20) == merge_plan(
        lengths + [1] * 11, many, RULES
    )


# ---------------------------------------------------------------- compression


def _ten_hourly(s: TieredStore) -> list[MemoryItem]:
    """Ten items an hour apart; importance n/20 (at most 0.45), 4 preferences and 6 contexts."""
    return [
        s.add_memory(
            f"fact {n}",
            category="preference" if n % 3 == 0 else "context",
            importance=n / 20,
            at=T0 + n * timedelta(hours=1),
            source="t",
        )
        for n in range(10)
    ]


def test_compression_needs_ten_items_older_than_30_days() -> None:
    s = store()
    items = _ten_hourly(s)
    # At 30 days + 9 h the last item is exactly 30 days old (not older): 9 candidates -> none.
    assert s.compression_candidates(T0 + 30 * DAY + 9 * timedelta(hours=1), RULES) == []
    # One microsecond later all ten are older than 30 days.
    assert s.compression_candidates(T0 + 30 * DAY + 9 * timedelta(hours=1) + MICRO, RULES) == (
        items
    )
    assert compression_candidates(items[:9], T0 + 60 * DAY, RULES) == []  # 9 < 10


def test_replace_with_summary() -> None:
    s = store()
    items = _ten_hourly(s)
    young = add(s, "young", importance=0.9, at=T0 + 40 * DAY)
    at = T0 + 41 * DAY
    candidates = s.compression_candidates(at, RULES)
    assert candidates == items
    event = s.replace_with_summary(candidates, "ten facts in one", at)
    assert (event.kind, event.removed, event.at) == ("compressed", tuple(items), at)
    assert event.kept is not None
    assert (event.kept.kind, event.kept.source, event.kept.content) == (
        "summary",
        "compressed",
        "ten facts in one",
    )
    assert (event.kept.importance, event.kept.category, event.kept.created_at) == (
        9 / 20,
        "context",
        at,
    )
    assert s.memories() == [young, event.kept]
    assert len(event.to_record()["removed"]) == 10


def test_a_summary_of_tied_categories_takes_the_first_alphabetically() -> None:
    s = store()
    items = [
        s.add_memory(f"x{n}", category=category, importance=0.5, at=T0, source="t")
        for n, category in enumerate(["preference", "context", "preference", "context"])
    ]
    event = s.replace_with_summary(items, "both", T0 + DAY)
    assert event.kept is not None and event.kept.category == "context"
