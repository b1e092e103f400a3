"""Truth from provenance: which gold fact a stored wording states, as the simulated model knows.

The simulated model records, for every wording it proposes, the gold fact it came from
(:meth:`~memlab.simulation.model.SimulatedBackend.origins`). :class:`ProvenanceMatcher` turns
that record into a matcher: ``covers(stored, gold)`` is true exactly when the model proposed
``stored`` for that gold fact (a restatement counts as the fact it restates; inventions and
leaks state none). Scoring a simulated run with it gives the metrics as the model's decisions
make them, free of any matcher's errors; scoring the same run with a real matcher and
comparing (:func:`matcher_agreement`) measures that matcher on the simulator's wordings.
:func:`applied_effects` tells which of the profile's prompt effects a lane's update prompts
received, so the rates its metrics imply follow from the profile's declared values.

A test instrument, like the simulated model itself.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from memlab.simulation.model import SimulatedBackend

__all__ = ["Agreement", "ProvenanceMatcher", "applied_effects", "matcher_agreement"]


class _Covers(Protocol):
    def covers(self, stored: str, gold: str) -> bool: ...


class ProvenanceMatcher:
    """A matcher that answers from the simulated model's record (see the module docstring)."""

    name = "provenance"

    def __init__(self, backend: SimulatedBackend) -> None:
        self.backend = backend

    def covers(self, stored: str, gold: str) -> bool:
        """True when the model proposed ``stored`` for a gold fact whose text is ``gold``."""
        texts = self.backend.gold_facts
        return any(texts.get(origin) == gold for origin in self.backend.origins(stored))


@dataclass(frozen=True)
class Agreement:
    """A matcher's verdicts against provenance over (stored, gold) pairs.

    Attributes:
        pairs: Pairs judged.
        true_matches: Pairs provenance says match (the stored wording came from that fact).
        found: Of those, pairs the matcher accepted (its recall on the simulator's wordings).
        false_matches: Pairs provenance rejects that the matcher accepted.
    """

    pairs: int
    true_matches: int
    found: int
    false_matches: int

    @property
    def agreement(self) -> float:
        """Share of pairs where the matcher and provenance agree."""
        missed = self.true_matches - self.found
        return 1 - (missed + self.false_matches) / self.pairs if self.pairs else float("nan")


def matcher_agreement(
    matcher: _Covers, truth: ProvenanceMatcher, pairs: Iterable[tuple[str, str]]
) -> Agreement:
    """Compare ``matcher`` with provenance on ``(stored, gold)`` pairs."""
    total = true = found = false = 0
    for stored, gold in pairs:
        expected, said = truth.covers(stored, gold), matcher.covers(stored, gold)
        total += 1
        true += expected
        found += expected and said
        false += said and not expected
    return Agreement(total, true, found, false)


def applied_effects(backend: SimulatedBackend, template_sha256: str) -> tuple[str, ...] | None:
    """The labels of the profile's prompt effects applied to the update prompts of the
    template with this SHA-256 (a lane's ``prompt_sha256``), in order; None when the model was
    sent no update prompt of that template."""
    return backend.prompt_effects().get(template_sha256)
