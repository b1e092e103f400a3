"""The simulated model: a test instrument with declared behaviour that answers from a labeled
dataset, so every metric can be checked against the value its profile implies; it records
where each wording it proposes came from (:class:`ProvenanceMatcher` scores a run with that
truth).

``sim:PROFILE`` resolves to a :class:`~memlab.simulation.model.SimulatedBackend` through the
backend registry (this package registers it through memlab's own ``memlab.plugins`` entry
point, see :mod:`memlab.simulation.plugin`); profiles are YAML files or entries of
:data:`~memlab.simulation.profile.PROFILES`.

Names are imported on first use (see :mod:`memlab._lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memlab._lazy import lazy_face

if TYPE_CHECKING:
    from memlab.simulation.profile import load_profile as load_profile
    from memlab.simulation.profile_model import SimProfile as SimProfile
    from memlab.simulation.provenance import ProvenanceMatcher as ProvenanceMatcher
    from memlab.simulation.provenance import applied_effects as applied_effects
    from memlab.simulation.provenance import matcher_agreement as matcher_agreement
else:  # at run time: each name is imported on first use
    __getattr__, __dir__ = lazy_face(__name__)
