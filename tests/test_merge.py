"""Merge strategies: every rule of the DeerFlow-compatible baseline, and the alternatives."""

from __future__ import annotations

import copy
import math
from datetime import UTC, datetime, timedelta
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memlab.core.jsondoc.contract import MINIMAL_VALID_UPDATE
from memlab.core.jsondoc.document import (
    HISTORY_SECTIONS,
    USER_SECTIONS,
    SeededFactIds,
    create_empty_memory,
    is_fact_id,
    normalize_fact_text,
    random_fact_ids,
    utc_iso,
)
from memlab.core.jsondoc.merge import (
    MERGE_STRATEGIES,
    ApplyResult,
    BaselineMerge,
    CategoryCapMerge,
    MergeStrategy,
    NearDuplicateMerge,
    TimeDecayMerge,
    apply_updates,
    get_merge_strategy,
)
from memlab.core.jsondoc.similarity import (
    NEAR_DUPLICATE_THRESHOLD,
    count_duplicates,
    near_duplicate_score,
)

NOW = datetime(2025, 1, 6, 9, 12, tzinfo=UTC)


def fact(fid: str, content: str, confidence: float = 0.9, **extra: Any) -> dict[str, Any]:
    return {
        "id": fid,
        "content": content,
        "category": extra.pop("category", "knowledge"),
        "confidence": confidence,
        "createdAt": extra.pop("createdAt", "2024-12-01T00:00:00Z"),
        "source": "t0",
        **extra,
    }


def new(
    content: str, confidence: float = 0.9, category: str = "knowledge", **extra: Any
) -> dict[str, Any]:
    return {"content": content, "category": category, "confidence": confidence, **extra}


def memory_with(*facts: dict[str, Any]) -> dict[str, Any]:
    memory = create_empty_memory(NOW - timedelta(days=1))
    memory["facts"] = list(facts)
    return memory


def run(
    memory: dict[str, Any],
    update: dict[str, Any],
    *,
    threshold: float = 0.7,
    max_facts: int = 100,
    thread_id: str | None = "thread-1",
    strategy: MergeStrategy | None = None,
    seed: int = 1,
) -> ApplyResult:
    return apply_updates(
        memory,
        update,
        thread_id=thread_id,
        threshold=threshold,
        max_facts=max_facts,
        now=NOW,
        new_id=SeededFactIds(seed),
        strategy=strategy,
    )


def contents(result: ApplyResult) -> list[str]:
    return [f["content"] for f in result.memory["facts"]]


# -- threshold ---------------------------------------------------------------------------------
def test_confidence_equal_to_threshold_is_admitted() -> None:
    result = run(memory_with(), {"newFacts": [new("Uses Python", 0.7)]}, threshold=0.7)
    assert contents(result) == ["Uses Python"]
    assert result.added == result.memory["facts"]


def test_confidence_below_threshold_is_excluded_and_reported() -> None:
    proposal = new("Maybe likes tea", 0.69)
    result = run(memory_with(), {"newFacts": [proposal]}, threshold=0.7)
    assert contents(result) == []
    assert result.skipped_below_threshold == [proposal]
    assert result.counts()["skipped_below_threshold"] == 1


# -- duplicates --------------------------------------------------------------------------------
def test_duplicate_of_existing_fact_is_skipped_casefolded_and_stripped() -> None:
    memory = memory_with(fact("fact_00000001", "Prefers Dark Mode"))
    result = run(memory, {"newFacts": [new("  prefers dark MODE \n")]})
    assert contents(result) == ["Prefers Dark Mode"]
    assert len(result.skipped_duplicate) == 1
    assert result.added == []


def test_duplicates_within_one_batch_keep_the_first() -> None:
    update = {"newFacts": [new("Works at ACME", 0.8), new("works at acme", 0.95)]}
    result = run(memory_with(), update)
    assert contents(result) == ["Works at ACME"]
    assert result.memory["facts"][0]["confidence"] == 0.8
    assert [p["content"] for p in result.skipped_duplicate] == ["works at acme"]


def test_below_threshold_fact_does_not_block_a_later_duplicate() -> None:
    update = {"newFacts": [new("Likes jazz", 0.2), new("likes jazz", 0.9)]}
    result = run(memory_with(), update)
    assert contents(result) == ["likes jazz"]


def test_content_is_stored_stripped() -> None:
    result = run(memory_with(), {"newFacts": [new("   Lives in Lyon\t\n")]})
    assert contents(result) == ["Lives in Lyon"]


# -- stored fields -----------------------------------------------------------------------------
def test_stored_fact_fields() -> None:
    update = {"newFacts": [new("Corrected: uses uv", 0.95, "correction", sourceError="pip")]}
    result = run(memory_with(), update, thread_id="thread-42")
    (stored,) = result.memory["facts"]
    assert set(stored) == {
        "id",
        "content",
        "category",
        "confidence",
        "createdAt",
        "source",
        "sourceError",
    }
    assert is_fact_id(stored["id"])
    assert stored["category"] == "correction"
    assert stored["confidence"] == 0.95
    assert stored["createdAt"] == "2025-01-06T09:12:00Z"
    assert stored["source"] == "thread-42"
    assert stored["sourceError"] == "pip"


def test_source_error_only_when_present() -> None:
    result = run(memory_with(), {"newFacts": [new("Uses vim")]})
    assert "sourceError" not in result.memory["facts"][0]


@pytest.mark.parametrize("thread_id", [None, ""])
def test_source_is_unknown_without_thread_id(thread_id: str | None) -> None:
    result = run(memory_with(), {"newFacts": [new("Uses vim")]}, thread_id=thread_id)
    assert result.memory["facts"][0]["source"] == "unknown"


def test_ids_are_deterministic_with_seeded_generator() -> None:
    update = {"newFacts": [new(f"fact number {i}") for i in range(5)]}
    first = run(memory_with(), update, seed=7)
    second = run(memory_with(), update, seed=7)
    other = run(memory_with(), update, seed=8)
    ids = [f["id"] for f in first.memory["facts"]]
    assert ids == [f["id"] for f in second.memory["facts"]]
    assert ids != [f["id"] for f in other.memory["facts"]]
    assert len(set(ids)) == 5 and all(is_fact_id(i) for i in ids)


def test_generated_id_colliding_with_a_stored_id_is_redrawn() -> None:
    taken = SeededFactIds(3)()
    memory = memory_with(fact(taken, "Old fact"))
    result = run(memory, {"newFacts": [new("New fact")]}, seed=3)
    ids = [f["id"] for f in result.memory["facts"]]
    assert ids[0] == taken and ids[1] != taken and is_fact_id(ids[1])


def test_seeded_fact_ids_accept_strings_and_never_repeat() -> None:
    ids = SeededFactIds("lane/user")
    drawn = [ids() for _ in range(2000)]
    assert len(set(drawn)) == 2000
    assert SeededFactIds("lane/user")() == drawn[0]
    assert is_fact_id(random_fact_ids()())


# -- removals ----------------------------------------------------------------------------------
def test_removal_by_exact_id_and_unknown_ids_ignored() -> None:
    memory = memory_with(fact("fact_0000000a", "A"), fact("fact_0000000b", "B"))
    update = {"factsToRemove": ["fact_0000000a", "fact_missing", "FACT_0000000B"]}
    result = run(memory, update)
    assert contents(result) == ["B"]
    assert [f["id"] for f in result.removed] == ["fact_0000000a"]
    assert result.unknown_removals == ["fact_missing", "FACT_0000000B"]


def test_removal_happens_before_addition() -> None:
    memory = memory_with(fact("fact_0000000a", "Lives in Paris", 0.8))
    update = {"factsToRemove": ["fact_0000000a"], "newFacts": [new("lives in paris", 0.95)]}
    result = run(memory, update)
    assert contents(result) == ["lives in paris"]
    assert result.memory["facts"][0]["id"] != "fact_0000000a"
    assert result.skipped_duplicate == []


# -- cap ---------------------------------------------------------------------------------------
def test_cap_keeps_highest_confidence_and_ties_keep_the_older_fact() -> None:
    memory = memory_with(
        fact("fact_00000001", "old low", 0.75),
        fact("fact_00000002", "old tie", 0.8),
        fact("fact_00000003", "old high", 0.95),
    )
    update = {"newFacts": [new("new tie", 0.8), new("new top", 0.99)]}
    result = run(memory, update, max_facts=3)
    assert contents(result) == ["new top", "old high", "old tie"]
    assert [f["content"] for f in result.evicted] == ["new tie", "old low"]


def test_cap_is_not_applied_at_exactly_max_facts() -> None:
    memory = memory_with(fact("fact_00000001", "b", 0.75), fact("fact_00000002", "a", 0.9))
    result = run(memory, {"newFacts": [new("c", 0.8)]}, max_facts=3)
    assert contents(result) == ["b", "a", "c"]  # order untouched when no eviction
    assert result.evicted == []


# -- sections ----------------------------------------------------------------------------------
def _sections(**overrides: dict[str, Any]) -> dict[str, Any]:
    update: dict[str, Any] = {
        "user": {name: {"summary": "", "shouldUpdate": False} for name in USER_SECTIONS},
        "history": {name: {"summary": "", "shouldUpdate": False} for name in HISTORY_SECTIONS},
        "newFacts": [],
        "factsToRemove": [],
    }
    for name, section in overrides.items():
        group = "user" if name in USER_SECTIONS else "history"
        update[group][name] = section
    return update


def test_section_updated_with_timestamp() -> None:
    memory = memory_with()
    update = _sections(workContext={"summary": "Backend engineer", "shouldUpdate": True})
    result = run(memory, update)
    assert result.memory["user"]["workContext"] == {
        "summary": "Backend engineer",
        "updatedAt": "2025-01-06T09:12:00Z",
    }
    assert result.sections_updated == ["user.workContext"]


def test_should_update_with_empty_summary_does_not_overwrite() -> None:
    memory = memory_with()
    memory["history"]["recentMonths"] = {"summary": "Kept", "updatedAt": "2024-12-01T00:00:00Z"}
    result = run(memory, _sections(recentMonths={"summary": "", "shouldUpdate": True}))
    assert result.memory["history"]["recentMonths"]["summary"] == "Kept"
    assert result.sections_updated == []


def test_should_update_false_does_not_overwrite() -> None:
    memory = memory_with()
    memory["user"]["topOfMind"] = {"summary": "Kept", "updatedAt": "2024-12-01T00:00:00Z"}
    result = run(memory, _sections(topOfMind={"summary": "New focus", "shouldUpdate": False}))
    assert result.memory["user"]["topOfMind"]["summary"] == "Kept"


def test_whitespace_only_summary_counts_as_non_empty_like_deerflow() -> None:
    result = run(memory_with(), _sections(earlierContext={"summary": " ", "shouldUpdate": True}))
    assert result.sections_updated == ["history.earlierContext"]


# -- purity ------------------------------------------------------------------------------------
def test_inputs_are_never_mutated() -> None:
    memory = memory_with(fact("fact_0000000a", "A", 0.75), fact("fact_0000000b", "B", 0.9))
    update = _sections(workContext={"summary": "X", "shouldUpdate": True})
    update["newFacts"] = [new("  C  ", 0.95), new("a", 0.9), new("D", 0.1)]
    update["factsToRemove"] = ["fact_0000000b"]
    memory_before, update_before = copy.deepcopy(memory), copy.deepcopy(update)
    for name in MERGE_STRATEGIES:
        result = run(memory, update, max_facts=1, strategy=get_merge_strategy(name))
        assert memory == memory_before and update == update_before
        result.memory["facts"].clear()
        assert memory == memory_before


def test_invalid_new_fact_is_rejected_with_its_pointer() -> None:
    with pytest.raises(ValueError, match="newFacts/1/confidence"):
        run(memory_with(), {"newFacts": [new("ok"), {"content": "x", "confidence": "high"}]})
    with pytest.raises(ValueError, match="newFacts/0/content"):
        run(memory_with(), {"newFacts": [new("   ")]})
    with pytest.raises(ValueError, match="max_facts"):
        run(memory_with(), {}, max_facts=0)


def test_naive_now_is_rejected() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        BaselineMerge().apply(
            memory_with(),
            {},
            thread_id=None,
            threshold=0.7,
            max_facts=10,
            now=datetime(2025, 1, 1),
            new_id=SeededFactIds(1),
        )


def test_counts_cover_every_list() -> None:
    memory = memory_with(fact("fact_0000000a", "A"))
    update = {"newFacts": [new("B"), new("a"), new("C", 0.1)], "factsToRemove": ["nope"]}
    assert run(memory, update).counts() == {
        "added": 1,
        "skipped_below_threshold": 1,
        "skipped_duplicate": 1,
        "removed": 0,
        "unknown_removals": 1,
        "evicted": 0,
        "sections_updated": 0,
        "merged": 0,
        "echoed": 0,
    }


def test_utc_iso_formats() -> None:
    assert utc_iso(NOW) == "2025-01-06T09:12:00Z"
    assert utc_iso(NOW.replace(microsecond=250)) == "2025-01-06T09:12:00.000250Z"
    assert utc_iso(NOW.astimezone(__import__("zoneinfo").ZoneInfo("Asia/Tokyo"))) == utc_iso(NOW)
    with pytest.raises(ValueError):
        utc_iso(datetime(2025, 1, 1))


# -- other strategies --------------------------------------------------------------------------
def test_near_duplicate_score_is_the_metrics_measure() -> None:
    # One definition: the strategy merges by the score the duplicate metrics count with.
    assert near_duplicate_score("Likes green tea", "likes GREEN tea!") == 1.0
    # Dice of content tokens: stop words drop out, 2 * 3 shared / (4 + 4) tokens.
    assert near_duplicate_score(
        "The user likes hiking, cooking and chess", "likes hiking, cooking and tennis"
    ) == pytest.approx(3 / 4)
    assert near_duplicate_score("", "") == 1.0
    assert near_duplicate_score("!!", "!!") == 1.0  # no words: compared as normalized text
    assert near_duplicate_score("12", "ab") == 0.0  # no token in common
    assert near_duplicate_score("tea", "") == 0.0
    assert NearDuplicateMerge().similarity == NEAR_DUPLICATE_THRESHOLD
    memory = memory_with(fact("fact_0000000a", "Loves hiking in the Alps every summer", 0.9))
    proposal = "loves hiking in the Alps each summer"  # 4 of 5 tokens shared: Dice 0.8
    assert count_duplicates(["Loves hiking in the Alps every summer", proposal]).near == 1
    result = run(memory, {"newFacts": [new(proposal, 0.8)]}, strategy=NearDuplicateMerge())
    assert result.merged and result.merged[0]["similarity"] == pytest.approx(0.8)


def test_near_duplicate_keeps_higher_confidence_text() -> None:
    memory = memory_with(fact("fact_0000000a", "User likes green tea a lot", 0.75))
    update = {"newFacts": [new("user likes a lot green tea!", 0.9), new("Unrelated fact", 0.9)]}
    result = run(memory, update, strategy=NearDuplicateMerge(0.85))
    assert contents(result) == ["user likes a lot green tea!", "Unrelated fact"]
    kept = result.memory["facts"][0]
    assert kept["id"] == "fact_0000000a" and kept["confidence"] == 0.9
    assert kept["createdAt"] == "2024-12-01T00:00:00Z"
    assert result.merged == [
        {
            "keptId": "fact_0000000a",
            "keptContent": "user likes a lot green tea!",
            "droppedContent": "User likes green tea a lot",
            "similarity": 1.0,
            "replaced": True,
        }
    ]


def test_near_duplicate_with_lower_confidence_keeps_stored_text() -> None:
    memory = memory_with(fact("fact_0000000a", "Works remotely from Berlin", 0.95))
    result = run(memory, {"newFacts": [new("works remotely from berlin.", 0.8)]})
    assert len(result.skipped_duplicate) == 0 and len(result.added) == 1  # baseline adds it
    result = run(
        memory,
        {"newFacts": [new("works remotely from berlin.", 0.8)]},
        strategy=NearDuplicateMerge(),
    )
    assert contents(result) == ["Works remotely from Berlin"]
    assert result.merged[0]["replaced"] is False
    assert result.merged[0]["droppedContent"] == "works remotely from berlin."


def test_near_duplicate_below_similarity_is_added() -> None:
    memory = memory_with(fact("fact_0000000a", "likes tea", 0.9))
    result = run(memory, {"newFacts": [new("likes coffee", 0.9)]}, strategy=NearDuplicateMerge())
    assert contents(result) == ["likes tea", "likes coffee"] and result.merged == []


def test_category_cap_limits_each_category_then_global() -> None:
    memory = memory_with(
        fact("fact_00000001", "g1", 0.8, category="goal"),
        fact("fact_00000002", "g2", 0.9, category="goal"),
        fact("fact_00000003", "g3", 0.8, category="goal"),
        fact("fact_00000004", "p1", 0.7, category="preference"),
    )
    result = run(memory, {}, strategy=CategoryCapMerge(per_category=2))
    assert contents(result) == ["g1", "g2", "p1"]
    assert [f["content"] for f in result.evicted] == ["g3"]
    result = run(memory, {}, max_facts=2, strategy=CategoryCapMerge(per_category=2))
    assert contents(result) == ["g2", "g1"]
    assert [f["content"] for f in result.evicted] == ["g3", "p1"]


def test_time_decay_evicts_old_facts_first() -> None:
    memory = memory_with(
        fact("fact_00000001", "old but confident", 0.95, createdAt=utc_iso(NOW - timedelta(90))),
        fact("fact_00000002", "recent", 0.8, createdAt=utc_iso(NOW - timedelta(1))),
    )
    result = run(memory, {"newFacts": [new("brand new", 0.75)]}, max_facts=2)
    assert contents(result) == ["old but confident", "recent"]  # baseline: confidence only
    result = run(
        memory,
        {"newFacts": [new("brand new", 0.75)]},
        max_facts=2,
        strategy=TimeDecayMerge(half_life_days=30),
    )
    assert contents(result) == ["recent", "brand new"]
    assert [f["content"] for f in result.evicted] == ["old but confident"]
    assert result.memory["facts"][0]["confidence"] == 0.8  # ranking only


def test_registry_and_errors() -> None:
    assert set(MERGE_STRATEGIES) == {"baseline", "near_duplicate", "category_cap", "time_decay"}
    strategy = get_merge_strategy("near_duplicate", similarity=0.5)
    assert isinstance(strategy, NearDuplicateMerge) and strategy.similarity == 0.5
    assert get_merge_strategy("baseline").name == "baseline"
    with pytest.raises(ValueError, match="known strategies: baseline, category_cap"):
        get_merge_strategy("nope")
    with pytest.raises(ValueError, match="bad parameters for merge strategy 'baseline'"):
        get_merge_strategy("baseline", similarity=0.5)
    with pytest.raises(ValueError, match="per_category"):
        get_merge_strategy("category_cap", per_category=0)


# -- properties --------------------------------------------------------------------------------
_words = st.sampled_from(["tea", "Tea", "coffee", "likes", "user", "  works", "at", "ACME "])
_content = st.lists(_words, min_size=1, max_size=4).map(" ".join)
_proposal = st.fixed_dictionaries(
    {
        "content": _content,
        "category": st.sampled_from(["preference", "knowledge", "goal"]),
        "confidence": st.floats(0.0, 1.0),
    }
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    existing=st.lists(_content, max_size=12),
    batches=st.lists(st.lists(_proposal, max_size=8), min_size=1, max_size=4),
    max_facts=st.integers(1, 10),
    threshold=st.floats(0.0, 1.0),
    strategy_name=st.sampled_from(sorted(MERGE_STRATEGIES)),
)
def test_property_cap_and_no_duplicates(
    existing: list[str],
    batches: list[list[dict[str, Any]]],
    max_facts: int,
    threshold: float,
    strategy_name: str,
) -> None:
    clean = list({normalize_fact_text(c): c.strip() for c in existing}.values())
    memory = memory_with(*(fact(f"fact_{i:08x}", c, 0.8) for i, c in enumerate(clean)))
    memory["facts"] = memory["facts"][:max_facts]
    strategy = get_merge_strategy(strategy_name)
    ids = SeededFactIds(0)
    for batch in batches:
        removable = [f["id"] for f in memory["facts"][:1]]
        result = strategy.apply(
            memory,
            {"newFacts": batch, "factsToRemove": removable},
            thread_id="t",
            threshold=threshold,
            max_facts=max_facts,
            now=NOW,
            new_id=ids,
        )
        facts = result.memory["facts"]
        assert len(facts) <= max_facts
        keys = [normalize_fact_text(f["content"]) for f in facts]
        assert len(keys) == len(set(keys))
        assert len({f["id"] for f in facts}) == len(facts)
        assert all(f["confidence"] >= threshold for f in result.added)
        memory = result.memory


def test_apply_in_place_changes_the_given_document_only() -> None:
    memory = memory_with(fact("fact_00000001", "Likes tea"))
    update = {**MINIMAL_VALID_UPDATE, "newFacts": [new("Plays chess")]}
    update_before = copy.deepcopy(update)
    result = BaselineMerge().apply_in_place(
        memory,
        update,
        thread_id="t",
        threshold=0.7,
        max_facts=10,
        now=NOW,
        new_id=SeededFactIds(1),
    )
    assert result.memory is memory
    assert [f["content"] for f in memory["facts"]] == ["Likes tea", "Plays chess"]
    assert update == update_before


# -- bookkeeping, validation and the alternatives' details --------------------------------------


def test_the_record_lists_what_each_step_touched() -> None:
    memory = memory_with(fact("fact_0000000a", "Likes tea", 0.9), fact("fact_0000000b", "Old", 0.8))
    update = {
        "newFacts": [new("Plays chess", 0.95, sourceError="x"), new("low", 0.1), new("likes TEA")],
        "factsToRemove": ["fact_0000000b", "fact_missing"],
    }
    result = run(memory, update)
    record = result.to_record()
    added_id = result.added[0]["id"]
    assert record == {
        "added": [{"id": added_id, "content": "Plays chess", "confidence": 0.95}],
        "removed": [{"id": "fact_0000000b", "content": "Old", "confidence": 0.8}],
        "evicted": [],
        "skipped_below_threshold": [{"content": "low", "confidence": 0.1}],
        "skipped_duplicate": [{"content": "likes TEA", "confidence": 0.9}],
        "unknown_removals": ["fact_missing"],
        "merged": [],
        "sections_updated": [],
        "echoed": [],
    }
    assert result.counts() == {
        "added": 1,
        "skipped_below_threshold": 1,
        "skipped_duplicate": 1,
        "removed": 1,
        "unknown_removals": 1,
        "evicted": 0,
        "sections_updated": 0,
        "merged": 0,
        "echoed": 0,
    }


def test_strategies_show_their_parameters() -> None:
    assert repr(BaselineMerge()) == "BaselineMerge()"
    assert repr(NearDuplicateMerge(0.5)) == "NearDuplicateMerge(similarity=0.5)"
    assert repr(CategoryCapMerge(3)) == "CategoryCapMerge(per_category=3)"
    assert repr(TimeDecayMerge(7)) == "TimeDecayMerge(half_life_days=7.0)"
    assert CategoryCapMerge().per_category == 20 and TimeDecayMerge().half_life_days == 30.0


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: NearDuplicateMerge(0.0), r"similarity must be within \(0, 1\], got 0.0"),
        (lambda: NearDuplicateMerge(1.01), "similarity must be within"),
        (lambda: CategoryCapMerge(0), "per_category must be an integer >= 1, got 0"),
        (lambda: CategoryCapMerge(True), "per_category must be an integer >= 1, got True"),
        (lambda: CategoryCapMerge(2.0), "per_category must be an integer"),  # type: ignore[arg-type]
        (lambda: TimeDecayMerge(0), "half_life_days must be a positive number, got 0"),
        (lambda: TimeDecayMerge(math.inf), "half_life_days must be a positive number, got inf"),
        (lambda: TimeDecayMerge(math.nan), "half_life_days must be a positive number, got nan"),
    ],
)
def test_strategy_parameters_are_checked(build: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build()


def test_strategy_parameter_bounds_are_inclusive_where_stated() -> None:
    assert NearDuplicateMerge(1.0).similarity == 1.0
    assert CategoryCapMerge(1).per_category == 1
    assert TimeDecayMerge(0.001).half_life_days == 0.001


@pytest.mark.parametrize(
    ("update", "message"),
    [
        ({"newFacts": ["x"]}, "newFacts/0: a new fact must be an object, got 'x'"),
        ({"newFacts": [new("ok"), new("   ")]}, "newFacts/1/content: must be a non-empty string"),
        ({"newFacts": [{"confidence": 0.9}]}, "newFacts/0/content: must be a non-empty string"),
        (
            {"newFacts": [new("a", True)]},
            "newFacts/0/confidence: must be a number in 0-1, got True",
        ),
        ({"newFacts": [new("a", math.nan)]}, "newFacts/0/confidence: must be a number in 0-1"),
        ({"newFacts": [new("a", math.inf)]}, "newFacts/0/confidence: must be a number in 0-1"),
        ({"newFacts": [new("a", "0.9")]}, "newFacts/0/confidence: must be a number in 0-1"),
        ({"newFacts": "a"}, "newFacts must be a list, got str"),
        ({"factsToRemove": "fact_0000000a"}, "factsToRemove must be a list of fact ids"),
        ({"factsToRemove": ["fact_0000000a", 3]}, "factsToRemove/1: fact ids are strings, got 3"),
    ],
)
def test_malformed_updates_name_the_field(update: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        run(memory_with(fact("fact_0000000a", "Likes tea")), update)


def test_limits_are_checked_at_their_bounds() -> None:
    memory = memory_with(fact("fact_0000000a", "Likes tea", 1.0))
    assert run(memory, {"newFacts": [new("b", 1.0)]}, threshold=1.0).added  # 1.0 admits 1.0
    assert run(memory, {}, threshold=0.0).memory["facts"]
    for threshold in (-0.01, 1.01):
        with pytest.raises(ValueError, match=f"threshold must be within 0.0-1.0, got {threshold}"):
            run(memory, {}, threshold=threshold)
    for max_facts in (0, True, 2.0):
        with pytest.raises(ValueError, match="max_facts must be an integer >= 1, got"):
            run(memory, {}, max_facts=max_facts)  # type: ignore[arg-type]
    assert len(run(memory, {"newFacts": [new("b")]}, max_facts=1).memory["facts"]) == 1
    broken = memory_with()
    broken["facts"] = {"a": 1}
    with pytest.raises(ValueError, match="memory 'facts' must be a list, got dict"):
        run(broken, {})


def test_an_id_generator_that_only_repeats_taken_ids_fails() -> None:
    memory = memory_with(fact("fact_0000000a", "Likes tea"))
    with pytest.raises(ValueError, match="returned only taken ids in 1000 attempts"):
        BaselineMerge().apply(
            memory,
            {"newFacts": [new("Plays chess")]},
            thread_id=None,
            threshold=0.5,
            max_facts=10,
            now=NOW,
            new_id=lambda: "fact_0000000a",
        )
    calls = iter(["fact_0000000a"] * 999 + ["fact_0000000b"])
    result = BaselineMerge().apply(
        memory,
        {"newFacts": [new("Plays chess")]},
        thread_id=None,
        threshold=0.5,
        max_facts=10,
        now=NOW,
        new_id=lambda: next(calls),
    )
    assert result.added[0]["id"] == "fact_0000000b"  # the 1000th attempt still counts
    assert result.added[0]["source"] == "unknown"


def test_a_near_duplicate_with_more_confidence_takes_over_the_stored_fact() -> None:
    stored = fact("fact_0000000a", "User likes green tea a lot", 0.7, sourceError="old")
    memory = memory_with(stored, fact("fact_0000000b", "Lives in Oslo", 0.9))
    proposal = new("user likes green tea a lot!", 0.9, category="preference", sourceError=" s ")
    result = run(memory, {"newFacts": [proposal]}, strategy=NearDuplicateMerge())
    kept = result.memory["facts"][0]
    assert kept == {
        "id": "fact_0000000a",
        "content": "user likes green tea a lot!",
        "category": "preference",
        "confidence": 0.9,
        "createdAt": "2024-12-01T00:00:00Z",
        "source": "thread-1",
        "sourceError": "s",
    }
    # Without a category, a source or a source error of its own: the stored category stays,
    # the source becomes unknown and the old source error goes.
    bare = {"content": "user likes green tea a lot!!", "confidence": 0.95}
    result = run(memory, {"newFacts": [bare]}, thread_id=None, strategy=NearDuplicateMerge())
    kept = result.memory["facts"][0]
    assert (kept["category"], kept["source"], "sourceError" in kept) == (
        "knowledge",
        "unknown",
        False,
    )
    assert result.memory["facts"][1]["content"] == "Lives in Oslo"


def test_the_most_similar_stored_fact_is_the_one_merged() -> None:
    memory = memory_with(
        fact("fact_0000000a", "likes green tea and black coffee", 0.5),
        fact("fact_0000000b", "likes green tea", 0.5),
        fact("fact_0000000c", "likes green tea and coffee", 0.5),
    )
    result = run(
        memory, {"newFacts": [new("Likes green tea!", 0.9)]}, strategy=NearDuplicateMerge(0.5)
    )
    assert result.merged[0]["keptId"] == "fact_0000000b"
    assert result.merged[0]["similarity"] == 1.0
    # A fact without text is never the one merged into.
    memory = memory_with(
        {"id": "fact_0000000d", "confidence": 0.1}, fact("fact_0000000b", "likes strong tea")
    )
    update = {"newFacts": [new("likes strong tea daily", 0.95)]}
    result = run(memory, update, strategy=NearDuplicateMerge(0.5))
    assert result.merged[0]["keptId"] == "fact_0000000b"


def test_time_decay_ranks_by_half_lives() -> None:
    # 0.8 at one half-life (0.4) ranks below 0.5 today and above 0.3 today; a fact dated in
    # the future counts as new, one without a date as new.
    memory = memory_with(
        fact("fact_00000001", "one half-life", 0.8, createdAt=utc_iso(NOW - timedelta(10))),
        fact("fact_00000002", "today", 0.5, createdAt=utc_iso(NOW)),
        fact("fact_00000003", "low", 0.3, createdAt=utc_iso(NOW)),
        fact("fact_00000004", "future", 0.45, createdAt=utc_iso(NOW + timedelta(30))),
        fact("fact_00000005", "undated", 0.42, createdAt="not a date"),
    )
    strategy = TimeDecayMerge(half_life_days=10)
    result = run(memory, {}, max_facts=4, strategy=strategy)
    assert contents(result) == ["today", "future", "undated", "one half-life"]
    assert [f["content"] for f in result.evicted] == ["low"]
    result = run(memory, {}, max_facts=3, strategy=strategy)
    assert [f["content"] for f in result.evicted] == ["one half-life", "low"]


def test_facts_with_unusable_confidence_are_evicted_first() -> None:
    memory = memory_with(
        fact("fact_00000001", "bool", True),  # type: ignore[arg-type]
        fact("fact_00000002", "nan", math.nan),
        fact("fact_00000003", "text", "0.99"),  # type: ignore[arg-type]
        fact("fact_00000004", "real", 0.05),
    )
    result = run(memory, {}, max_facts=1)
    assert contents(result) == ["real"]
    assert [f["content"] for f in result.evicted] == ["bool", "nan", "text"]


def test_category_cap_keeps_the_most_confident_in_order() -> None:
    memory = memory_with(
        fact("fact_00000001", "a", 0.5, category="goal"),
        fact("fact_00000002", "b", 0.9, category="goal"),
        fact("fact_00000003", "c", 0.7, category="goal"),
        fact("fact_00000004", "d", 0.7, category="goal"),
    )
    result = run(memory, {}, strategy=CategoryCapMerge(per_category=2))
    assert contents(result) == ["b", "c"]  # ties keep the older; order kept
    assert [f["content"] for f in result.evicted] == ["a", "d"]
    assert contents(run(memory, {}, strategy=CategoryCapMerge(per_category=4))) == list("abcd")


def test_a_section_update_replaces_a_group_that_is_not_an_object() -> None:
    memory = memory_with()
    memory["user"] = "broken"
    update = {"user": {"workContext": {"summary": "Nurse", "shouldUpdate": True}}}
    result = run(memory, update)
    assert result.memory["user"] == {"workContext": {"summary": "Nurse", "updatedAt": utc_iso(NOW)}}
    assert result.sections_updated == ["user.workContext"]
    assert (
        run(memory_with(), {"user": "x", "history": {"recentMonths": "x"}}).sections_updated == []
    )


def test_apply_updates_defaults_to_the_baseline_rules() -> None:
    """Without options: threshold 0.7 (inclusive), a cap of 100 facts, random fact ids, the
    current time, the source ``unknown`` and the baseline strategy (no merging)."""
    stored = [fact(f"fact_{k:08x}", f"stored fact number {k}", 0.9) for k in range(99)]
    update = {
        "newFacts": [new("stored fact number 7 again", 0.95), new("at the threshold", 0.7),
                     new("just below", 0.69)],
    }  # fmt: skip
    before = datetime.now(UTC).replace(microsecond=0)
    result = apply_updates(memory_with(*stored), update)
    after = datetime.now(UTC)
    assert [f["content"] for f in result.added] == [
        "stored fact number 7 again",
        "at the threshold",
    ]
    assert [f["content"] for f in result.skipped_below_threshold] == ["just below"]
    assert [f["content"] for f in result.evicted] == ["at the threshold"]
    assert result.merged == []
    (first, second) = result.added
    assert is_fact_id(first["id"]) and is_fact_id(second["id"]) and first["id"] != second["id"]
    assert first["source"] == "unknown"
    assert before <= datetime.fromisoformat(first["createdAt"]) <= after


def test_time_decay_halves_the_rank_at_exactly_one_half_life() -> None:
    # 0.8 one day old with a one-day half-life ranks exactly 0.4: a tie with 0.4 today, which
    # the older position in the list wins.
    memory = memory_with(
        fact("fact_00000001", "today", 0.4, createdAt=utc_iso(NOW)),
        fact("fact_00000002", "a day old", 0.8, createdAt=utc_iso(NOW - timedelta(days=1))),
    )
    result = run(memory, {}, max_facts=1, strategy=TimeDecayMerge(half_life_days=1))
    assert contents(result) == ["today"]
    assert [f["content"] for f in result.evicted] == ["a day old"]


def test_the_record_lists_evictions_and_merges() -> None:
    memory = memory_with(
        fact("fact_0000000a", "User likes green tea a lot", 0.5),
        fact("fact_0000000b", "Lives in Oslo", 0.6),
    )
    update = {"newFacts": [new("user likes green tea a lot!", 0.9), new("Plays chess", 0.8)]}
    result = run(memory, update, max_facts=2, strategy=NearDuplicateMerge())
    record = result.to_record()
    assert (record["evicted"], record["merged"]) == (
        [{"id": "fact_0000000b", "content": "Lives in Oslo", "confidence": 0.6}],
        [
            {
                "keptId": "fact_0000000a",
                "keptContent": "user likes green tea a lot!",
                "droppedContent": "User likes green tea a lot",
                "similarity": result.merged[0]["similarity"],
                "replaced": True,
            }
        ],
    )
    assert result.merged[0]["similarity"] >= NEAR_DUPLICATE_THRESHOLD


def test_a_stored_fact_without_confidence_ranks_lowest() -> None:
    memory = memory_with(fact("fact_00000001", "low", 0.05))
    del memory["facts"][0]["confidence"]
    memory["facts"].append(fact("fact_00000002", "real", 0.05))
    result = run(memory, {}, max_facts=1)
    assert contents(result) == ["real"]


def test_a_proposal_without_a_category_is_stored_as_context() -> None:
    result = run(memory_with(), {"newFacts": [{"content": "Plays chess", "confidence": 0.9}]})
    assert result.added[0]["category"] == "context"
    # A merge keeps the stored fact's category; a stored fact without one gets "context".
    stored = fact("fact_0000000a", "User likes green tea a lot", 0.5)
    del stored["category"]
    update = {"newFacts": [{"content": "user likes green tea a lot!", "confidence": 0.9}]}
    result = run(memory_with(stored), update, strategy=NearDuplicateMerge())
    assert result.memory["facts"][0]["category"] == "context"


def test_entries_that_are_not_facts_are_kept_and_skipped_by_every_step() -> None:
    for strategy in (BaselineMerge(), NearDuplicateMerge(), CategoryCapMerge(1)):
        memory = memory_with(fact("fact_0000000a", "Likes tea", 0.9))
        memory["facts"].insert(0, "not a fact")
        update = {
            "newFacts": [new("likes TEA"), new("Plays chess", 0.9, category="goal")],
            "factsToRemove": ["fact_missing"],
        }
        result = run(memory, update, strategy=strategy)
        assert contents_or_entries(result) == ["not a fact", "Likes tea", "Plays chess"], strategy


def contents_or_entries(result: ApplyResult) -> list[Any]:
    return [f["content"] if isinstance(f, dict) else f for f in result.memory["facts"]]


def test_facts_that_are_read_only_mappings_count_as_stored_facts() -> None:
    memory = memory_with(MappingProxyType(fact("fact_0000000a", "Likes tea", 0.9)))  # type: ignore[arg-type]
    result = BaselineMerge().apply_in_place(
        memory,
        {"newFacts": [new("likes TEA"), new("Plays chess")], "factsToRemove": []},
        thread_id="t",
        threshold=0.7,
        max_facts=10,
        now=NOW,
        new_id=SeededFactIds(1),
    )
    assert [f["content"] for f in result.added] == ["Plays chess"]
    assert [f["content"] for f in result.skipped_duplicate] == ["likes TEA"]


def test_of_equally_similar_stored_facts_the_first_is_merged() -> None:
    memory = memory_with(
        fact("fact_0000000a", "likes green tea", 0.5), fact("fact_0000000b", "likes green tea", 0.5)
    )
    result = run(
        memory, {"newFacts": [new("Likes green tea!", 0.9)]}, strategy=NearDuplicateMerge()
    )
    assert result.merged[0]["keptId"] == "fact_0000000a"
    assert contents(result) == ["Likes green tea!", "likes green tea"]


def test_a_plugin_strategy_shows_all_its_parameters() -> None:
    class Tuned(BaselineMerge):
        def params(self) -> dict[str, Any]:
            return {"a": 1, "b": "x"}

    assert repr(Tuned()) == "Tuned(a=1, b='x')"


def test_a_category_cap_combined_with_time_decay_ranks_by_age() -> None:
    """The category cap hands the current time on to the global cap's ranking."""

    class DecayingCategories(CategoryCapMerge, TimeDecayMerge):
        def __init__(self) -> None:
            CategoryCapMerge.__init__(self, per_category=5)
            TimeDecayMerge.__init__(self, half_life_days=1)

    memory = memory_with(
        fact("fact_00000001", "old", 0.9, createdAt=utc_iso(NOW - timedelta(days=3))),
        fact("fact_00000002", "new", 0.5, createdAt=utc_iso(NOW)),
    )
    assert contents(run(memory, {}, max_facts=1, strategy=DecayingCategories())) == ["new"]


def test_sections_after_an_unusable_one_are_still_updated() -> None:
    memory = memory_with()
    memory["user"]["topOfMind"] = {"summary": "Exams", "updatedAt": "2024-12-01T00:00:00Z"}
    update = {
        "user": {"workContext": "not a section", "personalContext": {"summary": "Has a dog",
                                                                    "shouldUpdate": True}},
        "history": {"recentMonths": {"summary": "Moved to Leeds", "shouldUpdate": True}},
    }  # fmt: skip
    result = run(memory, update)
    assert result.sections_updated == ["user.personalContext", "history.recentMonths"]
    assert result.memory["user"] == {
        "workContext": {"summary": "", "updatedAt": ""},
        "personalContext": {"summary": "Has a dog", "updatedAt": utc_iso(NOW)},
        "topOfMind": {"summary": "Exams", "updatedAt": "2024-12-01T00:00:00Z"},
    }
    only_history = run(memory, {"user": "x", "history": update["history"]})
    assert only_history.sections_updated == ["history.recentMonths"]


def test_a_memory_without_facts_starts_with_none() -> None:
    memory = memory_with()
    del memory["facts"]
    result = run(memory, {"newFacts": [new("Plays chess")]})
    assert contents(result) == ["Plays chess"]


def test_ids_given_to_one_batch_never_repeat() -> None:
    ids = iter(["fact_0000000c", "fact_0000000c", "fact_0000000d"])
    result = BaselineMerge().apply(
        memory_with(),
        {"newFacts": [new("Plays chess"), new("Has a dog")]},
        thread_id=None,
        threshold=0.5,
        max_facts=10,
        now=NOW,
        new_id=lambda: next(ids),
    )
    assert [f["id"] for f in result.added] == ["fact_0000000c", "fact_0000000d"]
