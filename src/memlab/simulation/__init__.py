"""The simulated model: a test instrument with declared behaviour that answers from a labeled
dataset, so every metric can be checked against the value its profile implies; it records
where each wording it proposes came from (:class:`ProvenanceMatcher` scores a run with that
truth).

``sim:PROFILE`` resolves to a :class:`SimulatedBackend` through the backend registry (this
package registers it through memlab's own ``memlab.plugins`` entry point, see
:mod:`memlab.simulation.plugin`); profiles are YAML files or entries of :data:`PROFILES`.

Names are imported on first use (see :mod:`memlab._lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memlab._lazy import lazy_face

if TYPE_CHECKING:
    from memlab.simulation.model import SimDecision, SimulatedBackend
    from memlab.simulation.plugin import SIM_PREFIX
    from memlab.simulation.profile import (
        BUILTIN_PROFILES,
        PROFILES,
        SimProfile,
        SimProfileError,
        load_profile,
    )
    from memlab.simulation.provenance import (
        Agreement,
        ProvenanceMatcher,
        applied_effects,
        matcher_agreement,
    )

_EXPORTS: dict[str, str] = {
    "SimDecision": "memlab.simulation.model",
    "SimulatedBackend": "memlab.simulation.model",
    "SIM_PREFIX": "memlab.simulation.plugin",
    "BUILTIN_PROFILES": "memlab.simulation.profile",
    "PROFILES": "memlab.simulation.profile",
    "SimProfile": "memlab.simulation.profile",
    "SimProfileError": "memlab.simulation.profile",
    "load_profile": "memlab.simulation.profile",
    "Agreement": "memlab.simulation.provenance",
    "ProvenanceMatcher": "memlab.simulation.provenance",
    "applied_effects": "memlab.simulation.provenance",
    "matcher_agreement": "memlab.simulation.provenance",
}

__all__ = [
    "BUILTIN_PROFILES",
    "PROFILES",
    "SIM_PREFIX",
    "Agreement",
    "ProvenanceMatcher",
    "SimDecision",
    "SimProfile",
    "SimProfileError",
    "SimulatedBackend",
    "applied_effects",
    "load_profile",
    "matcher_agreement",
]

__getattr__, __dir__ = lazy_face(__name__, _EXPORTS)
