"""The words of each difference between two lanes, as a user reads them in a refusal or a
banner: every expected line is written out by hand from the facts below. Lane ``b`` is
compared against lane ``a`` (the baseline), and a line names ``b`` first: so its value comes
first too."""

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
    assert _words(_lane("a"), _lane("b", simulated=True)) == ["backend kind: simulated vs real"]


def test_three_owners_apart_are_listed_in_full_and_four_are_cut() -> None:
    three = _lane("b", owners=frozenset({"u1", "u2", "u3", "u4", "u5"}))
    assert _words(_lane("a"), three) == [
        "owners: 5 owners (3 not in the other: u3, u4, u5) vs 2 owners"
    ]
    four = _lane("b", owners=frozenset({"u1", "u3", "u4", "u5", "u6"}))
    assert _words(_lane("a"), four) == [
        "owners: 5 owners (4 not in the other: u3, u4, u5, ...) vs "
        "2 owners (1 not in the other: u2)"
    ]


def test_the_answer_key_and_a_lane_fact_are_both_listed() -> None:
    other = _lane("b", matcher="lexical", qa=replace(QA, answer_key="audited"))
    assert _words(_lane("a"), other) == [
        "answer key: audited vs original",
        "matcher: lexical vs default",
    ]


def test_a_setting_one_lane_lacks_is_unset() -> None:
    assert differences(_lane("a"), _lane("b", settings={})) == [
        Difference("setting max_facts", "100", "unset")
    ]
    assert _words(_lane("a", settings={}), _lane("b", settings={"top_k": 0})) == [
        "setting top_k: 0 vs unset"
    ]


def test_the_answer_prompt_is_named_with_twelve_characters_of_its_hash() -> None:
    other = replace(QA, answer_prompt="terse", answer_prompt_sha256="0123456789abcdef" * 4)
    assert _words(_lane("a"), _lane("b", qa=other)) == [
        f"answer prompt: terse (0123456789ab) vs default ({'a' * 12})"
    ]
    # A hash one run did not record is unknown, and so is one neither recorded.
    unrecorded = replace(QA, answer_prompt_sha256="")
    assert _words(_lane("a"), _lane("b", qa=unrecorded)) == [
        f"answer prompt: unknown vs default ({'a' * 12})"
    ]
    both = _words(_lane("a", qa=unrecorded), _lane("b", qa=replace(unrecorded)))
    assert both == ["answer prompt: unknown vs unknown"]


def test_a_judges_backend_is_named_and_its_model_only_under_the_same_backend() -> None:
    moved = replace(JUDGE, backend="openai:gpt-4o-mini", model="model gpt-4o-mini")
    found = differences(_lane("a"), _lane("b", qa=replace(QA, judges={"lenient": moved})))
    assert found == [
        Difference("judge", "sim:careful", "openai:gpt-4o-mini", "'lenient'", "backend")
    ]
    assert str(found[0]) == "judge 'lenient': backend openai:gpt-4o-mini vs sim:careful"
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
        "b: x vs a: x: different matcher: lexical vs default; the delta would mix in that "
        "difference (compare lanes measured alike, or pass --allow-mixed / allow_mixed=True to "
        "compare anyway)"
    )


@pytest.mark.parametrize("allow_mixed", [False, True])
def test_each_value_stands_where_its_lane_is_named(allow_mixed: bool) -> None:
    """Whichever lane is the baseline, the line names the candidate and gives its answerer
    first: read the other way round, it would credit each lane with the other's answerer."""
    careful, sloppy = _lane("careful"), _lane("sloppy", qa=replace(QA, answerer="sim:sloppy"))
    cases = [
        (careful, sloppy, "sloppy: x vs careful: x: different answerer: sim:sloppy vs sim:careful"),
        (sloppy, careful, "careful: x vs sloppy: x: different answerer: sim:careful vs sim:sloppy"),
    ]
    for (base, cand, words), sides in zip(
        cases, [("sim:careful", "sim:sloppy"), ("sim:sloppy", "sim:careful")], strict=True
    ):
        if allow_mixed:
            assert check_pairs([(base, cand)], allow_mixed=True) == [f"mixed comparison: {words}"]
            continue
        with pytest.raises(MixedComparisonError) as caught:
            check_pairs([(base, cand)])
        assert str(caught.value).startswith(f"{words}; ")
        # The fields keep their sides: ``a`` the baseline's value, ``b`` the candidate's.
        assert (caught.value.difference.a, caught.value.difference.b) == sides
