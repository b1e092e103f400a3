"""Merge strategies: every rule of the DeerFlow-compatible baseline, and the alternatives."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memlab.core.contract import MINIMAL_VALID_UPDATE
from memlab.core.document import (
    HISTORY_SECTIONS,
    USER_SECTIONS,
    SeededFactIds,
    create_empty_memory,
    is_fact_id,
    normalize_fact_text,
    random_fact_ids,
    utc_iso,
)
from memlab.core.merge import (
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
from memlab.core.similarity import NEAR_DUPLICATE_THRESHOLD, count_duplicates, near_duplicate_score

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
