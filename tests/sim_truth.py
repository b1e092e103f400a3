"""What the metrics should be for a simulated-model lane, derived from the profile alone.

For one owner, a profile, a confidence threshold and the parse options of the lane (which
failure categories fail), the expected final-state counts follow from the declared behaviour:

- The final update of session ``i`` parses with ``1 - f`` (``f`` = the injected rate of the
  categories that fail under the lane's parse options).
- Gold fact ``g`` of session ``i`` ends up stored in style ``s`` with
  ``p * w_s * q * (1 - f)`` (``q`` = share of confidences >= threshold), times
  ``1 - rho * (1 - f_k)`` when session ``k`` retracts it (``rho`` = ``remove_retracted``).
- A gold fact is covered when any stored fact covers it (the sweep's default matcher decides on the
  exact wordings); facts are taken as independent.
- A stored original of ``g`` is restated in each later final update with ``r * q * (1 - f)``
  (never in the session that retracts it), at most once; restatements are removed with it.
- Each final update stores ``invent_rate * q' * (1 - f)`` invented facts (``q'`` from
  ``invented_confidence``) and each
  must-not-store string leaks with ``leak_rate * q * (1 - f)``.

No cap is assumed (the validation lanes use ``max_facts=500``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from memlab.core.parsing import FailureCategory, ParseOptions
from memlab.datasets.models import Owner
from memlab.matching.base import FactMatcher
from memlab.matching.matchers import default_matcher
from memlab.simulation.profile import SimProfile, leaked, worded

__all__ = ["Expected", "expected_counts", "failing_categories"]

_LENIENT_OK = {
    FailureCategory.FENCED,
    FailureCategory.PROSE_WRAPPED,
    FailureCategory.THINK_BLOCK,
}


def failing_categories(options: ParseOptions) -> set[FailureCategory]:
    """Injected categories that fail under ``options`` (the lenient rung fixes wrappers)."""
    failing = set(FailureCategory)
    if options.lenient:
        failing -= {c for c in _LENIENT_OK if _wrapper(c) in options.strip}
    if options.repair:
        failing.discard(FailureCategory.INVALID_JSON)  # a trailing comma is repaired
    return failing


def _wrapper(category: FailureCategory) -> str:
    return {
        FailureCategory.FENCED: "fence",
        FailureCategory.PROSE_WRAPPED: "prose",
        FailureCategory.THINK_BLOCK: "think",
    }[category]


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
    matcher = default_matcher()  # the matcher a sweep scores with
    q = profile.share_at_least(threshold)
    ok = 1.0 - profile.failure_rate(failing_categories(options))
    p, rho, r = profile.propose_rate, profile.remove_retracted, profile.restate_rate
    sessions = owner.sessions
    retracted_in = {gid: k for k, s in enumerate(sessions) for gid in s.labels.retracts}
    gold = {f.id: (i, f) for i, s in enumerate(sessions) for f in s.labels.facts}
    active = {gid: f.content for gid, (_i, f) in gold.items() if gid not in retracted_in}
    out = Expected(gold_active=len(active))

    # Every fact that can be stored at the end, with the probability that it is; the
    # wordings of one gold fact exclude each other, so they form one group.
    stored: list[list[tuple[str, float]]] = []
    for gid, (i, fact) in gold.items():
        kept = 1.0 - rho * ok if gid in retracted_in else 1.0
        shares = profile.wording_shares().items()
        stored.append([(worded(fact.content, s), p * w * q * ok * kept) for s, w in shares])
        # Restatement: in each later session before a retraction, once.
        last = retracted_in.get(gid, len(sessions))
        not_yet = 1.0
        for _j in range(i + 1, last):
            not_yet *= 1.0 - r * q * ok
        restated = p * q * ok * (1.0 - not_yet) * kept
        out.restated += restated
        out.facts += restated
        # A restatement has the content words of the stored wording it restates.
        out.stored_precise += restated * sum(
            w
            for s, w in shares
            if any(matcher.covers(worded(fact.content, s), g) for g in active.values())
        )
        out.skipped_below_threshold += p * (1.0 - q) * ok
        out.skipped_below_threshold += (
            p
            * q
            * ok
            * sum(
                not_yet_before * r * (1.0 - q) * ok
                for not_yet_before in _survival(r * q * ok, last - i - 1)
            )
        )
    # A string repeated in later sessions leaks the same fact again: a duplicate, not stored.
    leaks = Counter(leaked(s) for session in sessions for s in session.labels.must_not_store)
    for text, times in leaks.items():
        prob = 1.0 - (1.0 - profile.leak_rate * q * ok) ** times
        stored.append([(text, prob)])
        out.forbidden_stored += prob
        out.skipped_below_threshold += profile.leak_rate * (1.0 - q) * ok * times
    q_invented = profile.share_at_least(threshold, invented=True)
    out.facts += profile.invent_rate * q_invented * ok * len(sessions)
    out.skipped_below_threshold += profile.invent_rate * (1.0 - q_invented) * ok * len(sessions)

    for text, prob in (item for group in stored for item in group):
        out.facts += prob
        if any(matcher.covers(text, g) for g in active.values()):
            out.stored_precise += prob
    for content in active.values():
        out.gold_covered += _any_covers(stored, content, matcher)
    for gid in retracted_in:
        if gid in gold:
            out.retracted_held += _any_covers(stored, gold[gid][1].content, matcher)
    return out


def _survival(hazard: float, steps: int) -> list[float]:
    """P(not yet happened) before each of ``steps`` independent chances with ``hazard``."""
    values, alive = [], 1.0
    for _ in range(max(0, steps)):
        values.append(alive)
        alive *= 1.0 - hazard
    return values


def _any_covers(stored: list[list[tuple[str, float]]], gold: str, matcher: FactMatcher) -> float:
    """P(at least one stored fact covers ``gold``), groups taken as independent."""
    none = 1.0
    for group in stored:
        none *= 1.0 - sum(prob for text, prob in group if matcher.covers(text, gold))
    return 1.0 - none
