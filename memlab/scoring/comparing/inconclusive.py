"""Why a comparison cannot say whether the candidate is better: every reason, in one place.

A paired comparison (:func:`memlab.scoring.comparing.comparison.compare_lanes`) that finds no
significant difference has answered only when a difference could have been seen. It could
not when:

- the backend ignores prompts: both lanes replay a backend that does not read prompt text
  (the simulated model's profiles, :attr:`memlab.backends.registry.BackendPlugin.reads_prompts`)
  while their prompts differ;
- there are too few owners: fewer than any paired test needs ("no test possible"), or, for a
  stated tolerance, a minimum detectable effect larger than it (with the owners that would
  detect it, :func:`memlab.scoring.inference.paired_tests.owners_to_detect`), or no spread
  among the owners to size a test on;
- the judge's verdicts are unreadable for more than :data:`JUDGE_UNREADABLE_SHARE` of the
  answers on either side;
- replies fail to parse on both sides (at least :data:`BOTH_UNPARSED_SHARE`);
- a primary metric is "not comparable" or "not computable".

:func:`inconclusive_reasons` runs every check of :data:`REASON_CHECKS` (a check takes a
:class:`Comparison` and returns :class:`Reason` s; a new kind of reason is a new check there).
``compare``, the gate, the report's verdict and the prompt trial all read them from here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from memlab.scoring.comparing.comparability import LaneFacts
from memlab.scoring.inference.paired_tests import min_test_owners, owners_to_detect
from memlab.scoring.metric_specs import metric_spec

__all__ = [
    "BOTH_UNPARSED_SHARE",
    "ECHO_SHARE",
    "JUDGE_UNREADABLE_SHARE",
    "REASON_CHECKS",
    "SIDE_RATES",
    "ComparedPair",
    "Comparison",
    "Reason",
    "ReasonCheck",
    "Undetectable",
    "concerning",
    "echoed_prompt",
    "ignored_prompts",
    "inconclusive_reasons",
    "inconclusive_text",
    "missing_primary",
    "shown_verdicts",
    "too_few_owners",
    "undetectable",
    "unparsed_replies",
    "unreadable_verdicts",
]

BOTH_UNPARSED_SHARE = 0.5
"""Replies failing to parse on both sides at least this often leave too little to compare."""

JUDGE_UNREADABLE_SHARE = 0.2
"""Answers without a readable judge verdict above this share on either side make QA
accuracy a measure of the judge, not of the memory."""

ECHO_SHARE = 0.2
"""Replies that store the prompt's own text (:mod:`memlab.core.jsondoc.echo`) above this share on
either side: the model copies its instructions, so what it stores says little about what
the prompt asks for."""

SIDE_RATES: tuple[str, ...] = ("parse_failure_rate", "qa_judge_error_rate", "echo_rate")
"""Rates the checks read of each side of a pair, on the owners both share."""


@dataclass(frozen=True)
class ComparedPair:
    """One baseline lane and one candidate lane as compared.

    Attributes:
        baseline: What the baseline lane is.
        candidate: What the candidate lane is.
        owners: The owners both lanes have.
        rates: :data:`SIDE_RATES` the lanes have, as (baseline, candidate) on those owners.
    """

    baseline: LaneFacts
    candidate: LaneFacts
    owners: int
    rates: Mapping[str, tuple[float, float]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """``candidate run: lane vs baseline run: lane`` for messages."""
        return f"{self.candidate.name} vs {self.baseline.name}"

    def __deepcopy__(self, memo: dict[int, Any]) -> ComparedPair:
        """Itself: a pair is never changed once compared, and pandas deep-copies a table's
        ``attrs`` (where :func:`memlab.scoring.comparing.comparison.compare_lanes` keeps the
        pairs) on every derived frame and row, each time copying both lanes' owner sets."""
        return self


@dataclass(frozen=True)
class Reason:
    """One reason a comparison is inconclusive.

    Attributes:
        kind: What kind of reason (``prompts ignored``, ``no test possible``, ``too few
            owners``, ``no spread``, ``verdicts unreadable``, ``replies unparsed``,
            ``not comparable``).
        text: The reason in one sentence, naming the lanes.
        short: A few words for a heading (``the backend ignores prompts``).
        lane: The candidate lane's label ("" when it concerns no single lane).
        metrics: The metrics it concerns (empty when the whole comparison).
    """

    kind: str
    text: str
    short: str
    lane: str = ""
    metrics: tuple[str, ...] = ()

    def __str__(self) -> str:
        return self.text

    def concerns(self, lane: str, metric: str) -> bool:
        """Whether this reason leaves ``metric`` of the candidate lane ``lane`` undecided: a
        reason about the whole comparison (no metrics: the backend ignores prompts, the model
        echoes the prompt, replies failing to parse on both sides) concerns every metric, one
        about some metrics only those; one about no single lane concerns every lane."""
        return (not self.metrics or metric in self.metrics) and self.lane in ("", lane)


def concerning(reasons: Sequence[Reason], lane: str, metric: str) -> str:
    """The short texts of the reasons that concern ``metric`` of the candidate lane ``lane``
    (:meth:`Reason.concerns`), each once, joined by "; "; "" when none does."""
    return "; ".join(dict.fromkeys(r.short for r in reasons if r.concerns(lane, metric)))


def inconclusive_text(reasons: Sequence[Reason], lane: str, metric: str) -> str:
    """What a table shows for ``metric`` of the candidate lane ``lane`` in place of its verdict:
    ``inconclusive: <short>; <short>`` (:func:`concerning`); "" when no reason concerns it (its
    verdict stands)."""
    why = concerning(reasons, lane, metric)
    return f"inconclusive: {why}" if why else ""


def shown_verdicts(
    table: pd.DataFrame, verdicts: Sequence[str], reasons: Sequence[Reason]
) -> list[str]:
    """``verdicts`` (one per row of the comparison ``table``) as a table shows them: a row's
    :func:`inconclusive_text` in place of its verdict when a reason concerns its metric."""
    rows = zip(table["lane"], table["metric"], verdicts, strict=True)
    return [inconclusive_text(reasons, str(lane), str(m)) or str(v) for lane, m, v in rows]


@dataclass(frozen=True)
class Comparison:
    """What the checks read: the comparison table, its pairs, and the tolerances stated."""

    table: pd.DataFrame
    pairs: Sequence[ComparedPair]
    tolerances: Mapping[str, float] = field(default_factory=dict)
    power: float = 0.80


ReasonCheck = Callable[[Comparison], list[Reason]]
"""A check: the reasons it finds in a comparison."""


def _fmt_size(metric: str, size: float) -> str:
    return metric_spec(metric).fmt_delta(size).lstrip("+")


@dataclass(frozen=True)
class Undetectable:
    """A metric whose regression of ``tolerance`` the comparison cannot show it would detect:
    too few owners for any test (``mde`` infinite), a minimum detectable effect (at the level
    its verdict used, 80% power) larger than the tolerance, or no spread among the owners to
    size a test on (``mde`` NaN), and the delta's interval does not rule such a regression
    out. ``needed``: the owners that would detect it (``None`` when it cannot be said)."""

    lane: str
    metric: str
    tolerance: float
    owners: int
    mde: float
    needed: int | None = None
    least: int = 0
    """The fewest owners any test at this level needs."""

    @property
    def kind(self) -> str:
        """``no test possible``, ``no spread`` or ``too few owners``."""
        if math.isinf(self.mde):
            return "no test possible"
        return "no spread" if math.isnan(self.mde) else "too few owners"

    @property
    def what(self) -> str:
        """The finding without the lane and metric."""
        size = _fmt_size(self.metric, self.tolerance)
        if self.kind == "no test possible":
            return (
                f"no test possible: {_owners(self.owners)} (a paired test at this level needs at "
                f"least {self.least}), so a regression of {size} cannot be detected"
            )
        if self.kind == "no spread":
            return (
                f"no spread to size a test on: every one of {self.owners} owners has the same "
                f"value on both sides, so whether a regression of {size} would be detected "
                "cannot be said"
            )
        needed = f"about {self.needed} owners would" if self.needed else "no number of owners"
        return (
            f"cannot detect a regression of {size} with {self.owners} owners (MDE "
            f"{_fmt_size(self.metric, self.mde)}): {needed} detect it"
        )

    def __str__(self) -> str:
        return (
            f"{self.lane}: {self.metric}: {self.what}; compare on more owners, or pass a "
            "--tolerance it can detect [--no-significant-regression]"
        )

    @property
    def reason(self) -> Reason:
        """The finding as a :class:`Reason`."""
        size = _fmt_size(self.metric, self.tolerance)
        short = {
            "no test possible": f"no test possible: {_owners(self.owners)}",
            "no spread": _NO_SPREAD,
            "too few owners": f"too few owners for a {size} tolerance",
        }[self.kind]
        return Reason(
            self.kind, f"{self.lane}: {self.metric}: {self.what}", short, self.lane, (self.metric,)
        )


_NO_SPREAD = "no spread among owners to size a test on"


def _alpha(row: pd.Series) -> float:
    level = float(row["level"])
    return 0.05 if math.isnan(level) else 1 - level


def _ruled_out(row: pd.Series, limit: float) -> bool:
    """Whether the delta's interval excludes a regression of ``limit`` (its pessimistic end
    is better than ``-limit``)."""
    spec = metric_spec(str(row["metric"]))
    worst = float(row["delta_lo"]) if spec.higher_is_better else -float(row["delta_hi"])
    return not math.isnan(worst) and worst > -limit


def _perfect(row: pd.Series) -> bool:
    """Both sides at the metric's best value (0 parse failures on every owner): nothing
    regressed in these owners, and a spread of 0 is what perfection looks like."""
    spec = metric_spec(str(row["metric"]))
    best = spec.valid[1] if spec.higher_is_better else spec.valid[0]
    return bool(row["verdict"] == "no change") and float(row["value"]) == best


def undetectable(
    table: pd.DataFrame, tolerances: Mapping[str, float], *, power: float = 0.80
) -> list[Undetectable]:
    """Rows where a regression of the metric's tolerance could have gone unseen (see
    :class:`Undetectable`); rows already worse or not computable are failures of their own."""
    found = []
    for _, row in table.iterrows():
        metric = str(row["metric"])
        limit = tolerances.get(metric)
        if limit is None or row["verdict"] in ("worse", "not computable", "not applicable"):
            continue
        mde, owners, alpha = float(row["mde"]), int(row["owners"]), _alpha(row)
        if math.isnan(mde) and (row["verdict"] != "no change" or _perfect(row)):
            continue  # a change with no spread (or no resamples) is sized by its interval
        if math.isinf(mde) or math.isnan(mde) or (mde > limit and not _ruled_out(row, limit)):
            needed = owners_to_detect(limit, mde, owners, alpha=alpha, power=power)
            lane = str(row["lane"])
            found.append(
                Undetectable(lane, metric, limit, owners, mde, needed, min_test_owners(alpha))
            )
    return found


def too_few_owners(comparison: Comparison) -> list[Reason]:
    """Primary metrics no test can decide with so few owners or without any spread among the
    owners to size one on, and, for each stated tolerance, the metrics that cannot show they
    would detect it (:func:`undetectable`)."""
    table = comparison.table
    found = undetectable(table, comparison.tolerances, power=comparison.power)
    covered = {(u.lane, u.metric) for u in found}
    no_test: dict[tuple[str, str, int, int], list[str]] = {}
    reasons = [u.reason for u in found]
    for _, row in table.iterrows():
        key = (str(row["lane"]), str(row["metric"]))
        if row["role"] != "primary" or key in covered:
            continue
        if math.isnan(float(row["mde"])) and row["verdict"] == "no change" and not _perfect(row):
            text = (
                f"{row['run']}: {row['lane']} vs {row['baseline_run']}: {row['baseline_lane']}: "
                f"{key[1]}: no spread to size a test on: every one of {int(row['owners'])} "
                "owners has the same value on both sides"
            )
            reasons.append(Reason("no spread", text, _NO_SPREAD, key[0], (key[1],)))
            continue
        if not math.isinf(float(row["mde"])):
            continue
        where = f"{row['run']}: {row['lane']} vs {row['baseline_run']}: {row['baseline_lane']}"
        group = (where, key[0], int(row["owners"]), min_test_owners(_alpha(row)))
        no_test.setdefault(group, []).append(key[1])
    for (where, lane, owners, least), metrics in no_test.items():
        text = (
            f"{where}: no test possible: {_owners(owners)} ({', '.join(metrics)}; a paired test "
            f"at this level needs at least {least}): a change is an observation on "
            f"{_owners(owners)}, not a tested difference"
        )
        short = f"no test possible: {_owners(owners)}"
        reasons.append(Reason("no test possible", text, short, lane, tuple(metrics)))
    return reasons


def _prompts_differ(a: LaneFacts, b: LaneFacts) -> bool:
    if a.prompt_sha256 and b.prompt_sha256:
        return a.prompt_sha256 != b.prompt_sha256
    return a.prompt != b.prompt


def ignored_prompts(comparison: Comparison) -> list[Reason]:
    """Pairs whose prompts differ on a backend that reads neither."""
    reasons = []
    for pair in comparison.pairs:
        a, b = pair.baseline, pair.candidate
        if a.reads_prompts or b.reads_prompts or not _prompts_differ(a, b):
            continue
        backends = " and ".join(dict.fromkeys([a.backend or "?", b.backend or "?"]))
        what = "replays a simulated profile that ignores" if a.simulated else "ignores"
        text = (
            f"{pair.name}: the backend ignores prompts: {backends} {what} prompt "
            f"text, and the prompts differ ({b.prompt} vs {a.prompt}); compare prompts on a "
            "backend that reads them"
        )
        reasons.append(Reason("prompts ignored", text, "the backend ignores prompts", b.lane))
    return reasons


def _shares(pair: ComparedPair, metric: str) -> tuple[float, float]:
    return pair.rates.get(metric, (math.nan, math.nan))


def _pct(value: float) -> str:
    return f"{value * 100:.0f}%"


def _either_side_above(
    comparison: Comparison,
    metric: str,
    limit: float,
    reason: tuple[str, str],
    says: Callable[[str, str], str],
    concerns: tuple[str, ...] = (),
) -> list[Reason]:
    """A reason (``kind``, ``short``) for each pair where ``metric`` is above ``limit`` on
    either side, its text ``pair name: says(baseline %, candidate %)``, about the metrics
    ``concerns`` (none: the whole comparison)."""
    kind, short = reason
    reasons = []
    for pair in comparison.pairs:
        base, cand = _shares(pair, metric)
        if base > limit or cand > limit:
            text = f"{pair.name}: {says(_pct(base), _pct(cand))}"
            reasons.append(Reason(kind, text, short, pair.candidate.lane, concerns))
    return reasons


def unreadable_verdicts(comparison: Comparison) -> list[Reason]:
    """Pairs where either side's judge left more than :data:`JUDGE_UNREADABLE_SHARE` of the
    answers without a readable verdict; it concerns the rates a judge grades only."""
    # Imported here: QA scoring loads the tokenizers, which a comparison without QA never needs.
    from memlab.scoring.qa.qa_metrics import judged_metrics

    return _either_side_above(
        comparison,
        "qa_judge_error_rate",
        JUDGE_UNREADABLE_SHARE,
        ("verdicts unreadable", "judge verdicts unreadable"),
        lambda base, cand: (
            f"judge verdicts unreadable for {base} (baseline) and {cand} (candidate) of the "
            f"answers, above {_pct(JUDGE_UNREADABLE_SHARE)}: QA accuracy measures the judge, "
            "not the memory"
        ),
        # Only the rates a judge grades: what memory stores is measured without one.
        tuple(judged_metrics()),
    )


def unparsed_replies(comparison: Comparison) -> list[Reason]:
    """Pairs whose replies fail to parse at least :data:`BOTH_UNPARSED_SHARE` of the time on
    both sides."""
    reasons = []
    for pair in comparison.pairs:
        base, cand = _shares(pair, "parse_failure_rate")
        if not (base >= BOTH_UNPARSED_SHARE and cand >= BOTH_UNPARSED_SHARE):
            continue
        text = (
            f"{pair.name}: replies failing to parse on both sides ({_pct(base)} and "
            f"{_pct(cand)}): too few updates stored to compare what memory keeps"
        )
        short = "replies failing to parse on both sides"
        reasons.append(Reason("replies unparsed", text, short, pair.candidate.lane))
    return reasons


def echoed_prompt(comparison: Comparison) -> list[Reason]:
    """Pairs where either side's model echoes the prompt's own text (its example or its
    instructions) in more than :data:`ECHO_SHARE` of the replies."""
    return _either_side_above(
        comparison,
        "echo_rate",
        ECHO_SHARE,
        ("prompt echoed", "the model echoes the prompt"),
        lambda base, cand: (
            f"the model echoes the prompt's own text in {base} (baseline) and {cand} "
            "(candidate) of the replies: it copies the prompt instead of reading the "
            "conversation"
        ),
    )


def missing_primary(comparison: Comparison) -> list[Reason]:
    """Primary metrics one side has no value of: ``not comparable`` (the baseline's is
    missing) or ``not computable`` (the candidate's)."""
    reasons = []
    for _, row in comparison.table.iterrows():
        verdict = str(row["verdict"])
        if row["role"] != "primary" or verdict not in ("not comparable", "not computable"):
            continue
        side = "baseline" if verdict == "not comparable" else "candidate"
        metric = str(row["metric"])
        text = (
            f"{row['run']}: {row['lane']} vs {row['baseline_run']}: {row['baseline_lane']}: "
            f"{metric} {verdict} (the {side} has no value of it)"
        )
        reasons.append(
            Reason("not comparable", text, f"{metric} {verdict}", str(row["lane"]), (metric,))
        )
    return reasons


REASON_CHECKS: tuple[ReasonCheck, ...] = (
    ignored_prompts,
    too_few_owners,
    unreadable_verdicts,
    unparsed_replies,
    echoed_prompt,
    missing_primary,
)
"""Every check :func:`inconclusive_reasons` runs, in the order their reasons are listed."""


def inconclusive_reasons(
    table: pd.DataFrame,
    *,
    tolerances: Mapping[str, float] | None = None,
    power: float = 0.80,
    checks: Sequence[ReasonCheck] = REASON_CHECKS,
) -> list[Reason]:
    """Every reason the comparison ``table`` (of
    :func:`memlab.scoring.comparing.comparison.compare_lanes`, which records its pairs in
    ``table.attrs["pairs"]``) cannot say whether a candidate is better; empty when it can.
    ``tolerances``: the regression size each metric must be shown detectable at (the gate's
    ``--tolerance``); without, only "no test possible" is checked
    of the owners' number."""
    pairs = table.attrs.get("pairs", [])
    comparison = Comparison(table, pairs, tolerances or {}, power)
    found: list[Reason] = []
    for check in checks:
        found += [reason for reason in check(comparison) if reason not in found]
    return found


def _owners(n: int) -> str:
    """``1 owner``, ``2 owners``."""
    return f"{n} owner" if n == 1 else f"{n} owners"
