"""Comparisons that cannot say whether a candidate is better say why, everywhere.

Runs are built here with the simulated model, whose declared behaviour fixes what to expect:
its profiles ignore prompt text (two runs differing only in prompt cannot differ), the smoke
dataset has 2 owners (no paired test reaches p < 0.05 with 2: the sign-flip test's smallest
p-value is 2 / 2**2), and a profile proposing nothing (``propose_rate: 0``, no failures) gives
recall 0 and no parse failure on every owner.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from memlab.backends.registry import reads_prompts
from memlab.cli.main import main
from memlab.core.prompts import PromptRegistry
from memlab.reporting.compare.gate import Inconclusive, check_regressions
from memlab.reporting.compare.trial import try_prompt
from memlab.runs.run import load_run
from memlab.scoring.comparing.comparability import LaneFacts
from memlab.scoring.comparing.comparison import COMPARE_COLUMNS
from memlab.scoring.comparing.inconclusive import (
    BOTH_UNPARSED_SHARE,
    ECHO_SHARE,
    JUDGE_UNREADABLE_SHARE,
    ComparedPair,
    inconclusive_reasons,
)
from memlab.scoring.inference.paired_tests import (
    min_detectable_effect,
    min_test_owners,
    owners_to_detect,
)
from memlab.scoring.metric_specs import metric_spec, primary_metrics
from memlab.simulation.profile import load_profile

IGNORED = "the backend ignores prompts"


def _run(runs: Path, name: str, *extra: str, dataset: str = "personas") -> Path:
    argv = ["run", dataset, "--runs-dir", str(runs), "--name", name, "--no-progress", *extra]
    assert main(argv) == 0
    return runs / name


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("inconclusive")


@pytest.fixture(scope="module")
def selfonly(runs: Path) -> Path:
    """The default prompt with its extraction step narrowed, as a prompt file."""
    template = PromptRegistry().get("default").template
    edited = template.replace(
        "Extract new, durable facts about the user",
        "Extract only facts the user states about themselves, never guesses,",
    )
    assert edited != template
    path = runs / "selfonly.txt"
    path.write_text(edited, "utf-8")
    return path


@pytest.fixture(scope="module")
def base(runs: Path) -> Path:
    return _run(runs, "base", "--backend", "sim:careful")


@pytest.fixture(scope="module")
def cand(runs: Path, selfonly: Path) -> Path:
    return _run(runs, "cand", "--backend", "sim:careful", "--prompt", str(selfonly))


@pytest.fixture(scope="module")
def zero(runs: Path) -> str:
    path = runs / "zero.yaml"
    path.write_text("name: zero\npropose_rate: 0.0\nfailures: {}\n", "utf-8")
    return f"sim:{path}"


def _gate(cand: Path, base: Path, *extra: str) -> list[str]:
    return ["gate", str(cand), "--baseline", str(base), "--no-significant-regression", *extra]


# --- the backend ignores prompts -------------------------------------------------------


def test_simulated_profiles_declare_they_ignore_prompts() -> None:
    assert not load_profile("careful").reads_prompts
    assert not reads_prompts("sim:careful") and not reads_prompts("sim:sloppy")
    assert reads_prompts("scripted") and reads_prompts("openai:gpt-4o-mini")
    assert reads_prompts("nosuchprefix:x")  # an unknown backend is not assumed blind


def test_gate_on_a_prompt_change_the_simulated_model_cannot_see_fails(
    base: Path, cand: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_gate(cand, base, "--tolerance", "0.2")) == 1
    out = capsys.readouterr().out
    # The reason in full, once (each metric's own line names it in short).
    lines = [line for line in out.splitlines() if f"{IGNORED}: " in line]
    assert len(lines) == 1 and lines[0].startswith("FAILED inconclusive: "), out
    # cand's prompt is named first, as cand is: the other way round would swap the prompts.
    assert re.match(r"FAILED inconclusive: cand: .* vs base: .*\(selfonly vs default\);", lines[0])
    assert "gate passed" not in out and "gate failed:" in out

    assert main(_gate(cand, base, "--tolerance", "0.2", "--allow-inconclusive")) == 0
    out = capsys.readouterr().out
    assert next(ln for ln in out.splitlines() if f"{IGNORED}: " in ln).startswith("WARNING ")
    assert "FAILED" not in out
    assert "allowed by --allow-inconclusive" in out.splitlines()[-1]


def test_the_gate_says_no_metric_is_ok_when_the_backend_ignores_prompts(
    base: Path, cand: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A tolerance each metric can detect leaves every primary metric a line of its own: with
    the prompt change invisible to the backend, each reads inconclusive with that reason, not
    "ok ... no change", and the exit codes stay those of an inconclusive comparison."""
    run = load_run(cand)
    (lane_id,) = run.lanes
    # The primary family the run measures (it has no memory QA, so no QA accuracy).
    family = [m for m in primary_metrics(run.primary) if m in run.summary.columns]
    assert family
    expected = [f"inconclusive: {run.label(lane_id)}: {metric}: {IGNORED}" for metric in family]
    for extra, code in (([], 1), (["--allow-inconclusive"], 0)):
        assert main(_gate(cand, base, "--tolerance", "0.5", *extra)) == code
        out = capsys.readouterr().out.splitlines()
        assert [line for line in out if line.startswith("inconclusive: ")] == expected, out
        assert not [line for line in out if line.startswith("ok ")], out


def test_same_prompt_on_the_simulated_model_is_no_such_reason(
    runs: Path, base: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = _run(runs, "threshold", "--backend", "sim:careful", "--threshold", "0.9")
    main(_gate(other, base, "--tolerance", "0.2"))
    assert IGNORED not in capsys.readouterr().out


def test_compare_report_and_trial_name_the_reason(
    base: Path, cand: Path, selfonly: Path, runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["compare", str(base), str(cand)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert any(line.startswith("inconclusive: ") and IGNORED in line for line in out)
    assert out[-1] == f"verdict: inconclusive — {IGNORED}"

    assert main(["report", str(base), str(cand), "--out", str(runs / "rep-prompt")]) == 0
    capsys.readouterr()
    summary = (runs / "rep-prompt" / "summary.md").read_text("utf-8")
    assert f"## Verdict: inconclusive — {IGNORED}\n" in summary
    assert "significant differences" not in summary
    html = (runs / "rep-prompt" / "index.html").read_text("utf-8")
    assert f"Verdict: inconclusive — {IGNORED}</h2>" in html

    trial = try_prompt(load_run(base), selfonly, owners="all")
    assert trial.verdict.startswith(f"Verdict: inconclusive — {IGNORED}")
    assert [r.kind for r in trial.reasons] == ["prompts ignored"]
    assert IGNORED in trial._repr_html_()


# --- too few owners ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def smoke_pair(runs: Path) -> tuple[Path, Path]:
    a = _run(runs, "smoke-a", "--backend", "sim:careful", dataset="smoke")
    b = _run(runs, "smoke-b", "--backend", "sim:careful", "--threshold", "0.5", dataset="smoke")
    return a, b


def test_two_owners_no_test_possible_everywhere(
    smoke_pair: tuple[Path, Path], runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = smoke_pair
    for extra in ([], ["--tolerance", "1"]):  # even a regression of 100 points
        assert main(_gate(b, a, *extra)) == 1
        failed = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("FAILED")]
        metrics = {"parse_failure_rate", "recall", "precision_macro"}  # the primary family
        assert len(failed) == len(metrics)
        assert all("no test possible: 2 owners" in line for line in failed)
        assert {line.split(": ")[1] for line in failed} == metrics

    assert main(["compare", str(a), str(b)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "verdict: no test possible: 2 owners"
    assert main(["report", str(a), str(b), "--out", str(runs / "rep-smoke")]) == 0
    summary = (runs / "rep-smoke" / "summary.md").read_text("utf-8")
    assert "## Verdict: no test possible: 2 owners\n" in summary
    assert "observed, not tested" in summary or "no primary metric changed" in summary


def test_owners_to_detect_is_the_first_sample_size_the_mde_reaches() -> None:
    owners, se, effect = 14, 0.05, 0.05
    mde = float(min_detectable_effect([se], owners)[0])
    needed = owners_to_detect(effect, mde, owners)
    assert needed is not None and needed > owners

    def mde_at(n: int) -> float:  # the standard error shrinking as 1 / sqrt(n)
        return float(min_detectable_effect([se * math.sqrt(owners / n)], n)[0])

    assert mde_at(needed) <= effect < mde_at(needed - 1)
    assert owners_to_detect(effect, math.inf, 2) is None
    assert owners_to_detect(effect, math.nan, 14) is None
    assert owners_to_detect(0.5, mde, owners) == owners
    # The sign-flip test's smallest p-value is 2 / 2**n: below 0.05 from n = 6 (2/64).
    assert min_test_owners(0.05) == 6 and min_test_owners(0.025) == 7


# --- identical lanes that show nothing -----------------------------------------------------


def test_identical_all_zero_lanes_do_not_pass_silently(
    runs: Path, zero: str, capsys: pytest.CaptureFixture[str]
) -> None:
    a = _run(runs, "zero-a", "--backend", zero)
    b = _run(runs, "zero-b", "--backend", zero)
    summary = load_run(b).summary
    assert summary["recall"].tolist() == [0.0] and summary["parse_failure_rate"].tolist() == [0.0]
    # Every owner at 0 on both sides: the MDE is sized on each side's exact interval (never
    # NaN), printed beside "no change"; a tolerance below it fails, one above it passes.
    assert main(_gate(b, a, "--tolerance", "0.2")) == 0
    out = capsys.readouterr().out
    for metric in ("parse_failure_rate", "recall"):
        line = next(ln for ln in out.splitlines() if f": {metric} no change" in ln)
        assert re.search(r"no change \(MDE \d+\.\d pts\)$", line), out
    assert main(_gate(b, a, "--tolerance", "0.01")) == 1
    failed = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("FAILED")]
    assert {ln.split(": ")[1] for ln in failed} == {"parse_failure_rate", "recall"}
    assert all("cannot detect a regression of 1.0 pts with 14 owners" in ln for ln in failed)
    assert "no spread" not in " ".join(failed)


def test_a_primary_metric_not_comparable_fails_the_gate(
    runs: Path, base: Path, zero: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A baseline that stored nothing has no precision: the candidate's cannot be compared."""
    empty = _run(runs, "zero-base", "--backend", zero)
    assert math.isnan(load_run(empty).summary["precision_macro"].iloc[0])
    code = main(_gate(base, empty, "--tolerance", "0.5"))
    out = capsys.readouterr().out
    assert code == 1
    assert "ok [simulated] default: precision_macro" not in out
    assert any(
        line.startswith("FAILED inconclusive: ") and "precision_macro not comparable" in line
        for line in out.splitlines()
    ), out
    found, _ = check_regressions(load_run(base), load_run(empty), tolerance=0.5)
    assert [f.metric for f in found if isinstance(f, Inconclusive)] == ["precision_macro"]


def test_a_real_difference_is_named_in_the_heading(
    runs: Path, base: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """sloppy breaks about 35% of its replies (its declared failure rates), careful 7%."""
    sloppy = _run(runs, "sloppy", "--backend", "sim:sloppy")
    assert main(["report", str(base), str(sloppy), "--out", str(runs / "rep-sloppy")]) == 0
    summary = (runs / "rep-sloppy" / "summary.md").read_text("utf-8")
    heading = next(line for line in summary.splitlines() if line.startswith("## Verdict"))
    assert heading.startswith("## Verdict: worse on ") and "parse failure rate" in heading
    assert "inconclusive" not in heading


# --- the checks on hand-built comparisons --------------------------------------------------


def _facts(run: str, **changes: object) -> LaneFacts:
    fields: dict[str, object] = {"run": run, "lane": "x", "prompt": "default"}
    return LaneFacts(**{**fields, **changes})  # type: ignore[arg-type]


def _table(pairs: list[ComparedPair], verdict: str = "no significant difference") -> pd.DataFrame:
    row: dict[str, object] = dict.fromkeys(COMPARE_COLUMNS, 0.0)
    row.update(
        run="b", lane="x", baseline_run="a", baseline_lane="x", metric="recall",
        role="primary", verdict=verdict, owners=20, mde=0.01, level=0.95,
    )  # fmt: skip
    table = pd.DataFrame([row])
    table.attrs["pairs"] = pairs
    return table


@pytest.mark.parametrize(
    ("rates", "kind"),
    [
        ({"parse_failure_rate": (BOTH_UNPARSED_SHARE, 1.0)}, "replies unparsed"),
        ({"qa_judge_error_rate": (0.0, JUDGE_UNREADABLE_SHARE + 0.01)}, "verdicts unreadable"),
    ],
)
def test_shares_above_their_limit_are_reasons(
    rates: dict[str, tuple[float, float]], kind: str
) -> None:
    pair = ComparedPair(_facts("a"), _facts("b"), 20, rates)
    assert [r.kind for r in inconclusive_reasons(_table([pair]))] == [kind]
    below = {name: (0.0, 0.0) for name in rates}
    assert inconclusive_reasons(_table([ComparedPair(_facts("a"), _facts("b"), 20, below)])) == []


def test_a_reason_about_the_whole_comparison_concerns_every_metric_of_its_lane() -> None:
    """The model echoing the prompt, like a backend blind to prompts, leaves every metric of
    the candidate lane undecided (no metrics named); unreadable verdicts only the judged rates."""
    blind = {"reads_prompts": False, "simulated": True}
    rates = {"echo_rate": (0.0, ECHO_SHARE + 0.3), "qa_judge_error_rate": (0.0, 1.0)}
    pair = ComparedPair(_facts("a", **blind), _facts("b", prompt="other", **blind), 20, rates)
    found = {r.kind: r for r in inconclusive_reasons(_table([pair]))}
    assert set(found) == {"prompts ignored", "prompt echoed", "verdicts unreadable"}
    for kind in ("prompts ignored", "prompt echoed"):
        assert all(found[kind].concerns("x", m) for m in ("recall", "qa_accuracy", "echo_rate"))
        assert not found[kind].concerns("another lane", "recall")
    assert found["verdicts unreadable"].concerns("x", "qa_accuracy")
    assert not found["verdicts unreadable"].concerns("x", "recall")


def test_replies_failing_on_one_side_only_is_no_reason() -> None:
    rates = {"parse_failure_rate": (1.0, 0.0)}
    pair = ComparedPair(_facts("a"), _facts("b"), 20, rates)
    assert inconclusive_reasons(_table([pair])) == []


def test_prompts_ignored_needs_both_sides_blind_and_prompts_that_differ() -> None:
    blind = {"reads_prompts": False, "simulated": True}
    cases = [
        (_facts("a", **blind), _facts("b", prompt="other", **blind), 1),
        (_facts("a", **blind), _facts("b", **blind), 0),
        (_facts("a"), _facts("b", prompt="other"), 0),
    ]
    for left, right, expected in cases:
        reasons = inconclusive_reasons(_table([ComparedPair(left, right, 20)]))
        assert len(reasons) == expected


def test_owners_to_detect_a_tiny_effect_plans_past_a_thousand_owners() -> None:
    # MDE 600 times the effect with 6 owners: with the standard error shrinking as 1/sqrt(n)
    # and the noncentrality falling with the degrees of freedom, the owners needed lie between
    # a thousand and 6 * 600**2 (the 1/sqrt(n) shrinkage alone).
    owners, effect, mde = 6, 0.05, 30.0
    needed = owners_to_detect(effect, mde, owners)
    assert needed is not None and 1024 < needed <= owners * (mde / effect) ** 2
    assert math.isfinite(float(min_detectable_effect([0.01], 5000)[0]))


def test_not_computable_primary_is_a_reason() -> None:
    table = _table([], verdict="not computable")
    assert [r.short for r in inconclusive_reasons(table)] == ["recall not computable"]


def test_rows_of_a_compared_table_share_its_pairs_instead_of_copying_them() -> None:
    """pandas deep-copies ``attrs`` into every row a table yields; the pairs (both lanes'
    owner sets) are the same objects in each row, not copies made per row."""
    owners = frozenset(f"u{i}" for i in range(50))
    pair = ComparedPair(_facts("a", owners=owners), _facts("b", owners=owners), 50)
    table = _table([pair])
    (_, row), *_ = table.iterrows()
    assert row.attrs["pairs"][0] is pair
    assert table.iloc[0].attrs["pairs"][0].candidate.owners is owners


def test_unreadable_judge_verdicts_leave_the_metrics_no_judge_grades_decided() -> None:
    """A judge that cannot be read makes memory QA's judged rates unknowable, not recall: the
    A/B verdict of a significant recall gain stands, QA accuracy's is inconclusive."""
    from memlab.reporting.compare.prompt_ab import verdicts_of

    rates = {"qa_judge_error_rate": (JUDGE_UNREADABLE_SHARE + 0.5, JUDGE_UNREADABLE_SHARE + 0.7)}
    table = _table([ComparedPair(_facts("a"), _facts("b"), 20, rates)])
    recall = table.iloc[0].to_dict() | {
        "baseline": 0.67, "value": 0.84, "delta": 0.17, "delta_lo": 0.09, "delta_hi": 0.26,
        "p_value": 0.005, "p_holm": 0.005, "significant": True, "verdict": "better",
    }  # fmt: skip
    qa = table.iloc[0].to_dict() | {"metric": "qa_accuracy", "verdict": "no change"}
    rows = pd.DataFrame([recall, qa])
    rows.attrs["pairs"] = table.attrs["pairs"]
    (reason,) = inconclusive_reasons(rows)
    assert reason.kind == "verdicts unreadable" and "recall" not in reason.metrics
    assert set(reason.metrics) >= {"qa_accuracy", "qa_abstain_accuracy"}
    outcomes = {v.metric: v.outcome for v in verdicts_of(rows, [reason], {})}
    assert outcomes == {"recall": "better", "qa_accuracy": "inconclusive"}


def test_a_verdict_heading_does_not_rank_a_rate_its_judge_could_not_read() -> None:
    """The heading names recall's significant gain, but not QA accuracy's significant drop
    when most of its verdicts were unreadable: that drop measures the judge."""
    from memlab.reporting.compare.verdict import headline

    rates = {"qa_judge_error_rate": (0.0, JUDGE_UNREADABLE_SHARE + 0.5)}
    table = _table([ComparedPair(_facts("a"), _facts("b"), 20, rates)])
    significant = {"significant": True, "p_value": 0.001, "p_holm": 0.002}
    recall = table.iloc[0].to_dict() | significant | {"verdict": "better", "delta": 0.1}
    qa = table.iloc[0].to_dict() | significant | {"metric": "qa_accuracy", "verdict": "worse"}
    rows = pd.DataFrame([recall, qa])
    rows.attrs["pairs"] = table.attrs["pairs"]
    reasons = inconclusive_reasons(rows)
    assert headline([rows], reasons) == "better on recall; inconclusive — judge verdicts unreadable"
    # The report's table of significant differences marks that drop inconclusive, not robust.
    from memlab.reporting.compare.verdict import verdict
    from memlab.reporting.statistics import GroupComparison, StatisticsSection
    from memlab.scoring.inference.stats import StatOptions

    rows = rows.assign(run="b", lane="x", p_value=0.001, owners_better=0, owners_worse=20)
    section = StatisticsSection(StatOptions(), "", pd.DataFrame(), [GroupComparison("", "a", rows)])
    (found,) = verdict(section)
    marked = dict(zip(found.rows["metric"], found.rows["robust"], strict=True))
    assert marked == {"recall": "robust", "QA accuracy": "inconclusive"}


# --- the gate on judged rates whose verdicts could not be read ------------------------------


def _every_judged_rate_worse(unreadable: float) -> pd.DataFrame:
    """A comparison where every judged QA rate is significantly worse on lane x, the candidate's
    judge leaving ``unreadable`` of its answers without a verdict (the baseline's none)."""
    from memlab.scoring.qa.qa_metrics import judged_metrics

    pair = ComparedPair(_facts("a"), _facts("b"), 20, {"qa_judge_error_rate": (0.0, unreadable)})
    template = _table([pair]).iloc[0].to_dict()
    worse = {
        "verdict": "worse", "significant": True, "p_value": 0.001, "p_holm": 0.003,
        "baseline": 0.8, "value": 0.5, "delta": -0.3, "delta_lo": -0.4, "delta_hi": -0.2,
    }  # fmt: skip
    rows = pd.DataFrame([template | worse | {"metric": m} for m in judged_metrics()])
    rows.attrs["pairs"] = [pair]
    return rows


def _unreadable_lines(lines: list[str]) -> list[str]:
    return [line for line in lines if "judge verdicts unreadable for 0% (baseline)" in line]


def test_the_gate_names_unreadable_verdicts_even_when_every_judged_rate_regressed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Significantly worse on every rate a judge grades says nothing of the judge: the reason
    (verdicts unreadable for 70% of the candidate's answers) is a failure of its own."""
    from types import SimpleNamespace

    from memlab.reporting.compare import gate
    from memlab.scoring.inference.stats import StatOptions
    from memlab.scoring.qa.qa_metrics import judged_metrics

    table = _every_judged_rate_worse(JUDGE_UNREADABLE_SHARE + 0.5)
    monkeypatch.setattr(gate, "compare", lambda *args, **kwargs: table)
    side: Any = SimpleNamespace(stats=StatOptions())
    found, _ = check_regressions(side, side, judged_metrics(), options=StatOptions())
    regressed = {f.metric for f in found if isinstance(f, gate.Regression)}
    assert regressed == set(judged_metrics())
    reasons = [f for f in found if isinstance(f, Inconclusive)]
    assert [r.reason.kind for r in reasons] == ["verdicts unreadable"]
    assert set(reasons[0].reason.metrics) == set(judged_metrics())
    assert _unreadable_lines([str(r) for r in reasons]) and "70%" in str(reasons[0])
    # Under the share no reason is given: the regressions alone fail the gate.
    monkeypatch.setattr(gate, "compare", lambda *args, **kwargs: _every_judged_rate_worse(0.1))
    found, _ = check_regressions(side, side, judged_metrics(), options=StatOptions())
    assert not any(isinstance(f, Inconclusive) for f in found)


def test_the_gate_prints_the_unreadable_verdicts_line_beside_the_judged_regressions(
    base: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from memlab.reporting.compare import gate
    from memlab.scoring.qa.qa_metrics import judged_metrics

    table = _every_judged_rate_worse(JUDGE_UNREADABLE_SHARE + 0.5)
    monkeypatch.setattr(gate, "compare", lambda *args, **kwargs: table)
    assert main(_gate(base, base, "all")) == 1
    lines = capsys.readouterr().out.splitlines()
    failed = [line for line in lines if line.startswith("FAILED ")]
    assert len(failed) == len(judged_metrics()) + 1, lines
    (reason,) = _unreadable_lines(failed)
    assert reason.startswith("FAILED inconclusive: ") and "70% (candidate)" in reason
    assert (
        lines[-1]
        == f"gate failed: {len(judged_metrics())} regression(s), inconclusive: 1 reason(s)"
    )
    # Allowed, the reason is still printed, as a warning; the regressions still fail.
    assert main(_gate(base, base, "all", "--allow-inconclusive")) == 1
    lines = capsys.readouterr().out.splitlines()
    (reason,) = _unreadable_lines(lines)
    assert reason.startswith("WARNING inconclusive: ")


# --- the tables beside the verdict -----------------------------------------------------------


def _significant(pair: ComparedPair, metrics: dict[str, str]) -> pd.DataFrame:
    """A comparison of lane x where each of ``metrics`` has its significant verdict."""
    template = _table([pair]).iloc[0].to_dict()
    found = {
        "significant": True, "p_value": 0.001, "p_holm": 0.002, "owners_better": 0,
        "owners_worse": 20, "baseline": 0.8, "value": 0.6, "delta": -0.2, "delta_lo": -0.3,
        "delta_hi": -0.1,
    }  # fmt: skip
    each = [{"metric": m, "verdict": v} for m, v in metrics.items()]
    rows = pd.DataFrame([template | found | one for one in each])
    rows.attrs["pairs"] = [pair]
    return rows


def test_compare_says_inconclusive_only_for_the_metrics_a_reason_concerns() -> None:
    """Unreadable judge verdicts name the judged rates: those read inconclusive with the
    reason, recall keeps its verdict; a backend blind to the prompts compared concerns every
    metric of the lane, in the narrow view and the wide one."""
    from memlab.cli.results.compare_view import narrow_rows, wide_text

    metrics = {"recall": "worse", "qa_accuracy": "worse", "qa_judge_error_rate": "worse"}
    unreadable = {"qa_judge_error_rate": (0.0, JUDGE_UNREADABLE_SHARE + 0.5)}
    rows = _significant(ComparedPair(_facts("a"), _facts("b"), 20, unreadable), metrics)
    (reason,) = inconclusive_reasons(rows)
    expected = {
        m: f"inconclusive: {reason.short}" if m in reason.metrics else verdict
        for m, verdict in metrics.items()
    }
    assert expected["recall"] == "worse" and expected["qa_accuracy"] != "worse"
    shown = narrow_rows(rows, [reason])
    assert dict(zip(shown["metric"].str.rstrip(" *"), shown["verdict"], strict=True)) == expected

    blind = {"reads_prompts": False, "simulated": True}
    pair = ComparedPair(_facts("a", **blind), _facts("b", prompt="other", **blind), 20)
    rows = _significant(pair, metrics)
    reasons = inconclusive_reasons(rows)
    assert [r.kind for r in reasons] == ["prompts ignored"]
    assert set(narrow_rows(rows, reasons)["verdict"]) == {f"inconclusive: {IGNORED}"}
    wide = wide_text(rows, reasons).splitlines()[1:]
    assert len(wide) == len(metrics) and all(f"inconclusive: {IGNORED}" in ln for ln in wide)


def test_the_report_marks_every_difference_a_whole_comparison_reason_concerns() -> None:
    """On a backend blind to the prompts compared, a significant difference (from another
    setting that changed, or chance) cannot be put down to the prompt: the report's table of
    significant differences marks every row inconclusive and the heading ranks none."""
    from memlab.reporting.compare.verdict import headline, verdict
    from memlab.reporting.statistics import GroupComparison, StatisticsSection
    from memlab.scoring.inference.stats import StatOptions

    blind = {"reads_prompts": False, "simulated": True}
    pair = ComparedPair(_facts("a", **blind), _facts("b", prompt="other", **blind), 20)
    rows = _significant(pair, {"recall": "worse", "precision_macro": "better"})
    reasons = inconclusive_reasons(rows)
    assert [r.kind for r in reasons] == ["prompts ignored"] and not reasons[0].metrics
    assert headline([rows], reasons) == f"inconclusive — {IGNORED}"
    section = StatisticsSection(StatOptions(), "", pd.DataFrame(), [GroupComparison("", "a", rows)])
    (found,) = verdict(section)
    assert list(found.rows["robust"]) == ["inconclusive"] * len(rows)


def test_the_reports_statistics_section_says_inconclusive_for_the_metrics_a_reason_concerns() -> (
    None
):
    """The statistics section's rows (Markdown and HTML) read ``inconclusive: <short>`` for a
    metric a reason concerns and keep the raw verdict of every other; the comparison behind
    them keeps the raw verdicts."""
    from html import escape

    from memlab.reporting.statistics import (
        GroupComparison,
        StatisticsSection,
        section_html,
        section_markdown,
    )
    from memlab.scoring.inference.stats import StatOptions

    metrics = {"recall": "worse", "qa_accuracy": "worse", "qa_judge_error_rate": "worse"}
    unreadable = {"qa_judge_error_rate": (0.0, JUDGE_UNREADABLE_SHARE + 0.5)}
    blind = {"reads_prompts": False, "simulated": True}
    cases = {
        # Unreadable verdicts name the judged rates only: recall keeps its verdict.
        "unreadable": ComparedPair(_facts("a"), _facts("b"), 20, unreadable),
        # A backend blind to the prompts compared names no metric: every one is concerned.
        "blind": ComparedPair(_facts("a", **blind), _facts("b", prompt="other", **blind), 20),
    }
    for case, pair in cases.items():
        rows = _significant(pair, metrics).assign(mde=0.05)  # tests with something to show
        (reason,) = inconclusive_reasons(rows)
        covered = set(reason.metrics) if reason.metrics else set(metrics)
        assert ("recall" in covered) == (case == "blind")
        expected = {
            m: f"inconclusive: {reason.short}" if m in covered else v for m, v in metrics.items()
        }
        found = GroupComparison("", "a", rows, (reason,))
        section = StatisticsSection(StatOptions(), "", pd.DataFrame(), [found])
        lines = section_markdown(section)
        header = next(ln for ln in lines if ln.startswith("| configuration |"))
        column = [c.strip() for c in header.split("|")].index("verdict")
        cells = [[c.strip() for c in ln.split("|")] for ln in lines if ln.startswith("| b: x |")]
        titles = {metric_spec(m).title: m for m in metrics}
        shown = {titles[row[2]]: row[column] for row in cells}
        assert shown == expected, (case, lines)
        page = "".join(section_html(section))
        between = column - 3  # cells between the metric's (column 2) and the verdict's
        for metric, said in expected.items():
            title, cell = (re.escape(escape(t)) for t in (metric_spec(metric).title, said))
            assert re.search(rf"<td>{title}</td>(<td>[^<]*</td>){{{between}}}<td>{cell}</td>", page)
        assert list(rows["verdict"]) == list(metrics.values())  # the comparison stays raw


def test_the_reports_judge_table_says_inconclusive_for_the_rates_a_reason_concerns() -> None:
    """The QA section's differences under every judge: a rate a reason of its group's
    comparison concerns reads inconclusive under each judge and says why under every judge;
    another rate, or the same rate of a lane the reason is not about, keeps its verdicts."""
    from memlab.reporting.qa.qa_section import robust_inconclusive
    from memlab.reporting.statistics import GroupComparison
    from memlab.scoring.comparing.inconclusive import Reason

    reason = Reason(
        "too few owners", "x: qa_accuracy: ...", "too few owners", "x", ("qa_accuracy",)
    )
    compared = pd.DataFrame({"run": ["b", "b"], "lane": ["x", "y"], "metric": ["recall"] * 2})
    found = GroupComparison("", "a", compared, (reason,))
    cells = [("x", "qa_accuracy"), ("x", "qa_abstain_accuracy"), ("y", "qa_accuracy")]
    robust = pd.DataFrame(
        {
            "run": ["b"] * 3,
            "configuration": [lane for lane, _ in cells],
            "metric": [metric for _, metric in cells],
            "verdict:strict": ["worse"] * 3,
            "verdict:lenient": ["no change"] * 3,
            "under every judge": ["depends on the judge"] * 3,
        }
    )
    shown = robust_inconclusive(robust, [found])
    for i, (lane, metric) in enumerate(cells):
        concerned = lane == reason.lane and metric in reason.metrics
        expected = (
            ["inconclusive", "inconclusive", f"inconclusive: {reason.short}"]
            if concerned
            else ["worse", "no change", "depends on the judge"]
        )
        assert list(shown.iloc[i, 3:]) == expected, (lane, metric)
    assert list(robust["verdict:strict"]) == ["worse"] * 3  # the table given is not changed
