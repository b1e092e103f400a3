"""Simulated-model profiles as declared data: defaults, validation errors, derived shares,
draws at their edges, the wording functions and the loader's messages.

Fast (no simulated replay), so that ``scripts/mutation.py`` runs it for every mutant of
``memlab.simulation.profile_model``, ``profile`` and ``fact_texts``. A profile's draws decide
every simulated run, so a changed default, draw or wording changes what the validation tests
measure.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from memlab.core.jsondoc.parsing import FailureCategory
from memlab.simulation.fact_texts import INVENTED_FACTS, leaked, restated, worded, wordings
from memlab.simulation.profile import BUILTIN_PROFILES, PROFILES, SimProfileError, load_profile
from memlab.simulation.profile_model import (
    WORDING_STYLES,
    SimProfile,
    SimQAProfile,
    SimTieredProfile,
    uniform,
)

F = FailureCategory


def test_the_defaults_are_declared_whole() -> None:
    assert SimProfile(name="x").model_dump() == {
        "name": "x",
        "description": "",
        "propose_rate": 0.8,
        "wording": {"verbatim": 1.0},
        "confidence": {0.9: 1.0},
        "restate_rate": 0.0,
        "invent_rate": 0.0,
        "invented_confidence": None,
        "remove_retracted": 1.0,
        "leak_rate": 0.0,
        "failures": {},
        "qa": {
            "answer_rate": 0.9,
            "abstain_rate": 0.7,
            "trap_rate": 0.3,
            "judge_leniency": {"lenient": 0.6, "strict": 0.05},
            "default_leniency": 0.3,
        },
        "tiered": {
            "summary_keep_rate": 0.9,
            "importance": {0.5: 0.2, 0.7: 0.2, 0.9: 0.6},
            "other_importance": {0.3: 1.0},
            "compress_keep_rate": 0.8,
        },
        "procedural": {"learn_rate": 0.8, "step_keep_rate": 0.9, "answer_step_rate": 0.9},
        "prompt_effects": (),
        "draws": "coupled",
    }
    assert (WORDING_STYLES, BUILTIN_PROFILES) == (
        ("verbatim", "terse"),
        ("careful", "sloppy", "chatty", "attentive"),
    )


def test_the_builtin_profiles_declare_their_rates() -> None:
    careful = load_profile("careful")
    assert (careful.propose_rate, careful.remove_retracted, careful.invent_rate) == (0.9, 0.9, 0.0)
    assert careful.confidence == {0.6: 0.1, 0.8: 0.2, 0.95: 0.7}
    assert careful.failures == {F.FENCED: 0.05, F.TRUNCATED: 0.02}
    sloppy = load_profile("sloppy")
    assert sloppy.failure_rate() == pytest.approx(0.35)
    assert sloppy.invented_confidence == {0.4: 0.4, 0.6: 0.4, 0.9: 0.2}
    chatty = load_profile("chatty")
    assert (chatty.propose_rate, chatty.restate_rate, chatty.invent_rate) == (1.0, 0.5, 1.5)


def test_uniform_draws_are_fixed_by_their_key() -> None:
    # Every simulated run depends on these numbers: changing the derivation changes them all.
    assert uniform("a", 1) == 0.5141306901658262
    assert uniform() == 0.8894159948913374
    assert uniform("a", 1) != uniform("a1") and uniform("a", "1") == uniform("a", 1)
    digest = hashlib.sha256(b"a\x1f1").digest()
    assert uniform("a", 1) == int.from_bytes(digest[:7], "big") / 2**56
    assert all(0.0 <= uniform(i) < 1.0 for i in range(200))


def test_invented_facts_are_fixed() -> None:
    text = "\n".join(INVENTED_FACTS)
    assert len(INVENTED_FACTS) == 40
    assert hashlib.sha256(text.encode()).hexdigest() == (
        "b2bef1bd9e72d6a07173efe8d1a9191baa9c648614eee121f471e62601ed06c7"
    )


# ---------------------------------------------------------------------- shares and draws


def test_shares_are_normalised_weights() -> None:
    profile = SimProfile(
        name="x",
        wording={"verbatim": 3, "terse": 1},
        confidence={0.9: 2, 0.3: 2},
        invented_confidence={0.5: 1},
    )
    assert profile.wording_shares() == {"verbatim": 0.75, "terse": 0.25}
    assert profile.confidence_shares() == {0.3: 0.5, 0.9: 0.5}  # sorted by value
    assert list(profile.confidence) == [0.3, 0.9]
    assert profile.confidence_shares(invented=True) == {0.5: 1.0}
    plain = SimProfile(name="y", confidence={0.9: 1, 0.6: 3})
    assert plain.confidence_shares(invented=True) == {0.6: 0.75, 0.9: 0.25}


def test_a_threshold_lets_through_confidences_at_or_above_it() -> None:
    profile = SimProfile(name="x", confidence={0.6: 1, 0.8: 1}, invented_confidence={0.4: 1})
    assert profile.share_at_least(0.8) == 0.5
    assert profile.share_at_least(0.6) == 1.0
    assert profile.share_at_least(0.81) == 0.0
    assert profile.share_at_least(0.4, invented=True) == 1.0
    assert profile.share_at_least(0.41, invented=True) == 0.0


def test_failure_rates_add_up_by_category() -> None:
    profile = SimProfile(name="x", failures={"fenced": 0.25, "truncated": 0.5})
    assert profile.failure_rate() == 0.75
    assert profile.failure_rate({F.FENCED}) == 0.25
    assert profile.failure_rate({F.FENCED, F.EMPTY}) == 0.25
    assert profile.failure_rate(set()) == 0.0


def test_draws_change_exactly_at_each_edge() -> None:
    profile = SimProfile(
        name="x",
        wording={"verbatim": 1, "terse": 1},
        confidence={0.9: 1, 0.6: 3},
        failures={"truncated": 0.25, "empty": 0.25},
    )
    assert [profile.pick_wording(u) for u in (0.0, 0.4999, 0.5, 0.9999)] == [
        "verbatim",
        "verbatim",
        "terse",
        "terse",
    ]
    assert [profile.pick_confidence(u) for u in (0.0, 0.7499, 0.75, 0.9999)] == [
        0.6,
        0.6,
        0.9,
        0.9,
    ]
    # Failure categories are drawn in the category list's order, not the profile's.
    assert [profile.pick_failure(u) for u in (0.0, 0.2499, 0.25, 0.4999, 0.5, 0.99)] == [
        F.EMPTY,
        F.EMPTY,
        F.TRUNCATED,
        F.TRUNCATED,
        None,
        None,
    ]
    assert SimProfile(name="y").pick_failure(0.0) is None
    # A draw beyond the summed shares (rounding) takes the last value.
    thirds = SimProfile(name="z", confidence={0.1: 1, 0.2: 1, 0.3: 1})
    assert thirds.pick_confidence(1.0) == 0.3
    assert thirds.pick_confidence(0.3333) == 0.1 and thirds.pick_confidence(0.3334) == 0.2


@pytest.mark.parametrize(
    ("rate", "expected"),
    [(0.0, [0, 0, 0]), (0.25, [1, 0, 0]), (1.0, [1, 1, 1]), (2.5, [3, 2, 2])],
)
def test_inventions_are_the_whole_rate_plus_one_with_its_fraction(
    rate: float, expected: list[int]
) -> None:
    profile = SimProfile(name="x", invent_rate=rate)
    assert [profile.inventions(u) for u in (0.0, 0.5, 0.9999)] == expected
    fraction = rate - int(rate)
    assert profile.inventions(fraction) == int(rate)  # a draw at the fraction adds none
    if fraction:
        assert profile.inventions(fraction - 1e-9) == int(rate) + 1


def test_tiered_ratings_and_judges() -> None:
    tiered = SimTieredProfile(importance={0.9: 1, 0.7: 1, 0.5: 2}, other_importance={0.3: 1})
    assert tiered.rating_shares() == {0.5: 0.5, 0.7: 0.25, 0.9: 0.25}
    assert tiered.rating_shares(gold=False) == {0.3: 1.0}
    assert tiered.share_above(0.7) == 0.25  # a rating of exactly the threshold is not above
    assert tiered.share_above(0.69) == 0.5
    assert tiered.share_above(0.2, gold=False) == 1.0
    assert tiered.share_above(0.3, gold=False) == 0.0
    assert [tiered.pick_rating(u) for u in (0.0, 0.4999, 0.5, 0.7499, 0.75)] == [
        0.5,
        0.5,
        0.7,
        0.7,
        0.9,
    ]
    assert tiered.pick_rating(0.9, gold=False) == 0.3
    qa = SimQAProfile(judge_leniency={"mine": 0.25}, default_leniency=0.125)
    assert (qa.leniency("mine"), qa.leniency("other")) == (0.25, 0.125)
    assert SimQAProfile().leniency("strict") == 0.05


# ---------------------------------------------------------------------- validation


def _error(tmp_path: Path, text: str) -> str:
    path = tmp_path / "p.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SimProfileError) as info:
        load_profile(path)
    return str(info.value).replace(str(path), "P")


_INVALID = "P:2: invalid simulated model profile: field "


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "name: x\nwording: {}\n",
            "'wording': Value error, give at least one wording style with a positive weight "
            "(got {})",
        ),
        (
            "name: x\nwording: {verbatim: 0}\n",
            "'wording': Value error, give at least one wording style with a positive weight "
            "(got {'verbatim': 0})",
        ),
        (
            "name: x\nconfidence: {0.5: 0}\n",
            "'confidence': Value error, give at least one confidence value with a positive "
            "weight (got {0.5: 0})",
        ),
        (
            "name: x\nconfidence: {0.5: 1, 2: 1, -1: 1}\n",
            "'confidence': Value error, confidence values must lie in [0, 1], got [2.0, -1.0] "
            "(got {0.5: 1, 2: 1, -1: 1})",
        ),
        (
            "name: x\ninvented_confidence: {1.01: 1}\n",
            "'invented_confidence': Value error, confidence values must lie in [0, 1], got "
            "[1.01] (got {1.01: 1})",
        ),
        (
            "name: x\nfailures: {fenced: 0.7, empty: 0.6}\n",
            "'failures': Value error, failure rates add up to 1.3; at most 1 in total (got "
            "{'fenced': 0.7, 'empty': 0.6})",
        ),
        (
            "name: x\ntiered: {importance: {1.5: 1}}\n",
            "'tiered.importance': Value error, importance ratings must lie in [0, 1], got [1.5] "
            "(got {1.5: 1})",
        ),
        (
            "name: x\ntiered: {other_importance: {}}\n",
            "'tiered.other_importance': Value error, give at least one importance rating with "
            "a positive weight (got {})",
        ),
        (
            "name: x\nqa: {judge_leniency: {strict: 2}}\n",
            "'qa.judge_leniency.strict': Input should be less than or equal to 1 (got 2)",
        ),
        (
            "name: x\npropose_rate: true\n",
            "'propose_rate': Input should be a valid number (got True)",
        ),
        ("description: d\nname: ''\n", "'name': String should have at least 1 character (got '')"),
        (
            "name: x\ninvent_rate: 5.5\n",
            "'invent_rate': Input should be less than or equal to 5 (got 5.5)",
        ),
    ],
    ids=[
        "no wording", "zero wording", "zero confidence", "confidence range",
        "invented range", "failures total", "importance range", "no other importance",
        "judge range", "bool rate", "empty name", "invent rate",
    ],
)  # fmt: skip
def test_an_invalid_profile_is_one_message_naming_the_field(
    tmp_path: Path, text: str, message: str
) -> None:
    assert _error(tmp_path, text) == _INVALID + message


def test_the_bounds_of_rates_and_values_are_inclusive(tmp_path: Path) -> None:
    edges = SimProfile(
        name="x",
        propose_rate=1.0,
        invent_rate=5.0,
        confidence={0.0: 1, 1.0: 1},
        failures={"fenced": 0.5, "empty": 0.5},
        tiered=SimTieredProfile(importance={0.0: 0.0, 1.0: 1.0}),
    )
    assert edges.failure_rate() == 1.0 and edges.inventions(0.0) == 5
    # Rounding in a sum of rates that add up to 1 is tolerated.
    assert SimProfile(name="y", failures={"fenced": 0.1, "empty": 0.2, "no_json": 0.7})
    path = tmp_path / "p.yaml"
    path.write_text("name: x\nfailures: {fenced: 0.5, empty: 0.500001}\n", encoding="utf-8")
    with pytest.raises(SimProfileError, match="add up to 1"):
        load_profile(path)


def test_the_loader_names_the_file_and_what_is_wrong(tmp_path: Path) -> None:
    assert _error(tmp_path, "- a\n") == (
        "P: a profile must be a mapping of fields at the top level"
    )
    assert _error(tmp_path, "name: [1\n").startswith("P: not valid YAML (line 2, column 1)")
    with pytest.raises(SimProfileError) as info:
        load_profile(tmp_path / "missing.yaml")
    assert str(info.value) == (
        f"simulated model profile {str(tmp_path / 'missing.yaml')!r} not found: use one of "
        f"{', '.join(PROFILES)} or the path of a YAML profile file"
    )
    big = tmp_path / "big.yaml"
    big.write_text("name: x\n" + "#" * (5 * 1024 * 1024), encoding="utf-8")
    with pytest.raises(SimProfileError, match="cannot read simulated model profile"):
        load_profile(big)
    good = tmp_path / "good.yaml"
    good.write_text("name: mine\npropose_rate: 0.5\n", encoding="utf-8")
    assert load_profile(str(good)) == SimProfile(name="mine", propose_rate=0.5)


def test_a_registered_profile_object_is_returned_as_it_is() -> None:
    mine = SimProfile(name="registered-object", propose_rate=0.25)
    PROFILES.register("registered-object", mine)
    try:
        assert load_profile("registered-object") is mine
    finally:
        PROFILES.unregister("registered-object")


# ---------------------------------------------------------------------- wordings


@pytest.mark.parametrize(
    ("content", "terse"),
    [
        ("Works 12.5-hour shifts and is usually too tired", "Works 12.5-hour shifts"),
        ("The cat, a tabby", "cat"),
        ("Likes tea; hates coffee", "Likes tea"),
        ("Is a nurse - in Leeds", "Is nurse"),
        ("Moved so she could", "Moved"),
        ("Reads books because fun", "Reads books"),
        ("Has a dog but no cat", "Has dog"),
        ("Owns a van which is red", "Owns van"),
        ("Has a sister who lives", "Has sister"),
        ("Lives in Leeds since 2020", "Lives in Leeds"),
        ("Cries when sad", "Cries"),
        ("Plays An Old chess set", "Plays Old chess set"),
        ("A the an", "A the an"),
        ("Sold his brand-new sofa", "Sold his brand-new sofa"),
    ],
)
def test_the_terse_wording_keeps_the_first_clause_without_articles(
    content: str, terse: str
) -> None:
    assert worded(content, "terse") == terse
    assert worded(content, "verbatim") == content


def test_restated_and_leaked_wordings() -> None:
    assert restated("Likes tea") == "User likes tea"
    assert restated("user likes tea") == "The user likes tea"
    assert restated("User likes tea") == "The user likes tea"
    assert restated("Username is bob") == "User username is bob"
    assert leaked("my PIN 1234") == "Mentioned my PIN 1234"
    assert wordings("The cat, a tabby") == {
        "The cat, a tabby": "original",
        "User the cat, a tabby": "restated",
        "cat": "original",
        "User cat": "restated",
    }
    assert wordings("Plays chess") == {"Plays chess": "original", "User plays chess": "restated"}


def test_registered_profile_files_and_several_problems_are_named(tmp_path: Path) -> None:
    path = tmp_path / "plugin.yaml"
    path.write_text("name: x\npropose_rate: 2\nwording: {poetic: 1}\n", encoding="utf-8")
    PROFILES.register("registered-file", path)
    try:
        with pytest.raises(SimProfileError) as info:
            load_profile("registered-file")
    finally:
        PROFILES.unregister("registered-file")
    assert str(info.value) == (
        f"{path}:2: invalid simulated model profile: field 'propose_rate': Input should be less "
        "than or equal to 1 (got 2); field 'wording.poetic' (line 3): Input should be "
        "'verbatim' or 'terse' (got 'poetic')"
    )
