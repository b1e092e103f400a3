"""The simulated model's backend entry (``sim:PROFILE``), registered through memlab's own
``memlab.plugins`` entry point: the backend registry sits below the datasets the simulated
model answers from, so it finds this entry the way it finds any installed plugin."""

from __future__ import annotations

from typing import Any

from memlab.backends.registry import BACKENDS, BackendPlugin
from memlab.core.llm import Backend, BackendError

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


def _sim_reads_prompts(argument: str) -> bool:
    """What the profile declares; a profile that cannot be read now (a moved file) is taken
    to ignore prompts, as every built-in profile does."""
    from memlab.simulation.profile import SimProfileError, load_profile

    try:
        return load_profile(argument).reads_prompts
    except SimProfileError:
        return False


SIM_BACKEND = BackendPlugin(
    _sim_factory,
    "the known-truth simulated model, a test instrument (sim:careful, sim:sloppy, "
    "sim:chatty or sim:/path/profile.yaml)",
    "sim:careful",
    simulated=True,
    needs_dataset=True,
    reads_prompts=_sim_reads_prompts,
)


def register() -> None:
    """Register ``sim`` (called once per process by :func:`memlab.plugins.load_plugins`)."""
    BACKENDS.register(SIM_PREFIX, SIM_BACKEND)
