"""Prompt effects of the simulated model: a profile's declared reaction to its update template.

The expected values come from the profile's YAML (read here with ``yaml.safe_load``, not
through the profile code) and from the simulator's record of which effects applied to which
template (:func:`~memlab.simulation.provenance.applied_effects`), never from the metric code.
"""

from __future__ import annotations

import logging
import math
import re
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import yaml
from sim_truth import expected_counts

from memlab.backends.registry import reads_prompts
from memlab.core.jsondoc.document import create_empty_memory
from memlab.core.jsondoc.parsing import parse_options_for
from memlab.core.pipeline.messages import filter_messages_for_memory, format_conversation_for_update
from memlab.core.prompt_template import PromptVariant
from memlab.core.prompts import get_prompt, resolve_prompt
from memlab.datasets.loader import load_dataset
from memlab.datasets.registry import resolve_dataset
from memlab.grids.grid import Grid
from memlab.runs.run import Run
from memlab.simulation.model import SimulatedBackend
from memlab.simulation.profile import SimProfileError, load_profile
from memlab.simulation.profile_model import SimProfile
from memlab.simulation.provenance import ProvenanceMatcher, applied_effects
from memlab.sweeps.driver import sweep

OWNERS = load_dataset(resolve_dataset("personas"))
SELF_ONLY = Path(__file__).parent.parent / "notebooks" / "prompts" / "self_only.txt"
PHRASE = "only facts the user states about themselves"
SEEDS = [0, 1, 2, 3]
THRESHOLD = 0.7


def _declared(name: str) -> dict[str, Any]:
    path = resources.files("memlab.simulation") / "profiles" / f"{name}.yaml"
    data: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return data


def _conversation(owner: int, session: int) -> str:
    messages = [m.to_pipeline_message() for m in OWNERS[owner].sessions[session].messages]
    return format_conversation_for_update(filter_messages_for_memory(messages))


def _prompt(variant: PromptVariant, owner: int = 0, session: int = 0, facts: Any = ()) -> str:
    memory = create_empty_memory()
    memory["facts"] = list(facts)
    return variant.render(memory, _conversation(owner, session))


# ---------------------------------------------------------------------- reads_prompts


@pytest.mark.parametrize("name", ["careful", "sloppy", "chatty"])
def test_the_default_profiles_ignore_prompts(name: str) -> None:
    assert "prompt_effects" not in _declared(name)
    assert load_profile(name).reads_prompts is False
    assert reads_prompts(f"sim:{name}") is False
    backend = SimulatedBackend(name, dataset=OWNERS)
    assert backend.reads_prompts is False
    # The same decisions under a prompt with the phrase and one without.
    a = backend.decide(_prompt(get_prompt("default")))
    b = backend.decide(_prompt(resolve_prompt(SELF_ONLY)))
    assert (a.new_facts, a.failure) == (b.new_facts, b.failure)
    assert a.effects == b.effects == ()


def test_the_attentive_profile_reads_prompts_and_says_what_it_reacts_to() -> None:
    declared = _declared("attentive")
    assert [e["when_contains"] for e in declared["prompt_effects"]] == [PHRASE]
    assert f'"{PHRASE}"' in declared["description"]
    assert load_profile("attentive").reads_prompts is True
    assert reads_prompts("sim:attentive") is True
    assert SimulatedBackend("attentive", dataset=OWNERS).reads_prompts is True
    assert reads_prompts("openai:gpt-4o-mini") is True  # a model reads its prompt


def test_a_backend_whose_profile_cannot_load_is_an_error_not_an_answer(tmp_path: Path) -> None:
    with pytest.raises(SimProfileError, match="not found"):
        reads_prompts(f"sim:{tmp_path / 'missing.yaml'}")


# ---------------------------------------------------------------------- what is matched


def test_the_template_text_is_the_variants_and_only_it_triggers_the_effect() -> None:
    backend = SimulatedBackend("attentive", dataset=OWNERS)
    default, self_only = get_prompt("default"), resolve_prompt(SELF_ONLY)
    a, b = backend.decide(_prompt(default)), backend.decide(_prompt(self_only))
    assert (a.template_sha256, a.effects) == (default.sha256, ())
    assert (b.template_sha256, b.effects) == (self_only.sha256, ("self-facts",))
    assert applied_effects(backend, default.sha256) == ()
    assert applied_effects(backend, self_only.sha256) == ("self-facts",)
    assert applied_effects(backend, "0" * 64) is None


def _phrase_profile(phrase: str, **condition: str) -> SimProfile:
    effect = {
        "name": "seen",
        **(condition or {"when_contains": phrase}),
        "set": {"propose_rate": 0},
    }
    return SimProfile.model_validate({"name": "p", "prompt_effects": [effect]})


def test_text_in_the_conversation_or_memory_never_triggers_an_effect() -> None:
    # A phrase of the conversation itself, and one the memory holds.
    said = OWNERS[0].sessions[0].messages[0].content
    assert isinstance(said, str)
    phrase = " ".join(said.split()[:6])
    assert phrase.casefold() in _conversation(0, 0).casefold()
    fact = {"id": "f1", "content": f"Said {PHRASE}", "category": "context", "confidence": 0.9}
    for profile in (
        _phrase_profile(phrase),
        _phrase_profile("", when_matches=r"\s+".join(map(re.escape, phrase.split()))),
        _phrase_profile(PHRASE),
    ):
        backend = SimulatedBackend(profile, dataset=OWNERS)
        decision = backend.decide(_prompt(get_prompt("default"), facts=[fact]))
        assert decision.effects == ()
        # The positive control: the same phrase in the template's own text applies it.
        template = get_prompt("default").template + f"\nNote: {phrase} / {PHRASE}\n"
        variant = PromptVariant("with-phrase", template)
        assert backend.decide(_prompt(variant, facts=[fact])).effects == ("seen",)
    # A phrase only the conversation holds is still missing from the template.
    missing = SimulatedBackend(_phrase_profile("", when_missing=phrase), dataset=OWNERS)
    assert missing.decide(_prompt(get_prompt("default"))).effects == ("seen",)


def test_effects_apply_in_order_and_match_across_line_breaks() -> None:
    profile = SimProfile.model_validate(
        {
            "name": "p",
            "prompt_effects": [
                {"when_contains": "USER states", "set": {"propose_rate": 0.5, "leak_rate": 0.2}},
                {"when_missing": "never in it", "set": {"propose_rate": 0.25}},
                {"when_matches": "^nothing$", "set": {"propose_rate": 1.0}},
            ],
        }
    )
    effective, applied = profile.for_template("what the user\n   states")
    assert applied == ("contains 'USER states'", "missing 'never in it'")
    assert (effective.propose_rate, effective.leak_rate) == (0.25, 0.2)
    assert profile.for_template("never in it") == (profile, ())


# ---------------------------------------------------------------------- validation


def _error(tmp_path: Path, text: str) -> str:
    path = tmp_path / "p.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SimProfileError) as info:
        load_profile(path)
    message = str(info.value)
    assert "\n" not in message
    return message.replace(str(path), "P")


_EFFECT = "name: x\nprompt_effects:\n  - when_contains: hello\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            _EFFECT + "    set: {propose_rate: 0.5, answer_rate: 0.5}\n",
            "P:4: invalid simulated model profile: field 'prompt_effects[0].set.answer_rate': "
            "not a rate a prompt effect can set; it sets propose_rate, wording, confidence, "
            "restate_rate, invent_rate, invented_confidence, remove_retracted, leak_rate, "
            "failures (got 0.5)",
        ),
        (
            _EFFECT + "    set:\n      propose_rate: 1.5\n",
            "P:5: invalid simulated model profile: field 'prompt_effects[0].set.propose_rate': "
            "Input should be less than or equal to 1 (got 1.5)",
        ),
        (
            _EFFECT + "    set: {}\n",
            "P:4: invalid simulated model profile: field 'prompt_effects[0].set': Value error, "
            "set at least one rate (e.g. {propose_rate: 0.9}) (got {})",
        ),
        (
            _EFFECT + "    when_missing: bye\n    set: {leak_rate: 0}\n",
            "P:3: invalid simulated model profile: field 'prompt_effects[0]': Value error, give "
            "exactly one of when_contains, when_matches, when_missing (got {'when_contains': "
            "'hello', 'when_missing': 'bye', 'set': {'leak_rate': 0}})",
        ),
        (
            "name: x\nprompt_effects:\n  - when_matches: '(unclosed'\n    set: {leak_rate: 0}\n",
            "P:3: invalid simulated model profile: field 'prompt_effects[0].when_matches': Value "
            "error, not a regular expression: missing ), unterminated subpattern at position 0 "
            "(got '(unclosed')",
        ),
        (
            _EFFECT + "    set: {leak_rate: 0}\n    when: x\n",
            "P:5: invalid simulated model profile: field 'prompt_effects[0].when': Extra inputs "
            "are not permitted (got 'x')",
        ),
    ],
    ids=["not settable", "out of range", "empty set", "two conditions", "bad regex", "unknown"],
)
def test_a_bad_effect_is_one_line_naming_file_line_and_field(
    tmp_path: Path, text: str, message: str
) -> None:
    assert _error(tmp_path, text) == message


# ---------------------------------------------------------------------- a sweep of two prompts


def _sweep(tmp: Path) -> tuple[Run, SimulatedBackend]:
    backend = SimulatedBackend("attentive", dataset=OWNERS)
    grid = Grid.from_mapping(
        {
            "name": "prompt-effects",
            "dataset": "personas",
            "prompts": [str(SELF_ONLY)],
            "base": {
                "backend": "sim:attentive",
                "fact_confidence_threshold": THRESHOLD,
                "max_facts": 500,
            },
            "axes": {"prompt": ["default", "self_only"], "seed": SEEDS},
        }
    )
    run = sweep(
        "personas",
        grid,
        runs_dir=tmp,
        progress=False,
        resume=False,
        max_workers=1,
        backend_factory=lambda _spec: backend,
        matcher=ProvenanceMatcher(backend),
    )
    return run, backend


def _effective(effects: tuple[str, ...]) -> SimProfile:
    """The attentive profile with the declared ``set`` of each named effect, from its YAML."""
    declared = _declared("attentive")
    for effect in declared.pop("prompt_effects"):
        if effect["name"] in effects:
            declared.update(effect["set"])
    return SimProfile.model_validate(declared)


def _recall_sd(profile: SimProfile) -> tuple[float, float, int]:
    """Expected recall of one seed's lane and its standard deviation, from the declared
    rates: a session's final update parses with ``ok``, and each of its n active gold facts
    is then stored independently with ``p * q`` (the shared parse makes them correlated)."""
    q = sum(w for c, w in profile.confidence.items() if c >= THRESHOLD) / sum(
        profile.confidence.values()
    )
    ok = 1.0 - profile.failures.get("truncated", 0.0)  # fenced replies parse (default preset)
    pq = profile.propose_rate * q
    retracted = {g for o in OWNERS for s in o.sessions for g in s.labels.retracts}
    mean = var = 0.0
    active = 0
    for owner in OWNERS:
        for session in owner.sessions:
            n = sum(f.id not in retracted for f in session.labels.facts)
            active += n
            mean += ok * n * pq
            var += ok * n * pq * (1 - pq) + (n * pq) ** 2 * ok * (1 - ok)
    return mean / active, math.sqrt(var) / active, active


def test_a_two_prompt_sweep_moves_recall_by_the_declared_effect(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="memlab"):
        run, backend = _sweep(tmp_path)
    # Its lanes differ in more than their labels: no warning that the prompt is ignored.
    assert not [r for r in caplog.records if "ignores prompt text" in r.getMessage()]
    final = run.sessions.sort_values("session_index").groupby(["lane_id", "user_id"]).tail(1)
    options = parse_options_for("default")
    measured: dict[str, float] = {}
    for variant in (get_prompt("default"), resolve_prompt(SELF_ONLY)):
        lanes = [
            lid
            for lid in final["lane_id"].unique()
            if run.lane_facts(lid).prompt_sha256 == variant.sha256
        ]
        assert len(lanes) == len(SEEDS)
        effects = applied_effects(backend, variant.sha256)
        assert effects == (("self-facts",) if PHRASE in variant.template.casefold() else ())
        profile = _effective(effects)
        rows = final[final["lane_id"].isin(lanes)]
        recall = rows["gold_covered"].sum() / rows["gold_active"].sum()
        expected, sd, active = _recall_sd(profile)
        assert rows["gold_active"].sum() == active * len(SEEDS)
        # Cross-check with the expected counts the metric validation uses.
        truth = [expected_counts(o, profile, THRESHOLD, options) for o in OWNERS]
        assert expected == pytest.approx(
            sum(t.gold_covered for t in truth) / sum(t.gold_active for t in truth)
        )
        sd /= math.sqrt(len(SEEDS))  # seeds draw independently
        assert abs(recall - expected) <= 4 * sd, (variant.name, recall, expected, sd)
        inventions = sum(
            1 for f in _stored(run, lanes) if backend.origins(f) == frozenset({"invented"})
        )
        assert (inventions == 0) == (profile.invent_rate == 0)
        measured[variant.name] = recall
    assert measured["self_only"] > measured["default"]


def _stored(run: Run, lanes: list[str]) -> list[str]:
    return [
        str(fact["content"])
        for lane in lanes
        for owner in OWNERS
        for fact in run.final_memory(lane, owner.user_id).get("facts", [])
    ]


def test_a_profile_file_with_effects_reads_prompts_through_the_registry(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(
        "name: mine\nprompt_effects:\n  - when_missing: confidence\n    set: {leak_rate: 0.5}\n",
        encoding="utf-8",
    )
    plain = tmp_path / "plain.yaml"
    plain.write_text("name: plain\n", encoding="utf-8")
    assert reads_prompts(f"sim:{path}") is True
    assert reads_prompts(f"sim:{plain}") is False
    # The template of concise states confidences; an inline one without the word does not.
    backend = SimulatedBackend(path, dataset=OWNERS)
    assert backend.decide(_prompt(get_prompt("concise"))).effects == ()
    bare = PromptVariant("bare", "M {current_memory}\nC {conversation}\n")
    assert backend.decide(_prompt(bare)).effects == ("missing 'confidence'",)
