"""Fact matchers: the lexical matcher, the two-prompt LLM judge, the registry."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from memlab.backends.caching.cache import CachedBackend
from memlab.backends.scripted import ScriptedBackend
from memlab.core.jsondoc.similarity import count_duplicates, dice
from memlab.core.pipeline.llm import CompletionRequest
from memlab.errors import MemlabError
from memlab.matching.base import LexicalMatcher, MatchResult, explain, matcher_name
from memlab.matching.default_matcher import (
    DefaultMatcher,
    EmbeddingMatcher,
    clear_shared_verdicts,
)
from memlab.matching.judge import FACT_JUDGE_PROMPTS, LLMJudgeMatcher
from memlab.matching.matchers import (
    MATCHERS,
    MatcherError,
    default_matcher,
    matcher_help,
    resolve_matcher,
)


def test_lexical_coverage_is_asymmetric() -> None:
    matcher = LexicalMatcher()
    assert matcher.covers(
        "The user works as a pediatric nurse in Leeds", "Works as a nurse in Leeds"
    )
    assert not matcher.covers("Works as a nurse", "Works as a pediatric nurse in Leeds")
    assert matcher.covers("在上海读博士", "在上海读博士")
    result = matcher.match("Works as a nurse", "Works as a pediatric nurse in Leeds")
    assert result == MatchResult(0.5, False, "gold tokens covered 0.50 < 0.6")  # 2 of 4 tokens
    assert (matcher.name, LexicalMatcher(threshold=0.5).name) == (
        "lexical",
        "lexical(threshold=0.5)",
    )


def test_duplicate_levels_nest() -> None:
    counts = count_duplicates(
        ["Loves hiking", "Loves hiking", "loves hiking!", "Enjoys hiking a lot"]
    )
    assert (counts.exact, counts.normalized, counts.near) == (1, 2, 2)
    assert dice("Loves hiking", "loves hiking!") == 1.0


def judge_backend() -> ScriptedBackend:
    """A deterministic judge: lenient says yes when the stored fact names the gold city,
    strict also wants the stored fact to say "lives"."""

    def answer(request: CompletionRequest) -> str:
        prompt = str(request.messages[-1]["content"])
        gold = prompt.split("GOLD: ")[1].split("\n")[0]
        stored = prompt.split("STORED: ")[1].split("\n")[0]
        city = gold.split()[-1]
        strict = "every claim" in prompt
        yes = city in stored and (not strict or "lives" in stored.casefold())
        return "Yes." if yes else "no"

    return ScriptedBackend(function=answer)


def test_judge_asks_both_prompts_and_reports_their_agreement() -> None:
    backend = judge_backend()
    judge = LLMJudgeMatcher(backend)
    assert judge.prompts == ("lenient", "strict") and set(FACT_JUDGE_PROMPTS) >= set(judge.prompts)
    moved = judge.match("Recently relocated to Lisbon", "Lives in Lisbon")
    assert moved == MatchResult(0.5, True, "judge: lenient yes, strict no")
    assert judge.covers("User lives in Lisbon", "Lives in Lisbon")
    assert not judge.covers("Likes jazz", "Lives in Lisbon")  # no shared word: no call
    assert backend.call_count == 4  # two pairs x two prompts, the memo answers repeats
    assert judge.covers("Recently relocated to Lisbon", "Lives in Lisbon")
    assert backend.call_count == 4
    assert judge.under("strict").covers("Recently relocated to Lisbon", "Lives in Lisbon") is False
    agreement = judge.agreement()
    assert (agreement.pairs, agreement.agreed, agreement.rate) == (2, 1, 0.5)
    with pytest.raises(ValueError, match="unknown judge prompt"):
        LLMJudgeMatcher(backend, prompts=("harsh",))


def test_judge_verdicts_are_cached_on_disk(tmp_path: Path) -> None:
    backend = judge_backend()
    first = LLMJudgeMatcher(CachedBackend(backend, tmp_path / "cache"))
    assert first.match("Moved to Lisbon last year", "Lives in Lisbon").matched
    assert backend.call_count == 2  # one call per prompt
    second = LLMJudgeMatcher(CachedBackend(backend, tmp_path / "cache"))
    assert second.match("Moved to Lisbon last year", "Lives in Lisbon").reason == (
        "judge: lenient yes, strict no"
    )
    assert backend.call_count == 2  # both prompts answered from the cache
    assert len(list((tmp_path / "cache").rglob("*.json"))) == 2


@pytest.mark.needs_embeddings
def test_registry_resolves_the_embeddings_matcher() -> None:
    assert isinstance(resolve_matcher("embeddings"), EmbeddingMatcher)
    assert resolve_matcher("default").name == "default"  # type: ignore[attr-defined]


def test_registry_resolves_every_name() -> None:
    assert isinstance(resolve_matcher("lexical"), LexicalMatcher)
    assert resolve_matcher("default-lexical").name == "default-lexical"  # type: ignore[attr-defined]
    default = resolve_matcher("default")
    assert isinstance(default, DefaultMatcher) and default.name == default_matcher().name
    backend = judge_backend()
    judge = resolve_matcher("judge:scripted", backend_factory=lambda spec: backend)
    assert isinstance(judge, LLMJudgeMatcher) and matcher_name(judge) == "judge:scripted"
    assert "judge:BACKEND" in matcher_help() and "judge" in MATCHERS
    with pytest.raises(MatcherError, match="known matchers: default, default-lexical"):
        resolve_matcher("fuzzy")
    with pytest.raises(MatcherError, match="judge matcher needs a backend"):
        resolve_matcher("judge")
    with pytest.raises(MatcherError):
        resolve_matcher("lexical:extra")
    assert issubclass(MatcherError, MemlabError)


def test_explain_wraps_a_plain_matcher() -> None:
    class Exact:
        def covers(self, stored: str, gold: str) -> bool:
            return stored == gold

    assert explain(Exact(), "a", "a") == MatchResult(1.0, True, "verdict only (no explanation)")
    assert matcher_name(Exact()) == "Exact"
    assert explain(LexicalMatcher(), "Plays chess", "Plays chess").matched


class _OneVectorEmbedder:
    """Every text gets the same vector: a stand-in whose name says nothing about it."""

    name = "wordllama-l2_supercat-256"  # the bundled model's name, on purpose

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [[1.0, 0.0] for _ in texts]


def test_verdicts_are_shared_by_matchers_of_one_configuration_only() -> None:
    clear_shared_verdicts()
    pair = ("Works as a nurse in Lisbon", "Is a nurse")
    first, second = DefaultMatcher(), DefaultMatcher()
    verdict = first.match(*pair)
    assert second._verdicts is first._verdicts and second._verdicts[pair] is verdict
    strict = DefaultMatcher(threshold=0.99)
    assert strict._verdicts is not first._verdicts and pair not in strict._verdicts
    assert strict.match(*pair).matched is False and verdict.score < 0.99
    stand_in = DefaultMatcher(embedder=_OneVectorEmbedder())
    assert stand_in._verdicts is not first._verdicts and not stand_in._verdicts
    clear_shared_verdicts()
    assert pair not in DefaultMatcher()._verdicts
