"""Every metric checked end to end against the value the simulated model's profile implies.

Three built-in profiles replay the bundled ``personas`` dataset through the real pipeline
(middleware, debounced queue, updater, parse ladder, baseline merge) with several seeds each.
The runs are scored with the simulated model's own record of where each stored wording came
from (:class:`~memlab.simulation.provenance.ProvenanceMatcher`), so what is checked is the
pipeline and the metric code, not a matcher. For each metric the expected value per owner
follows from the profile's declared rates (``tests/sim_truth.py``, which shares no code with
the metrics or matchers); the test asserts that 0 lies in a bootstrap interval (owners x seeds
resampled) of measured minus expected. The intervals are Bonferroni-corrected over all checks
of the module, so a correct pipeline fails none of them with 95% probability over seeds. Where
nothing is random the numbers must match exactly. How well the default matcher agrees with
provenance on these wordings is measured separately, at the end.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sim_truth import Expected, expected_counts

from memlab.core.jsondoc.parsing import FailureCategory, parse_options_for
from memlab.datasets.loader import load_dataset
from memlab.datasets.registry import resolve_dataset
from memlab.grids.grid import Grid
from memlab.matching.matchers import default_matcher, resolve_matcher
from memlab.runs.run import Run
from memlab.simulation.model import SimDecision, SimulatedBackend
from memlab.simulation.profile import load_profile
from memlab.simulation.provenance import ProvenanceMatcher, matcher_agreement
from memlab.sweeps.driver import sweep

SEEDS = list(range(6))
#: (profile, threshold, parse preset): one lane per seed each.
LANES = {
    "careful": (0.9, "default"),
    "sloppy": (0.7, "strict_only"),
    "chatty": (0.7, "default"),
}
CHECKS = 60  # an upper bound on the interval checks in this module (Bonferroni)
LEVEL = 1 - 0.05 / CHECKS
RESAMPLES = 20000

OWNERS = load_dataset(resolve_dataset("personas"))


@cache
def _run(profile: str, tmp: Path) -> tuple[Run, SimulatedBackend]:
    threshold, parse = LANES[profile]
    backend = SimulatedBackend(profile, dataset=OWNERS)
    grid = Grid.from_mapping(
        {
            "name": f"validate-{profile}",
            "dataset": "personas",
            "base": {
                "backend": f"sim:{profile}",
                "fact_confidence_threshold": threshold,
                "max_facts": 500,
                "parse": parse,
            },
            "axes": {"seed": SEEDS},
        }
    )
    run = sweep(
        "personas",
        grid,
        runs_dir=tmp,
        progress=False,
        resume=False,
        max_workers=1,
        backend_factory=lambda _spec: backend,
        matcher=ProvenanceMatcher(backend),
    )
    return run, backend


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Run]:
    tmp = tmp_path_factory.mktemp("sim-runs")
    return lambda profile: _run(profile, tmp)[0]


@pytest.fixture(scope="module")
def backends(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], SimulatedBackend]:
    tmp = tmp_path_factory.mktemp("sim-runs")
    return lambda profile: _run(profile, tmp)[1]


def _interval(diff_num: np.ndarray, den: np.ndarray) -> tuple[float, float]:
    """Bootstrap interval of sum(diff_num) / sum(den), units resampled with replacement."""
    rng = np.random.default_rng(12345)
    picks = rng.integers(0, len(den), size=(RESAMPLES, len(den)))
    stats = diff_num[picks].sum(axis=1) / den[picks].sum(axis=1)
    tail = (1 - LEVEL) / 2
    low, high = np.quantile(stats, [tail, 1 - tail])
    return float(low), float(high)


def _final_rows(run: Run) -> pd.DataFrame:
    sessions = run.sessions.sort_values("session_index")
    return sessions.groupby(["lane_id", "user_id"]).tail(1).set_index(["lane_id", "user_id"])


def _expected(profile: str) -> dict[str, Expected]:
    threshold, parse = LANES[profile]
    options = parse_options_for(parse)
    return {
        o.user_id: expected_counts(o, load_profile(profile), threshold, options) for o in OWNERS
    }


# (metric, measured column, expected attribute, denominator column or None for per owner)
METRICS = [
    ("recall", "gold_covered", "gold_covered", "gold_active"),
    ("precision", "stored_precise", "stored_precise", "facts"),
    ("stored facts", "facts", "facts", None),
    ("retracted facts held", "retracted_held", "retracted_held", None),
    ("forbidden content stored", "forbidden_stored", "forbidden_stored", None),
    ("near duplicates", "dup_near", "restated", None),
]


@pytest.mark.parametrize("profile", list(LANES))
@pytest.mark.parametrize(("metric", "column", "attribute", "den"), METRICS)
def test_state_metric_matches_the_profile(
    runs: Callable[[str], Run],
    profile: str,
    metric: str,
    column: str,
    attribute: str,
    den: str | None,
) -> None:
    final = _final_rows(runs(profile))
    expected = _expected(profile)
    users = final.index.get_level_values("user_id")
    exp = np.array([getattr(expected[u], attribute) for u in users], dtype=float)
    measured = final[column].to_numpy(dtype=float)
    if den is None:
        denominator = np.ones(len(final))
    elif den == "facts":  # precision: the expected ratio uses the expected stored facts
        denominator = final["facts"].to_numpy(dtype=float)
        exp = exp * denominator / np.array([expected[u].facts for u in users])
    else:
        denominator = final[den].to_numpy(dtype=float)
    low, high = _interval(measured - exp, denominator)
    value = measured.sum() / denominator.sum()
    target = exp.sum() / denominator.sum()
    assert low <= 0 <= high, (
        f"{profile}: {metric} measured {value:.3f}, the profile implies {target:.3f}; "
        f"measured - expected interval [{low:.3f}, {high:.3f}] excludes 0"
    )


@pytest.mark.parametrize("profile", list(LANES))
def test_threshold_filtered_proposals_match_the_profile(
    runs: Callable[[str], Run], profile: str
) -> None:
    run = runs(profile)
    per_unit = run.sessions.groupby(["lane_id", "user_id"])["skipped_below_threshold"].sum()
    expected = _expected(profile)
    users = per_unit.index.get_level_values("user_id")
    exp = np.array([expected[u].skipped_below_threshold for u in users])
    low, high = _interval(per_unit.to_numpy(dtype=float) - exp, np.ones(len(exp)))
    assert low <= 0 <= high, (per_unit.sum(), exp.sum(), low, high)


def _category_counts(run: Run) -> tuple[pd.DataFrame, np.ndarray]:
    calls = run.calls
    outcome = calls["parse_category"].fillna("ok")
    wrappers = calls["parse_wrappers"].fillna("")
    recovered = calls["parse_ok"].astype(bool) & (wrappers != "")
    outcome = outcome.where(~recovered, "ok+" + wrappers)
    counts = pd.crosstab([calls["lane_id"], calls["user_id"]], outcome)
    return counts, counts.sum(axis=1).to_numpy(dtype=float)


def test_each_failure_category_appears_with_its_injected_rate(
    runs: Callable[[str], Run],
) -> None:
    """sloppy injects all nine categories; strict-only parsing reports each one as such."""
    profile = load_profile("sloppy")
    counts, calls = _category_counts(runs("sloppy"))
    assert set(profile.failures) == set(FailureCategory)
    for category, rate in profile.failures.items():
        measured = counts.get(category.value, pd.Series(0, index=counts.index))
        low, high = _interval(measured.to_numpy(dtype=float) - rate * calls, calls)
        assert low <= 0 <= high, f"{category}: {measured.sum() / calls.sum():.3f} vs {rate}"


@pytest.mark.parametrize(
    ("profile", "wrapper", "category"),
    [
        ("careful", "fence", FailureCategory.FENCED),
        ("chatty", "prose", FailureCategory.PROSE_WRAPPED),
        ("chatty", "think", FailureCategory.THINK_BLOCK),
    ],
)
def test_lenient_parsing_recovers_wrapped_replies_at_the_injected_rate(
    runs: Callable[[str], Run], profile: str, wrapper: str, category: FailureCategory
) -> None:
    rate = load_profile(profile).failures[category]
    counts, calls = _category_counts(runs(profile))
    measured = counts.get(f"ok+{wrapper}", pd.Series(0, index=counts.index))
    low, high = _interval(measured.to_numpy(dtype=float) - rate * calls, calls)
    assert low <= 0 <= high, f"{wrapper}: {measured.sum() / calls.sum():.3f} vs {rate}"
    assert category.value not in counts.columns  # the lenient rung recovered every one


PERFECT = (
    "name: perfect\npropose_rate: 1.0\nwording: {verbatim: 1}\nconfidence: {1.0: 1}\n"
    "remove_retracted: 1.0\n"
)


def _perfect_run(tmp_path: Path, matcher: str) -> Run:
    profile = tmp_path / "perfect.yaml"
    profile.write_text(PERFECT, encoding="utf-8")
    backend = SimulatedBackend(profile, dataset=OWNERS)
    grid = Grid.from_mapping(
        {"name": f"perfect-{matcher}", "base": {"backend": f"sim:{profile}", "max_facts": 500}}
    )
    scorer = ProvenanceMatcher(backend) if matcher == "provenance" else resolve_matcher(matcher)
    return sweep(
        "personas",
        grid,
        runs_dir=tmp_path,
        progress=False,
        backend_factory=lambda _spec: backend,
        matcher=scorer,
    )


def test_a_perfect_profile_gives_exact_numbers(tmp_path: Path) -> None:
    """Nothing random: every fact proposed verbatim at confidence 1, every retraction
    removed, no failures. Recall and precision are 1, no retracted fact is held."""
    summary = _perfect_run(tmp_path, "provenance").summary.iloc[0]
    gold = sum(len(s.labels.facts) for o in OWNERS for s in o.sessions)
    retracted = sum(len(s.labels.retracts) for o in OWNERS for s in o.sessions)
    assert retracted > 0  # a sentinel: the data does retract facts
    assert summary["parse_failures"] == 0
    assert summary["recall"] == 1.0 and summary["precision"] == 1.0
    assert summary["precision_macro"] == 1.0
    assert summary["retracted_held"] == 0 and summary["retracted_held_rate"] == 0.0
    assert summary["added"] == gold
    assert summary["removed"] == retracted
    assert summary["final_facts"] == gold - retracted
    assert summary["dup_near"] == 0 and summary["forbidden_stored"] == 0
    assert summary["stale_rmst"] == 0.0  # every retracted fact removed in its session


@pytest.mark.needs_embeddings
def test_the_default_matcher_agrees_on_the_perfect_profile(tmp_path: Path) -> None:
    """The real metric, not only provenance: no remaining fact may "state" a retracted one,
    and no add may "state" a fact already held: the default matcher must read the personas
    facts apart."""
    run = _perfect_run(tmp_path, "default")
    summary = run.summary.iloc[0]
    assert run.environment["matcher"]["name"] == "default"
    assert summary["retracted_held"] == 0 and summary["recall"] == 1.0
    assert summary["precision"] == 1.0
    assert summary["op_add_precision"] == 1.0 and summary["op_adds_redundant"] == 0


def test_the_lexical_default_matcher_holds_no_retracted_fact_on_the_perfect_profile(
    tmp_path: Path,
) -> None:
    """Without embeddings (``default-lexical``, another matcher by name) the final memory is
    read exactly too; only whether an add restates a fact already held may differ (it reads
    "Published his Rust GPX CLI" as covering "Learning Rust"), which is why a run records
    which of the two scored it."""
    run = _perfect_run(tmp_path, "default-lexical")
    summary = run.summary.iloc[0]
    assert run.environment["matcher"]["name"] == "default-lexical"
    assert summary["retracted_held"] == 0 and summary["recall"] == 1.0
    assert summary["precision"] == 1.0


def test_default_matcher_agreement_with_provenance(
    runs: Callable[[str], Run], backends: Callable[[str], SimulatedBackend]
) -> None:
    """Matcher-on-simulator agreement, reported apart from the metric checks above: every
    (stored fact, gold fact of its owner) pair of the runs' final memories, judged by the
    default matcher and by provenance."""
    matcher = default_matcher()
    gold_of = {o.user_id: [f.content for s in o.sessions for f in s.labels.facts] for o in OWNERS}
    lines = []
    for profile in LANES:
        run, truth = runs(profile), ProvenanceMatcher(backends(profile))
        pairs = [
            (str(fact), gold)
            for lane_id in run.lanes
            for user, facts in run.final_facts(lane_id).groupby("user_id")["content"]
            for fact in facts
            for gold in gold_of[str(user)]
        ]
        found = matcher_agreement(matcher, truth, pairs)
        assert found.true_matches > 0 and found.pairs > found.true_matches  # sentinels
        lines.append(
            f"{profile}: {found.pairs} pairs, agreement {found.agreement:.1%}, matches found "
            f"{found.found}/{found.true_matches}, false matches {found.false_matches}"
        )
        # The default matcher misses terse wordings (sloppy words 60% of facts tersely) and
        # accepts a few wrong pairs, but agrees on the large majority.
        assert found.agreement > 0.9, lines[-1]
    print("\n".join(lines))


def test_the_pipeline_counts_exactly_the_failures_the_model_produced(tmp_path: Path) -> None:
    """Per call: the category the parse ladder reports is the one the model injected."""
    sim = SimulatedBackend("sloppy", dataset=OWNERS, seed=3)
    decisions: list[SimDecision] = []

    class Recording:
        name, model = sim.name, sim.model

        def complete(self, request):  # type: ignore[no-untyped-def]
            decisions.append(sim.decide(str(request.messages[-1]["content"])))
            return sim.complete(request)

    grid = Grid.from_mapping(
        {"name": "exact-failures", "max_owners": 6, "base": {"parse": "strict_only"}}
    )
    run = sweep(
        "personas",
        grid,
        runs_dir=tmp_path,
        backend_factory=lambda _spec: Recording(),
        max_workers=1,
        progress=False,
    )
    injected = pd.Series([str(d.failure.value) if d.failure else "ok" for d in decisions])
    reported = run.calls["parse_category"].fillna("ok")
    assert injected.value_counts().to_dict() == reported.value_counts().to_dict()
    assert len(decisions) == len(run.calls) > 50
