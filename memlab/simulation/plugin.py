"""The simulated model's backend entry (``sim:PROFILE``), registered through memlab's own
``memlab.plugins`` entry point: the backend registry sits below the datasets the simulated
model answers from, so it finds this entry the way it finds any installed plugin."""

from __future__ import annotations

from typing import Any

from memlab.backends.registry import BACKENDS, BackendPlugin
from memlab.core.pipeline.llm import Backend, BackendError

__all__ = ["SIM_BACKEND", "SIM_PREFIX", "register"]

SIM_PREFIX = "sim"
"""Backend spec prefix of the simulated model."""


def _sim_factory(argument: str, **options: Any) -> Backend:
    from memlab.simulation.model import SimulatedBackend
    from memlab.simulation.profile import PROFILES

    if not argument:
        raise BackendError(
            f"the simulated model needs a profile: 'sim:NAME' with NAME one of "
            f"{', '.join(PROFILES)}, or 'sim:/path/profile.yaml'"
        )
    if "dataset" not in options:
        raise BackendError(
            f"'sim:{argument}' answers from the labels of the dataset it replays: pass "
            "dataset=... (a sweep does this itself), e.g. resolve_backend('sim:careful', "
            "dataset='personas')"
        )
    return SimulatedBackend(argument, **options)


def _reads_prompts(argument: str) -> bool:
    """Whether the profile ``argument`` names declares prompt effects (an empty argument names
    no profile: nothing to read prompts with)."""
    from memlab.simulation.profile import load_profile

    return bool(argument) and load_profile(argument).reads_prompts


SIM_BACKEND = BackendPlugin(
    _sim_factory,
    "the known-truth simulated model, a test instrument (sim:careful, sim:sloppy, "
    "sim:chatty, sim:attentive, which reads the update prompt, or sim:/path/profile.yaml)",
    "sim:careful",
    simulated=True,
    needs_dataset=True,
    prompt_reader=_reads_prompts,
)


def register() -> None:
    """Register ``sim`` (called once per process by :func:`memlab.plugins.load_plugins`)."""
    BACKENDS.register(SIM_PREFIX, SIM_BACKEND)
