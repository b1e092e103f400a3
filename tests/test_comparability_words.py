"""The words of each difference between two lanes, as a user reads them in a refusal or a
banner: every expected line is written out by hand from the facts below."""

from __future__ import annotations

from dataclasses import replace

import pytest

from memlab.scoring.comparing.comparability import (
    Difference,
    JudgeFacts,
    LaneFacts,
    MixedComparisonError,
    QAFacts,
    check_pairs,
    differences,
    kind_of,
)

JUDGE = JudgeFacts("sim:careful", "model simulated-careful", "b" * 64, "max_tokens 32")
QA = QAFacts(
    answerer="sim:careful",
    answerer_model="model simulated-careful",
    answer_prompt="default",
    answer_prompt_sha256="a" * 64,
    answer_settings="max_tokens 64",
    judges={"lenient": JUDGE},
    conditions=("memory", "none"),
    answer_key="original",
)


def _lane(run: str, **changes: object) -> LaneFacts:
    fields: dict[str, object] = {
        "run": run,
        "lane": "x",
        "dataset": "sha256 0123",
        "owners": frozenset({"u1", "u2"}),
        "matcher": "default",
        "settings": {"max_facts": 100},
        "qa": QA,
    }
    return LaneFacts(**{**fields, **changes})  # type: ignore[arg-type]


def _words(a: LaneFacts, b: LaneFacts) -> list[str]:
    return [str(d) for d in differences(a, b)]


def test_the_kinds_are_named_simulated_and_real() -> None:
    assert kind_of(_lane("a", simulated=True)) == "simulated"
    assert kind_of(_lane("a")) == "real"
    assert _words(_lane("a"), _lane("b", simulated=True)) == ["backend kind: real vs simulated"]


def test_three_owners_apart_are_listed_in_full_and_four_are_cut() -> None:
    three = _lane("b", owners=frozenset({"u1", "u2", "u3", "u4", "u5"}))
    assert _words(_lane("a"), three) == [
        "owners: 2 owners vs 5 owners (3 not in the other: u3, u4, u5)"
    ]
    four = _lane("b", owners=frozenset({"u1", "u3", "u4", "u5", "u6"}))
    assert _words(_lane("a"), four) == [
        "owners: 2 owners (1 not in the other: u2) vs "
        "5 owners (4 not in the other: u3, u4, u5, ...)"
    ]


def test_the_answer_key_and_a_lane_fact_are_both_listed() -> None:
    other = _lane("b", matcher="lexical", qa=replace(QA, answer_key="audited"))
    assert _words(_lane("a"), other) == [
        "answer key: original vs audited",
        "matcher: default vs lexical",
    ]


def test_a_setting_one_lane_lacks_is_unset() -> None:
    assert differences(_lane("a"), _lane("b", settings={})) == [
        Difference("setting max_facts", "100", "unset")
    ]
    assert _words(_lane("a", settings={}), _lane("b", settings={"top_k": 0})) == [
        "setting top_k: unset vs 0"
    ]


def test_the_answer_prompt_is_named_with_twelve_characters_of_its_hash() -> None:
    other = replace(QA, answer_prompt="terse", answer_prompt_sha256="0123456789abcdef" * 4)
    assert _words(_lane("a"), _lane("b", qa=other)) == [
        f"answer prompt: default ({'a' * 12}) vs terse (0123456789ab)"
    ]
    # A hash one run did not record is unknown, and so is one neither recorded.
    unrecorded = replace(QA, answer_prompt_sha256="")
    assert _words(_lane("a"), _lane("b", qa=unrecorded)) == [
        f"answer prompt: default ({'a' * 12}) vs unknown"
    ]
    both = _words(_lane("a", qa=unrecorded), _lane("b", qa=replace(unrecorded)))
    assert both == ["answer prompt: unknown vs unknown"]


def test_a_judges_backend_is_named_and_its_model_only_under_the_same_backend() -> None:
    moved = replace(JUDGE, backend="openai:gpt-4o-mini", model="model gpt-4o-mini")
    found = differences(_lane("a"), _lane("b", qa=replace(QA, judges={"lenient": moved})))
    assert found == [
        Difference("judge", "sim:careful", "openai:gpt-4o-mini", "'lenient'", "backend")
    ]
    assert str(found[0]) == "judge 'lenient': backend sim:careful vs openai:gpt-4o-mini"
    assert found[0].blocking
    rebuilt = replace(JUDGE, model="model simulated-careful 2")
    found = differences(_lane("a"), _lane("b", qa=replace(QA, judges={"lenient": rebuilt})))
    assert found == [
        Difference(
            "judge", "model simulated-careful", "model simulated-careful 2", "'lenient'", "model"
        )
    ]


def test_the_refusal_says_how_to_compare_anyway() -> None:
    with pytest.raises(MixedComparisonError) as caught:
        check_pairs([(_lane("a"), _lane("b", matcher="lexical"))])
    assert str(caught.value) == (
        "b: x vs a: x: different matcher: default vs lexical; the delta would mix in that "
        "difference (compare lanes measured alike, or pass --allow-mixed / allow_mixed=True to "
        "compare anyway)"
    )
