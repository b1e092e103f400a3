"""The simulated model: profiles, registry, determinism, session recognition, labelling."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from memlab.backends.caching.cache import CacheMode
from memlab.backends.registry import backend_options, is_simulated, resolve_backend
from memlab.cli.main import main
from memlab.core.jsondoc.document import create_empty_memory
from memlab.core.jsondoc.parsing import ParseOptions, parse_reply
from memlab.core.jsondoc.similarity import count_duplicates
from memlab.core.pipeline.llm import BackendError, CompletionRequest, GenerationParams
from memlab.core.pipeline.messages import filter_messages_for_memory, format_conversation_for_update
from memlab.core.prompts import get_prompt
from memlab.datasets.loader import load_dataset
from memlab.datasets.registry import resolve_dataset
from memlab.grids.grid import Grid
from memlab.grids.lane import LaneConfig
from memlab.matching.base import LexicalMatcher
from memlab.simulation.fact_texts import INVENTED_FACTS, restated, worded
from memlab.simulation.model import SimulatedBackend
from memlab.simulation.profile import BUILTIN_PROFILES, SimProfileError, load_profile
from memlab.sweeps.driver import sweep

OWNERS = load_dataset(resolve_dataset("personas"))


def _prompt(owner_index: int, session_index: int, upto: int | None = None, facts=()) -> str:
    session = OWNERS[owner_index].sessions[session_index]
    messages = [m.to_pipeline_message() for m in session.messages[:upto]]
    memory = create_empty_memory()
    memory["facts"] = list(facts)
    conversation = format_conversation_for_update(filter_messages_for_memory(messages))
    return get_prompt("default").render(memory, conversation)


def _request(prompt: str, seed: int = 0) -> CompletionRequest:
    return CompletionRequest(
        messages=[{"role": "user", "content": prompt}], params=GenerationParams(seed=seed)
    )


def test_builtin_profiles_load_and_declare_their_behaviour() -> None:
    for name in BUILTIN_PROFILES:
        profile = load_profile(name)
        assert profile.name == name and profile.description
        assert sum(profile.confidence_shares().values()) == pytest.approx(1.0)
    careful = load_profile("careful")
    assert careful.share_at_least(0.9) == pytest.approx(0.7)
    assert careful.share_at_least(0.6) == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("name: x\nfailures: {fenced: 0.7, empty: 0.6}\n", "failures"),
        ("name: x\nfailures: {garbled: 0.1}\n", "failures.garbled"),
        ("name: x\npropose_rate: 1.5\n", "propose_rate"),
        ("name: x\nconfidence: {1.5: 1}\n", "confidence"),
        ("name: x\nwording: {poetic: 1}\n", "wording.poetic"),
        ("name: x\nproposal_rate: 0.5\n", "proposal_rate"),
    ],
)
def test_a_bad_profile_names_the_file_and_the_field(tmp_path: Path, text: str, field: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SimProfileError) as exc:
        load_profile(path)
    message = str(exc.value)
    assert str(path) in message and f"field '{field}'" in message


def test_the_registry_builds_the_simulated_model_only_with_a_dataset() -> None:
    backend = resolve_backend("sim:careful", dataset="personas")
    assert isinstance(backend, SimulatedBackend) and backend.model == "simulated-careful"
    with pytest.raises(BackendError, match="dataset="):
        resolve_backend("sim:careful")
    with pytest.raises(BackendError, match="careful, sloppy, chatty"):
        resolve_backend("sim", dataset="personas")
    with pytest.raises(SimProfileError, match="careful, sloppy, chatty"):
        resolve_backend("sim:nonexistent", dataset="personas")
    assert is_simulated("sim:chatty") and not is_simulated("simple:x")
    assert backend_options("sim:chatty", "d") == {"dataset": "d"}
    assert backend_options("local:smollm2", "d") == {}


def test_a_bad_profile_on_the_command_line_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("name: x\nleak_rate: -1\n", encoding="utf-8")
    code = main(["run", "smoke", "--backend", f"sim:{path}", "--runs-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2
    assert "field 'leak_rate'" in err and "Traceback" not in err


def test_replies_are_deterministic_per_seed_and_prompt() -> None:
    sim = SimulatedBackend("sloppy", dataset=OWNERS)
    prompts = [_prompt(o, s) for o in range(4) for s in range(3)]
    first = [sim.complete(_request(p)).text for p in prompts]
    again = [SimulatedBackend("sloppy", dataset=OWNERS).complete(_request(p)).text for p in prompts]
    other = [sim.complete(_request(p, seed=1)).text for p in prompts]
    assert first == again
    assert first != other


def test_only_the_update_that_sees_the_whole_session_proposes_facts() -> None:
    sim = SimulatedBackend("chatty", dataset=OWNERS)
    early = sim.decide(_prompt(0, 0, upto=2))
    final = sim.decide(_prompt(0, 0))
    assert (early.user_id, early.thread_id, early.final) == ("amara", "amara-01", False)
    assert early.new_facts == [] and early.update["newFacts"] == []
    assert final.final and final.session_index == 0
    gold = {f.id for f in OWNERS[0].sessions[0].labels.facts}
    assert {f["source"] for f in final.new_facts if f["kind"] == "gold"} == gold  # rate 1.0


def test_the_model_reads_the_memory_restates_and_removes() -> None:
    """Facts in the memory of the prompt are restated and, when retracted, removed."""
    owner = OWNERS[0]
    retracting = next(i for i, s in enumerate(owner.sessions) if s.labels.retracts)
    gone = owner.sessions[retracting].labels.retracts[0]
    content = owner.gold_facts()[gone].content
    facts = [
        {"id": "fact_0000aaaa", "content": content, "category": "preference", "confidence": 0.9},
        {
            "id": "fact_0000bbbb",
            "content": restated(content),
            "category": "preference",
            "confidence": 0.9,
        },
    ]
    removing = [
        SimulatedBackend("chatty", dataset=OWNERS, seed=seed).decide(
            _prompt(0, retracting, facts=facts)
        )
        for seed in range(20)
    ]
    removed = [d.remove for d in removing]
    assert ["fact_0000aaaa", "fact_0000bbbb"] in removed and [] in removed  # rate 0.6
    restating = [
        SimulatedBackend("chatty", dataset=OWNERS, seed=seed).decide(
            _prompt(0, retracting + 1, facts=facts[:1])
        )
        for seed in range(20)
    ]
    texts = {f["content"] for d in restating for f in d.new_facts if f["kind"] == "restated"}
    assert texts == {restated(content)}


def test_a_prompt_from_another_dataset_is_an_error() -> None:
    sim = SimulatedBackend("careful", dataset=OWNERS)
    prompt = get_prompt("default").render(create_empty_memory(), "User: hello\n\nAssistant: hi")
    with pytest.raises(BackendError, match="no conversation of its dataset"):
        sim.complete(_request(prompt))


def test_each_injected_failure_parses_as_its_category() -> None:
    sim = SimulatedBackend("sloppy", dataset=OWNERS)
    seen = set()
    for owner, session, seed in itertools.product(range(14), range(5), range(3)):
        prompt = _prompt(owner, session)
        decision = sim.decide(prompt, seed)
        text = sim.complete(_request(prompt, seed)).text
        parsed = parse_reply(text, ParseOptions.strict_only())
        assert parsed.category == decision.failure, text[:200]
        seen.add(decision.failure)
    assert len(seen) == 10  # nine categories and well-formed replies


def test_invented_facts_state_no_gold_fact_and_differ_from_each_other() -> None:
    matcher = LexicalMatcher()
    gold = [
        f.content
        for name in ("personas", "smoke")
        for o in load_dataset(resolve_dataset(name))
        for f in o.gold_facts().values()
    ]
    for text in INVENTED_FACTS:
        assert not any(matcher.covers(text, g) for g in gold), text
    assert count_duplicates(list(INVENTED_FACTS)).near == 0


def test_wordings_keep_or_cut_the_gold_fact() -> None:
    text = "Works 12.5-hour shifts and is usually too tired to cook afterwards"
    assert worded(text, "verbatim") == text
    assert worded(text, "terse") == "Works 12.5-hour shifts"
    assert restated("Is vegetarian") == "User is vegetarian"
    assert count_duplicates(["Is vegetarian", restated("Is vegetarian")]).near == 1


def test_simulated_lanes_are_labelled_and_never_cached(tmp_path: Path) -> None:
    lane = LaneConfig(backend="sim:careful", fact_confidence_threshold=0.5)
    assert lane.label(["fact_confidence_threshold"]) == "[simulated] thr=0.5"
    assert LaneConfig(backend="scripted").label([]) == "default"
    grid = Grid.from_mapping(
        {"name": "sim-cache", "max_owners": 2, "base": {"backend": "sim:careful"}}
    )
    cache = tmp_path / "cache"
    run = sweep(
        "personas",
        grid,
        runs_dir=tmp_path,
        cache_dir=cache,
        cache_mode=CacheMode.READ_ONLY,
        progress=False,
    )
    assert run.summary["llm_calls"].iloc[0] > 0
    assert not cache.exists() or not any(cache.rglob("*.json"))
    assert run.summary["label"].iloc[0].startswith("[simulated]")


def test_a_profile_file_is_read_within_the_yaml_limits(tmp_path: Path) -> None:
    lines = ['a: &a ["x","x","x","x","x","x","x","x","x"]']
    lines += [
        f"{chr(98 + i)}: &{chr(98 + i)} [" + ",".join([f"*{chr(97 + i)}"] * 9) + "]"
        for i in range(8)
    ]
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("\n".join(lines) + "\nname: bomb\n", encoding="utf-8")
    with pytest.raises(SimProfileError, match="YAML refused"):
        load_profile(bomb)
