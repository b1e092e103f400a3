"""Fact matchers and duplicate counting."""

from __future__ import annotations

from memlab.backends.base import CompletionRequest
from memlab.backends.scripted import ScriptedBackend
from memlab.eval.matching import LexicalMatcher, LLMJudgeMatcher, count_duplicates, dice


def test_lexical_coverage_is_asymmetric() -> None:
    matcher = LexicalMatcher()
    assert matcher.covers(
        "The user works as a pediatric nurse in Leeds", "Works as a nurse in Leeds"
    )
    assert not matcher.covers("Works as a nurse", "Works as a pediatric nurse in Leeds")
    assert matcher.covers("在上海读博士", "在上海读博士")


def test_duplicate_levels_nest() -> None:
    counts = count_duplicates(
        ["Loves hiking", "Loves hiking", "loves hiking!", "Enjoys hiking a lot"]
    )
    assert (counts.exact, counts.normalized, counts.near) == (1, 2, 2)
    assert dice("Loves hiking", "loves hiking!") == 1.0


def test_llm_judge_prefilters_and_memoises() -> None:
    def judge(request: CompletionRequest) -> str:
        prompt = str(request.messages[-1]["content"])
        return "Yes." if "Lisbon" in prompt.split("STORED:")[1] else "no"

    backend = ScriptedBackend(function=judge)
    matcher = LLMJudgeMatcher(backend)
    assert matcher.covers("Recently relocated to Lisbon", "Lives in Lisbon")
    assert matcher.covers("Recently relocated to Lisbon", "Lives in Lisbon")  # memoised
    assert not matcher.covers("Likes jazz", "Lives in Lisbon")  # no shared token: no call
    assert backend.call_count == 1
