"""What the metrics should be for a simulated-model lane, from the profile's declared rates.

Truth from provenance: a stored wording states exactly the gold fact the simulated model
proposed it for (a restatement states the fact it restates; inventions and leaks state none).
So nothing here asks a matcher, and nothing reads the profile through the simulator's own
helpers (``share_at_least``, ``pick_*``): shares are computed from the declared fields, so a
wrong draw in the simulator shows up as a measured value away from the expected one.

For one owner, a profile, a confidence threshold and the parse options of the lane:

- The final update of a session parses with ``ok = 1 - f`` (``f``: the declared rates of the
  failure categories that fail under the lane's parse options).
- Gold fact ``g`` revealed in session ``i`` is stored with ``p * q * ok`` (``p`` =
  ``propose_rate``, ``q`` = declared share of confidences >= threshold), in whatever wording.
- If session ``k > i`` retracts it, it is removed with ``rho * ok`` (``rho`` =
  ``remove_retracted``), restatements with it.
- A stored original is restated in each later final update before a retraction with
  ``r * q * ok``, at most once.
- Each final update stores ``invent_rate * q' * ok`` invented facts (``q'`` from
  ``invented_confidence``); a must-not-store string leaks with ``leak_rate * q * ok``.

No cap is assumed (the validation lanes use ``max_facts=500``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from memlab.core.jsondoc.parsing import FailureCategory, ParseOptions
from memlab.datasets.models import Owner
from memlab.simulation.profile_model import SimProfile

__all__ = ["Expected", "expected_counts", "failing_categories"]

_WRAPPERS = {
    FailureCategory.FENCED: "fence",
    FailureCategory.PROSE_WRAPPED: "prose",
    FailureCategory.THINK_BLOCK: "think",
}


def failing_categories(options: ParseOptions) -> set[FailureCategory]:
    """Injected categories that fail under ``options`` (the lenient rung fixes wrappers)."""
    failing = set(FailureCategory)
    if options.lenient:
        failing -= {c for c, wrapper in _WRAPPERS.items() if wrapper in options.strip}
    if options.repair:
        failing.discard(FailureCategory.INVALID_JSON)  # a trailing comma is repaired
    return failing


def _share_at_least(weights: dict[float, float], threshold: float) -> float:
    total = sum(weights.values())
    return sum(w for value, w in weights.items() if value >= threshold) / total


@dataclass
class Expected:
    """Expected final-state counts of one owner (sums of probabilities)."""

    gold_active: int = 0
    gold_covered: float = 0.0
    facts: float = 0.0
    stored_precise: float = 0.0
    retracted_held: float = 0.0
    forbidden_stored: float = 0.0
    restated: float = 0.0
    skipped_below_threshold: float = 0.0


def expected_counts(
    owner: Owner, profile: SimProfile, threshold: float, options: ParseOptions
) -> Expected:
    """Expected final-state counts for ``owner`` (see the module docstring)."""
    q = _share_at_least(profile.confidence, threshold)
    q_invented = _share_at_least(profile.invented_confidence or profile.confidence, threshold)
    failing = failing_categories(options)
    ok = 1.0 - sum(rate for category, rate in profile.failures.items() if category in failing)
    p, rho, r = profile.propose_rate, profile.remove_retracted, profile.restate_rate
    sessions = owner.sessions
    retracted_in = {gid: k for k, s in enumerate(sessions) for gid in s.labels.retracts}
    out = Expected()
    for i, session in enumerate(sessions):
        for fact in session.labels.facts:
            k = retracted_in.get(fact.id)
            kept = 1.0 - rho * ok if k is not None and k > i else 1.0
            stored = p * q * ok * kept
            # Restated in each later session before the retraction (or the end), once.
            chances = (k if k is not None else len(sessions)) - i - 1
            never = (1.0 - r * q * ok) ** max(0, chances)
            restated = stored * (1.0 - never)
            out.facts += stored + restated
            out.restated += restated
            out.skipped_below_threshold += p * (1.0 - q) * ok
            # Restatements below the threshold: one chance per session until one passes.
            alive = 1.0
            for _ in range(max(0, chances)):
                out.skipped_below_threshold += p * q * ok * alive * r * (1.0 - q) * ok
                alive *= 1.0 - r * q * ok
            if k is None:
                out.gold_active += 1
                out.gold_covered += stored
                out.stored_precise += stored + restated
            else:
                out.retracted_held += stored
    # A string repeated in later sessions leaks the same fact again: a duplicate, not stored.
    leaks = Counter(s for session in sessions for s in session.labels.must_not_store)
    for times in leaks.values():
        leaked = 1.0 - (1.0 - profile.leak_rate * q * ok) ** times
        out.facts += leaked
        out.forbidden_stored += leaked
        out.skipped_below_threshold += profile.leak_rate * (1.0 - q) * ok * times
    out.facts += profile.invent_rate * q_invented * ok * len(sessions)
    out.skipped_below_threshold += profile.invent_rate * (1.0 - q_invented) * ok * len(sessions)
    return out
