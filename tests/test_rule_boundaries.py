"""Rules at their edges: each test fails for one plausible small bug in a critical module.

Fast (no sweep except one), so that ``scripts/mutation.py`` can run them for every mutant:
owners paired by name, significance from Holm's step-down, the interval's tail, the MDE's
factor, the simulated profile's draws, the injection audit's order and budget edge, the
near-duplicate merge on a tie, report escaping, input size limits and the cache format.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import optimize, stats
from test_verdicts import FakeRun, recall_gain

from memlab.backends.caching.cache import CACHE_FORMAT, decode_entry
from memlab.core.base.jsontext import MAX_JSON_DEPTH, loads_json
from memlab.core.base.safe_names import MAX_COMPONENT_CHARS, unsafe_reason
from memlab.core.base.yamlio import (
    MAX_YAML_BYTES,
    MAX_YAML_NODES,
    YamlInputError,
    parse_yaml,
    read_text_limited,
)
from memlab.core.jsondoc.document import create_empty_memory
from memlab.core.jsondoc.merge import NearDuplicateMerge, apply_updates
from memlab.core.jsondoc.parsing import FailureCategory
from memlab.core.pipeline.config import MemoryConfig
from memlab.core.pipeline.injection import get_token_counter, render_injection, truncate_to_tokens
from memlab.reporting.markdown import md_escape
from memlab.reporting.statistics import GroupComparison, StatisticsSection, section_markdown
from memlab.scoring.comparing.comparison import Lane, compare, compare_lanes
from memlab.scoring.inference.paired_tests import holm_steps, min_detectable_effect, paired
from memlab.scoring.inference.stats import StatOptions, bootstrap, interval_tail, ratio_estimator
from memlab.scoring.qa.injection_audit import audit_injection
from memlab.simulation.profile_model import SimProfile

# ---------------------------------------------------------------------- statistics


def test_the_interval_tail_is_half_the_complement_with_many_owners() -> None:
    # The expansion vanishes as owners grow: (1 - level) / 2 in each tail.
    assert interval_tail(0.95, 1_000_000) == pytest.approx(0.025, abs=2e-4)
    assert interval_tail(0.90, 1_000_000) == pytest.approx(0.05, abs=3e-4)
    # With few owners each tail is thinner (the interval wider).
    assert interval_tail(0.95, 14) < 0.02


def test_the_interval_is_the_order_statistics_of_the_draws() -> None:
    rng = np.random.default_rng(0)
    num, den = rng.binomial(10, 0.4, size=400).astype(float), np.full(400, 10.0)
    found = bootstrap(ratio_estimator(num, den), StatOptions(resamples=4000, seed=1))
    # 400 owners: almost the plain percentile interval, about 1.96 standard errors wide.
    assert (found.hi - found.lo) / 2 == pytest.approx(1.96 * found.se, rel=0.08)
    assert found.lo < num.sum() / den.sum() < found.hi


def _noncentrality(df: int, alpha: float, power: float) -> float:
    """Independent of memlab: the noncentrality at which a two-sided t test has ``power``."""
    critical = stats.t.ppf(1 - alpha / 2, df)
    return float(optimize.brentq(lambda nc: stats.nct.sf(critical, df, nc) - power, 0.1, 20.0))


@pytest.mark.parametrize("owners", [8, 14, 40])
def test_the_mde_is_the_noncentral_t_effect_scaled_back_to_owners(owners: int) -> None:
    se, df = 0.05, owners - 1
    # Stated for 88% nominal power: the margin the two-test verdict needs (see stats.py).
    expected = _noncentrality(df, 0.05, 0.88) * se * math.sqrt(owners / df)
    found = min_detectable_effect([se], owners, alpha=0.05, power=0.80)[0]
    assert found == pytest.approx(expected, rel=1e-3)
    assert math.isinf(min_detectable_effect([se], 5)[0])  # 2 / 2**5 > 0.05


def test_holm_steps_by_hand() -> None:
    # Sorted: 0.01 < 0.05/3 rejected at level 0.0167; 0.03 >= 0.05/2 fails: it and 0.04 take
    # the level of that step.
    rejected, levels = holm_steps([0.04, 0.01, 0.03, math.nan], 0.05)
    assert rejected.tolist() == [False, True, False, False]
    assert levels[:3].tolist() == pytest.approx([0.025, 0.05 / 3, 0.025])
    assert math.isnan(levels[3])
    rejected, levels = holm_steps([0.001, 0.02, 0.049], 0.05)
    assert rejected.tolist() == [True, True, True]
    assert levels.tolist() == pytest.approx([0.05 / 3, 0.025, 0.05])


def test_an_interval_excludes_zero_exactly_when_its_test_rejects() -> None:
    rng = np.random.default_rng(11)
    for trial in range(40):
        den = rng.integers(3, 12, size=12).astype(float)
        a = rng.binomial(den.astype(int), 0.5).astype(float)
        b = rng.binomial(den.astype(int), 0.5 + 0.2 * rng.random()).astype(float)
        test = paired(ratio_estimator(a, den), ratio_estimator(b, den), StatOptions(999, trial))
        for alpha in (0.01, 0.05, 0.2):
            lo, hi = test.at(alpha)
            assert (lo > 0 or hi < 0) == (test.p_value < alpha)


def _primary_rows(table: pd.DataFrame) -> pd.DataFrame:
    return table[table["p_holm"].notna()]


def test_significance_is_holms_not_the_raw_p_value() -> None:
    """Every rate primary: a recall gain whose raw p-value passes 0.05 but not Holm's step."""
    run = recall_gain(np.random.default_rng(1), gain=0.04)  # a seed where the two differ
    rates = ["recall", "precision", "precision_macro", "parse_failure_rate", "duplicate_rate"]
    table = compare(run, metrics=rates, primary=rates)
    rows = _primary_rows(table).sort_values("p_value")
    p = rows["p_value"].to_numpy()
    m = len(p)
    expected, failed = [], False
    for k, value in enumerate(p):  # Holm by hand
        failed = failed or not value < 0.05 / (m - k)
        expected.append(not failed)
    assert rows["significant"].tolist() == expected
    recall = table.set_index("metric").loc["recall"]
    assert recall["p_value"] < 0.05 and not recall["significant"], recall.to_dict()
    assert recall["verdict"] == "no significant difference" and recall["delta_lo"] <= 0


def test_owners_are_paired_by_name_not_by_row() -> None:
    run = recall_gain(np.random.default_rng(1))
    base = run.sessions[run.sessions["lane_id"] == "base"]
    twin = base.assign(lane_id="twin").iloc[::-1]  # the same counts, rows reversed
    calls = run.calls[run.calls["lane_id"] == "base"]
    both = FakeRun(
        "twins",
        pd.concat([calls, calls.assign(lane_id="twin").iloc[::-1]]),
        pd.concat([base, twin]),
    )
    table = compare_lanes([(Lane(both, "base"), Lane(both, "twin"))], options=both.stats)
    verdicts = dict(zip(table["metric"], table["verdict"], strict=True))
    assert verdicts["recall"] == verdicts["precision"] == "no change", verdicts
    assert set(verdicts.values()) <= {"no change", "not applicable"}, verdicts


# ---------------------------------------------------------------------- simulated profiles

GRID = [(i + 0.5) / 10_000 for i in range(10_000)]


def _shares(pick: Callable[[float], Any]) -> dict[Any, float]:
    found: dict[Any, float] = {}
    for u in GRID:
        key = pick(u)
        found[key] = found.get(key, 0.0) + 1 / len(GRID)
    return found


def test_profile_draws_follow_the_declared_rates() -> None:
    profile = SimProfile(
        name="rates",
        wording={"verbatim": 3, "terse": 1},
        confidence={0.9: 0.5, 0.6: 0.3, 0.3: 0.2},
        invented_confidence={0.8: 1.0, 0.4: 3.0},
        invent_rate=1.4,
        failures={"fenced": 0.1, "truncated": 0.05, "empty": 0.02},
    )
    assert _shares(profile.pick_wording) == pytest.approx({"verbatim": 0.75, "terse": 0.25})
    assert _shares(profile.pick_confidence) == pytest.approx({0.9: 0.5, 0.6: 0.3, 0.3: 0.2})
    invented = _shares(lambda u: profile.pick_confidence(u, invented=True))
    assert invented == pytest.approx({0.8: 0.25, 0.4: 0.75})
    failures = _shares(profile.pick_failure)
    assert failures == pytest.approx(
        {
            FailureCategory.FENCED: 0.1,
            FailureCategory.TRUNCATED: 0.05,
            FailureCategory.EMPTY: 0.02,
            None: 0.83,
        }
    )
    assert _shares(profile.inventions) == pytest.approx({1: 0.6, 2: 0.4})
    assert profile.share_at_least(0.6) == pytest.approx(0.8)
    assert profile.share_at_least(0.5, invented=True) == pytest.approx(0.25)
    assert profile.failure_rate({FailureCategory.FENCED}) == pytest.approx(0.1)


# ---------------------------------------------------------------------- injection

FACTS = [
    {"id": "old", "content": "Loves hiking in the hills " + "and dales " * 40,
     "category": "context", "confidence": 0.95, "createdAt": "2025-01-01T00:00:00Z"},
    {"id": "new", "content": "Works as a nurse in Leeds " + "at night " * 40,
     "category": "context", "confidence": 0.7, "createdAt": "2025-03-01T00:00:00Z"},
]  # fmt: skip


def test_the_audit_offers_facts_in_the_policys_order() -> None:
    config = MemoryConfig(max_injection_tokens=8000, token_counting="char")
    whole = render_injection({"facts": FACTS}, 10_000, token_counting="char").tokens
    # A budget with room for one fact line: the policy decides which.
    budget = MemoryConfig(max_injection_tokens=whole - 5, token_counting="char")
    recency = audit_injection({"facts": FACTS}, budget, "recency", "")
    confidence = audit_injection({"facts": FACTS}, budget, "confidence", "")
    assert recency["injected"] == ["new"] and recency["dropped"] == ["old"]
    assert confidence["injected"] == ["old"] and confidence["dropped"] == ["new"]
    relevance = audit_injection({"facts": FACTS}, budget, "relevance", "any news from Leeds?")
    assert relevance["injected"] == ["new"]
    assert audit_injection({"facts": FACTS}, config, "recency", "")["dropped"] == []


def test_a_text_that_fits_exactly_is_kept_whole() -> None:
    counter = get_token_counter("char")  # ceil(characters / 4)
    text = "x" * 40  # 10 tokens
    assert truncate_to_tokens(text, 10, counter) == text
    # 5 tokens: the longest prefix that fits with "..." is 17 characters (20 in all).
    assert truncate_to_tokens(text, 5, counter) == "x" * 17 + "..."
    assert truncate_to_tokens(text, 0, counter) == ""
    # 41 characters are 11 tokens: a budget of 10 cuts, 11 keeps it whole.
    assert truncate_to_tokens("y" * 41, 11, counter) == "y" * 41
    assert truncate_to_tokens("y" * 41, 10, counter) == "y" * 37 + "..."


# ---------------------------------------------------------------------- merge


def test_a_near_duplicate_of_equal_confidence_keeps_the_stored_fact() -> None:
    memory = create_empty_memory()
    memory["facts"] = [
        {"id": "fact_0000000a", "content": "Works remotely from Berlin", "category": "context",
         "confidence": 0.8, "createdAt": "2024-12-01T00:00:00Z", "source": "t0"}
    ]  # fmt: skip
    update = {"newFacts": [{"content": "works remotely from berlin.", "category": "context",
                            "confidence": 0.8}]}  # fmt: skip
    result = apply_updates(
        memory, update, thread_id="t1", threshold=0.7, max_facts=100,
        strategy=NearDuplicateMerge(),
    )  # fmt: skip
    assert [f["content"] for f in result.memory["facts"]] == ["Works remotely from Berlin"]
    assert result.merged[0]["replaced"] is False


# ---------------------------------------------------------------------- report escaping


def test_statistics_tables_escape_names_from_the_data() -> None:
    row = {"run": "a|b <i>", "lane": "l|ane", "metric": "recall", "role": "primary",
           "baseline": 0.5, "value": 0.5, "delta": 0.0, "verdict": "no change",
           "p_value": float("nan"), "mde": 0.1, "owners_better": 0, "owners_worse": 0}  # fmt: skip
    section = StatisticsSection(
        options=StatOptions(),
        intro="intro",
        intervals=pd.DataFrame(
            [{"run": "r|un", "configuration": "[x](http://e.x)", "owners": "3"}]
        ),
        comparisons=[GroupComparison("", "b|ase", pd.DataFrame([row]))],
    )
    text = "\n".join(section_markdown(section))
    assert "r\\|un" in text and "a\\|b" in text and "b\\|ase" in text
    assert "\\[x\\](http\\://e.x)" in text  # no link
    assert md_escape("a|b") == "a\\|b" and md_escape("[x](y)").startswith("\\[")


def test_report_titles_are_escaped(tmp_path: Path) -> None:
    from builders import one_turn, sweep_scripted, update, write_owners

    from memlab.backends.scripted import ScriptedBackend
    from memlab.reporting.report import build_report

    data = tmp_path / "one.jsonl"
    write_owners(data, [{"user_id": "u", "sessions": [one_turn("u-1", _T0, "hi")]}])
    run = sweep_scripted(data, {"name": "t"}, ScriptedBackend([update()]), tmp_path / "runs")
    title = "<script>x</script> | [click](http://e.x)"
    paths = build_report([run], tmp_path / "report", title=title)
    markdown = paths.markdown.read_text(encoding="utf-8").splitlines()[0]
    assert markdown == f"# {md_escape(title)}"
    html = paths.html.read_text(encoding="utf-8")
    assert "<script>x</script>" not in html and "&lt;script&gt;x&lt;/script&gt;" in html


# ---------------------------------------------------------------------- input limits


def test_yaml_node_and_depth_limits_are_exact() -> None:
    nine = "[" + ",".join(["1"] * 9) + "]"  # the list and 9 values: 10 nodes
    parse_yaml(nine, "x", max_nodes=10)
    with pytest.raises(YamlInputError, match="more than 10 values"):
        parse_yaml(nine[:-1] + ",1]", "x", max_nodes=10)
    parse_yaml("[[[]]]", "x", max_depth=3)
    with pytest.raises(YamlInputError):
        parse_yaml("[[[[]]]]", "x", max_depth=3)
    assert (MAX_YAML_NODES, MAX_YAML_BYTES, MAX_JSON_DEPTH) == (100_000, 4 * 1024 * 1024, 100)


def test_yaml_file_size_limit_is_exact(tmp_path: Path) -> None:
    path = tmp_path / "g.yaml"
    path.write_text("a: 1\n" + "#" * 95, encoding="utf-8")  # 100 bytes
    assert read_text_limited(path, what="grid", max_bytes=100).startswith("a: 1")
    with pytest.raises(YamlInputError):
        read_text_limited(path, what="grid", max_bytes=99)


def test_json_depth_limit_is_exact() -> None:
    assert loads_json("[[[]]]", max_depth=3) == [[[]]]
    with pytest.raises(ValueError):
        loads_json("[[[[]]]]", max_depth=3)
    deepest = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert loads_json(deepest) is not None
    with pytest.raises(ValueError):
        loads_json("[" + deepest + "]")


def test_name_length_limit_is_exact() -> None:
    assert MAX_COMPONENT_CHARS == 120
    assert unsafe_reason("a" * MAX_COMPONENT_CHARS) is None
    assert unsafe_reason("a" * (MAX_COMPONENT_CHARS + 1)) == "it has 121 characters"


# ---------------------------------------------------------------------- cache format


def test_a_cache_entry_of_another_format_is_not_read() -> None:
    completion = {"text": "hi", "finish_reason": "stop"}
    entry = {"format": CACHE_FORMAT, "key": "k1", "completion": completion}

    problem, completion = decode_entry(json.dumps(entry).encode(), "k1")
    assert completion is not None and completion.text == "hi" and problem == ""
    newer = json.dumps({**entry, "format": CACHE_FORMAT + 1}).encode()
    problem, completion = decode_entry(newer, "k1")
    assert completion is None and problem == f"not a cache entry of format {CACHE_FORMAT}"


_T0 = pd.Timestamp("2025-01-06T09:00:00Z").to_pydatetime()


# ---------------------------------------------------------------------- estimators


def test_the_bootstrap_p_value_inverts_the_interval_tail() -> None:
    from memlab.scoring.inference.stats import _alpha_of_tail

    for owners in (3, 14, 40):
        for level in (0.8, 0.95, 0.99):
            assert _alpha_of_tail(interval_tail(level, owners), owners) == pytest.approx(1 - level)
    assert _alpha_of_tail(0.0, 14) == 0.0 and _alpha_of_tail(0.5, 14) == 1.0


def test_paired_bookkeeping() -> None:
    den = np.full(6, 4.0)
    counts = [1, 2, 3, 1, 2, 3]
    same = paired(ratio_estimator(counts, den), ratio_estimator(counts, den))
    assert not same.changed and same.delta == 0 and same.owners == 6
    assert same.se == 0 and same.planning_se > 0  # the MDE plans with two spreads
    better = paired(ratio_estimator([0] * 6, den), ratio_estimator([4] * 6, den))
    # All six owners better: the sign flip's two most extreme of 64 arrangements.
    assert better.p_perm == pytest.approx(2 / 64) and better.p_boot == 0.0
    assert better.p_value == better.p_perm and better.changed
    lo, hi = better.interval(0.01)  # the permutation test cannot reject at 0.01: extended to 0
    assert lo == 0.0 and hi == 1.0
    assert better.interval(0.05) == (1.0, 1.0)
    # Rates at 0 and 1 on 6 owners: the interval is not printed (14 needed near an edge).
    assert all(math.isnan(v) for v in better.at(0.05))


def test_ratio_and_macro_estimators_by_hand() -> None:
    from memlab.scoring.inference.estimators import estimator, missing_owners
    from memlab.scoring.metric_specs import metric_spec

    counts = pd.DataFrame(
        {"stored_precise": [1.0, 9.0, 0.0], "facts": [2.0, 10.0, 0.0]}, index=["a", "b", "c"]
    )
    micro = estimator(metric_spec("precision"), counts)
    macro = estimator(metric_spec("precision_macro"), counts)
    assert micro.value() == pytest.approx(10 / 12)
    assert macro.value() == pytest.approx((0.5 + 0.9) / 2)  # c stored nothing: left out
    assert micro.mask().tolist() == macro.mask().tolist() == [True, True, False]
    assert micro.value(rows=np.array([True, False, False])) == pytest.approx(0.5)
    counts.loc["b", "facts"] = math.nan
    assert missing_owners(metric_spec("precision"), counts) == ["b"]
    assert math.isnan(estimator(metric_spec("precision_macro"), counts).value())
