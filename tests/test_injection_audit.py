"""Injection audit: exact tokens and dropped facts under hand-computed budgets, the policies,
and the audit inside a sweep (coverage by budget and policy)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from builders import marker_backend, one_turn, sweep_scripted, update, write_owners

from memlab.core.pipeline.config import MemoryConfig
from memlab.core.pipeline.injection import Injection, format_memory_for_injection, render_injection
from memlab.datasets.models import Session
from memlab.grids.grid import Grid
from memlab.matching.embeddings import EmbeddingsUnavailableError
from memlab.runs.run import Run
from memlab.scoring.qa.injection_audit import (
    INJECTION_COUNTS,
    audit_injection,
    inject,
    injection_counts,
    next_query,
    policy_embedder,
    policy_identity,
    policy_injector,
)
from memlab.sweeps.plan import identity_changes, plan_sweep


def fact(fact_id: str, content: str, confidence: float, created: str) -> dict[str, Any]:
    return {"id": fact_id, "content": content, "category": "context",
            "confidence": confidence, "createdAt": f"2025-{created}T00:00:00Z"}  # fmt: skip


HIKING = fact("a", "Loves hiking", 0.95, "01-01")  # line "- [context | 0.95] Loves hiking"
NURSE = fact("b", "Works as a nurse in Leeds", 0.9, "03-01")
CAT = fact("c", "Has a cat named Tom", 0.7, "02-01")
FACTS = {"facts": [HIKING, NURSE, CAT]}


def ids(facts: Any) -> list[str]:
    return [f["id"] for f in facts]


# Char counter: ceil(chars / 4). "Facts:" costs 2; each "\n- [context | 0.95] ..." line
# 1 + 19 + len(content) chars: hiking 32 -> 8, nurse 45 -> 12, cat 39 -> 10. Facts are kept
# while 2 + the line costs fit: budgets 10, 22 and 32. The texts have 6 + 1 + 31 = 38,
# 38 + 45 = 83 and 83 + 39 = 122 characters: 10, 21 and 31 tokens.
# tiktoken (cl100k_base): "Facts:" 3 tokens, the lines 12, 16 and 15; texts 14, 30, 45 tokens.
BUDGETS = [
    ("char", 9, 0, [], ["a", "b", "c"]),
    ("char", 10, 10, ["a"], ["b", "c"]),
    ("char", 21, 10, ["a"], ["b", "c"]),
    ("char", 22, 21, ["a", "b"], ["c"]),
    ("char", 32, 31, ["a", "b", "c"], []),
    ("tiktoken", 14, 0, [], ["a", "b", "c"]),
    ("tiktoken", 15, 14, ["a"], ["b", "c"]),
    ("tiktoken", 31, 30, ["a", "b"], ["c"]),
    ("tiktoken", 46, 45, ["a", "b", "c"], []),
]


@pytest.mark.parametrize(("counting", "budget", "tokens", "injected", "dropped"), BUDGETS)
def test_tokens_and_dropped_facts(
    counting: str, budget: int, tokens: int, injected: list[str], dropped: list[str]
) -> None:
    found = render_injection(FACTS, budget, token_counting=counting)
    assert (found.tokens, ids(found.injected), ids(found.dropped)) == (tokens, injected, dropped)
    assert found.text == format_memory_for_injection(FACTS, budget, token_counting=counting)


# With a 290-character work summary, "User Context:\n- Work: " + summary is 312 characters
# (78 tokens) and "\n\nFacts:" 2 more: 20 tokens of a 100-token budget are left for facts.
PADDED = {"user": {"workContext": {"summary": "x" * 290}}, "facts": [HIKING, NURSE, CAT]}
CONFIG = MemoryConfig(max_injection_tokens=100, token_counting="char")
CAT_QUESTION = "Any tips for my cat Tom? He keeps scratching."


@pytest.mark.parametrize(
    ("policy", "tokens", "injected", "dropped"),
    [
        # hiking 8 + nurse 12 = 20 fit; the cat (10 more) does not: 312 + 8 + 32 + 45 = 397
        ("confidence", 100, ["a", "b"], ["c"]),
        # newest first: nurse (March) 12 fits, the cat (February) 10 does not: 365 chars
        ("recency", 92, ["b"], ["c", "a"]),
        # the cat is the only fact the question mentions: cat 10 + hiking 8; 391 chars
        ("relevance", 98, ["c", "a"], ["b"]),
    ],
)
def test_policies_under_a_budget(
    policy: str, tokens: int, injected: list[str], dropped: list[str]
) -> None:
    audit = audit_injection(PADDED, CONFIG, policy, CAT_QUESTION)
    assert audit == {"enabled": True, "policy": policy, "tokens": tokens, "facts": 3,
                     "injected": injected, "dropped": dropped}  # fmt: skip


def test_relevance_by_embeddings_ranks_the_matching_fact_first() -> None:
    try:
        embedder = policy_embedder("relevance_embeddings")
    except EmbeddingsUnavailableError:
        pytest.skip("needs memlab[embeddings]")
    # No shared word: "kitten" and "sofa" are close to "cat" only in the embeddings.
    question = "My kitten keeps scratching the sofa, what can I do?"
    lexical = audit_injection(PADDED, CONFIG, "relevance", question)
    assert lexical["injected"] == ["a", "b"]  # no overlap: the confidence order
    audit = audit_injection(PADDED, CONFIG, "relevance_embeddings", question, embedder)
    assert audit["injected"][0] == "c"


def test_disabled_injection_gives_the_agent_nothing() -> None:
    config = MemoryConfig(injection_enabled=False)
    audit = audit_injection(PADDED, config, "confidence", CAT_QUESTION)
    assert (audit["enabled"], audit["tokens"], audit["injected"], audit["facts"]) == (
        False, 0, [], 3,
    )  # fmt: skip


T0 = datetime(2025, 5, 5, 9, 0, tzinfo=UTC)
GOLD = [
    {"id": "nurse", "content": "Works as a nurse in Leeds", "category": "context"},
    {"id": "hiking", "content": "Loves hiking", "category": "preference"},
    {"id": "cat", "content": "Has a cat named Tom", "category": "context"},
]
GADGETS = [(f"Owns gadget number {k}", 0.95) for k in range(10)]
REPLIES = {
    "[first]": update(
        *GADGETS,
        ("Works as a nurse in Leeds", 0.9),
        ("Loves hiking", 0.9),
        ("Has a cat named Tom", 0.8),
    ),
}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    tmp: Path = tmp_path_factory.mktemp("audit")
    owner = {
        "user_id": "ann",
        "sessions": [
            one_turn("ann-1", T0, "[first]", facts=GOLD),
            one_turn("ann-2", T0 + timedelta(days=1), CAT_QUESTION),
        ],
    }
    data = tmp / "ann.jsonl"
    write_owners(data, [owner])
    grid = {
        "name": "audit",
        "replay_mode": "per_session",
        "base": {"token_counting": "char", "max_facts": 20},
        "axes": {
            "max_injection_tokens": [100, 2000],
            "injection_policy": ["confidence", "relevance"],
        },
    }
    backend = marker_backend(REPLIES)
    return sweep_scripted(data, grid, backend, tmp / "runs")


def test_coverage_by_budget_and_policy(run: Run) -> None:
    summary = run.summary.set_index("label")
    # 100 tokens: "Facts:" 2 + nine 10-token gadget lines = 92; the tenth would make 102.
    # By relevance the cat (10) goes first, then eight gadgets. 2000 tokens: everything,
    # 6 + 10 * 40 + 45 + 32 + 39 = 522 characters, 131 tokens.
    expected = {
        "budget=100 policy=confidence": (0.0, 92, 4),
        "budget=100 policy=relevance": (1 / 3, 92, 4),
        "budget=2000 policy=confidence": (1.0, 131, 0),
        "budget=2000 policy=relevance": (1.0, 131, 0),
    }
    for label, (coverage, tokens, dropped) in expected.items():
        row = summary.loc[label]
        assert row["injected_gold_coverage"] == pytest.approx(coverage), label
        assert (row["injection_tokens_mean"], row["injection_dropped"]) == (tokens, dropped)


def test_injection_settings_change_the_lane_not_the_memory(run: Run) -> None:
    memories = {
        json.dumps(run.final_memory(lane_id, "ann"), sort_keys=True) for lane_id in run.lanes
    }
    assert len(run.lanes) == 4 and len(memories) == 1  # same fact ids, same facts
    identities = [run.lane_info(lane_id)["identity"]["injection"] for lane_id in run.lanes]
    assert len({json.dumps(i, sort_keys=True) for i in identities}) == 4


def test_the_record_keeps_each_audit(run: Run) -> None:
    lane = next(
        lane_id
        for lane_id, config in run.lanes.items()
        if config.max_injection_tokens == 100 and config.injection_policy == "relevance"
    )
    path = run.path / "lanes" / lane / "owners" / "ann.json"
    first, last = json.loads(path.read_text(encoding="utf-8"))["injections"]
    assert last is None  # nothing follows the last session
    assert (first["tokens"], len(first["injected"]), len(first["dropped"])) == (92, 9, 4)


def test_injection_settings_enter_the_identity_only_when_set(tmp_path: Path) -> None:
    owner = {"user_id": "ann", "sessions": [one_turn("a-1", T0, "[first]", facts=GOLD)]}
    data = tmp_path / "ann.jsonl"
    write_owners(data, [owner])

    def lane(**base: Any) -> Any:
        grid = Grid.from_mapping({"name": "ids", "base": base})
        plan = plan_sweep(
            data, grid, runs_dir=tmp_path, backend_factory=lambda s: marker_backend({})
        )
        return plan.lanes[0]

    default, smaller = lane(), lane(max_injection_tokens=1000)
    # Lanes recorded before the injection settings existed keep their ids.
    assert "injection" not in default.identity
    assert smaller.identity["injection"]["max_tokens"] == 1000
    assert identity_changes(default.identity, smaller.identity) == ["injection settings changed"]
    assert default.config.point_id == smaller.config.point_id  # the same fact ids


# --- the audit's parts, one rule each ----------------------------------------------------------


def test_a_policy_identity_names_the_embedder_only_when_it_has_one() -> None:
    assert policy_identity("confidence") == {"name": "confidence"}
    try:
        embedder = policy_embedder("relevance_embeddings")
    except EmbeddingsUnavailableError:
        pytest.skip("needs memlab[embeddings]")
    assert embedder is not None
    assert policy_identity("relevance_embeddings") == {
        "name": "relevance_embeddings",
        "embedder": embedder.name,
    }


def _session(*turns: tuple[str, str]) -> Session:
    messages = [{"role": role, "content": text, "timestamp": T0} for role, text in turns]
    return Session.model_validate({"thread_id": "t", "started_at": T0, "messages": messages})


def test_the_next_query_is_the_first_human_message() -> None:
    assert next_query(_session(("ai", "Hello"), ("human", "cat?"), ("human", "dog?"))) == "cat?"
    assert next_query(_session(("ai", "Hello"))) == ""


def test_ties_and_undated_facts_keep_the_confidence_order() -> None:
    # Same day: the higher confidence goes first; no date at all ranks last under recency.
    low = fact("low", "Reads novels", 0.6, "04-01")
    high = fact("high", "Plays chess", 0.9, "04-01")
    undated = {"id": "old", "content": "Owns a bike", "category": "context", "confidence": 1.0}
    audit = audit_injection({"facts": [low, undated, high]}, CONFIG, "recency", "")
    assert audit["injected"] == ["high", "low", "old"]


def test_facts_without_text_or_list_do_not_break_the_audit() -> None:
    odd = {"id": "odd", "content": None, "confidence": 0.99}
    audit = audit_injection({"facts": [odd, HIKING]}, CONFIG, "relevance", "hiking")
    assert (audit["facts"], audit["injected"]) == (1, ["a"])  # "odd" has nothing to show
    for memory in ({}, {"facts": "not a list"}):
        record = audit_injection(memory, CONFIG, "confidence", "")
        assert (record["tokens"], record["facts"], record["injected"]) == (0, 0, [])
        off = audit_injection(memory, MemoryConfig(injection_enabled=False), "confidence", "")
        assert off["facts"] == 0


def test_a_disabled_injection_is_empty_in_every_field() -> None:
    config = MemoryConfig(injection_enabled=False)
    assert inject(PADDED, config, "confidence", CAT_QUESTION) == Injection("", 0)
    assert audit_injection(PADDED, config, "recency", "") == {
        "enabled": False, "policy": "recency", "tokens": 0, "facts": 3,
        "injected": [], "dropped": [],
    }  # fmt: skip


def test_policy_errors_say_what_is_wrong() -> None:
    with pytest.raises(ValueError, match=r"^the relevance_embeddings policy needs an embedder$"):
        inject(FACTS, CONFIG, "relevance_embeddings", "cat")
    with pytest.raises(ValueError, match="unknown injection policy 'newest'; known policies"):
        inject(FACTS, CONFIG, "newest", "cat")


def _states(text: str, gold: str) -> bool:
    return gold.lower() in text.lower()


def test_session_counts_of_an_audit() -> None:
    no_text = {"id": "d", "content": None}  # a stored fact without text states nothing
    snapshot = {"facts": [HIKING, NURSE, CAT, no_text]}
    active = {"g1": "Loves hiking", "g2": "Has a cat named Tom", "g3": "Speaks Welsh"}
    audit = {"tokens": 21, "facts": 3, "injected": ["a", "b", "d"], "dropped": ["c"]}
    assert injection_counts(audit, snapshot, active, _states) == {
        "injections": 1, "injection_tokens": 21, "injection_facts": 3,
        "injection_dropped": 1, "gold_injected": 1, "gold_injectable": 3,
    }  # fmt: skip
    # Missing fields count as nothing; a session without an audit counts zeros.
    assert injection_counts({}, {}, active, _states) == {
        "injections": 1, "injection_tokens": 0, "injection_facts": 0,
        "injection_dropped": 0, "gold_injected": 0, "gold_injectable": 3,
    }  # fmt: skip
    zeros = injection_counts(None, snapshot, active, _states)
    assert zeros == dict.fromkeys(INJECTION_COUNTS, 0)
    assert all(type(v) is int for v in zeros.values())


def test_the_lane_injector_is_the_audit_with_the_lanes_settings() -> None:
    # The memory-QA read path: the same injection as the audit's for that lane and query.
    injector = policy_injector(CONFIG, "relevance")
    assert ids(injector(PADDED, CAT_QUESTION).injected) == ["c", "a"]
    assert ids(policy_injector(CONFIG, "recency")(PADDED, "").injected) == ["b"]
    try:
        embedder = policy_embedder("relevance_embeddings")
    except EmbeddingsUnavailableError:
        pytest.skip("needs memlab[embeddings]")
    question = "My kitten keeps scratching the sofa, what can I do?"
    by_meaning = policy_injector(CONFIG, "relevance_embeddings", embedder)
    assert ids(by_meaning(PADDED, question).injected)[0] == "c"
