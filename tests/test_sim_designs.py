"""The two designs of a simulated comparison: a candidate coupled to its baseline (common
random numbers, the default) or drawing independently of it (``draws: independent``).

Expected shares come from the declared rates: coupled, a fact proposed with 0.7 is proposed
with 0.8 too; independent, a fact is proposed by both with 0.7 * 0.8.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from memlab.core.jsondoc.document import create_empty_memory
from memlab.core.pipeline.messages import filter_messages_for_memory, format_conversation_for_update
from memlab.core.prompts import get_prompt
from memlab.datasets.loader import load_dataset
from memlab.datasets.registry import resolve_dataset
from memlab.simulation.model import SimulatedBackend
from memlab.simulation.profile import SimProfileError, load_profile

OWNERS = load_dataset(resolve_dataset("personas"))
GOLD = sum(len(s.labels.facts) for o in OWNERS for s in o.sessions)


def _profile(tmp_path: Path, name: str, rate: float, draws: str | None = None) -> Path:
    path = tmp_path / f"{name}.yaml"
    text = f"name: {name}\npropose_rate: {rate}\n"
    path.write_text(text + (f"draws: {draws}\n" if draws else ""), encoding="utf-8")
    return path


def _proposed(profile: Path, prompt: str = "default") -> set[str]:
    """Gold ids each session's final update proposes from an empty memory."""
    sim = SimulatedBackend(profile, dataset=OWNERS)
    template = get_prompt(prompt)
    found: set[str] = set()
    for owner in OWNERS:
        for session in owner.sessions:
            messages = [m.to_pipeline_message() for m in session.messages]
            conversation = format_conversation_for_update(filter_messages_for_memory(messages))
            decision = sim.decide(template.render(create_empty_memory(), conversation))
            found |= {f["source"] for f in decision.new_facts if f["kind"] == "gold"}
    return found


def _near(count: int, p: float) -> bool:
    """Within four binomial standard deviations of ``p`` of the gold facts."""
    return abs(count - p * GOLD) <= 4 * math.sqrt(GOLD * p * (1 - p))


def test_coupled_lanes_share_their_draws(tmp_path: Path) -> None:
    base = _proposed(_profile(tmp_path, "base", 0.7))
    candidate = _proposed(_profile(tmp_path, "candidate", 0.8, "coupled"))
    assert base < candidate  # every fact the baseline proposes, the candidate proposes too
    assert _near(len(base), 0.7) and _near(len(candidate), 0.8)


def test_independent_lanes_draw_apart(tmp_path: Path) -> None:
    base = _proposed(_profile(tmp_path, "base", 0.7))
    candidate = _proposed(_profile(tmp_path, "candidate", 0.8, "independent"))
    assert base - candidate  # some fact only the baseline proposes
    assert _near(len(candidate), 0.8)
    assert _near(len(base & candidate), 0.7 * 0.8)
    assert _near(len(base - candidate), 0.7 * 0.2)  # coupled, there is none


def test_independent_draws_depend_on_the_prompt_not_on_chance(tmp_path: Path) -> None:
    path = _profile(tmp_path, "same", 0.7, "independent")
    assert _proposed(path) == _proposed(path)  # still a function of what it is sent
    default, concise = _proposed(path), _proposed(path, "concise")
    assert _near(len(default & concise), 0.7 * 0.7)
    coupled = _profile(tmp_path, "coupled", 0.7)
    assert _proposed(coupled) == _proposed(coupled, "concise")  # the profile ignores prompts


def test_the_design_is_part_of_the_identity_only_when_independent(tmp_path: Path) -> None:
    plain = SimulatedBackend(_profile(tmp_path, "p", 0.7), dataset=OWNERS).identity()
    coupled = SimulatedBackend(_profile(tmp_path, "p", 0.7, "coupled"), dataset=OWNERS)
    independent = SimulatedBackend(_profile(tmp_path, "p", 0.7, "independent"), dataset=OWNERS)
    assert coupled.identity() == plain  # the default leaves cache keys as they were
    assert independent.identity()["profile_sha256"] != plain["profile_sha256"]


def test_an_unknown_design_names_the_field(tmp_path: Path) -> None:
    with pytest.raises(SimProfileError, match="draws"):
        load_profile(_profile(tmp_path, "bad", 0.7, "paired"))
