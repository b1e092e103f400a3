"""Mutation testing of memlab's critical modules: do the tests fail when the code is wrong?

Two runs, each on a copy of ``memlab/`` and ``tests/`` in a temporary directory (the working tree
is never touched):

``--named`` applies, one at a time, the small bugs listed in :data:`NAMED` (owners paired out
of order, significance from the unadjusted p-value, the interval's tail halved, the MDE's
square-root factor dropped, simulated-profile rates off by 20%, the injection audit ignoring
the policy's order, the injection cut one token off, the near-duplicate merge replacing on a
tie, report titles and Markdown cells unescaped, size limits off by one, the cache format check
removed) and runs the tests named for each: every one must fail.

``--modules`` (the default) runs ``mutmut`` on each critical module in turn (:data:`MODULES`),
with the fast tests that cover it, one module at a time and one worker, and prints each
module's kill rate and the total. Mutants are killed when a test fails, when they time out, or
when the tests cannot even be collected (importing the mutant fails); the rest survived. The
mutants of functions that run at import (:data:`AT_IMPORT`) are run a second time in processes
that import everything afresh, which decides them. This takes long (about a second per
mutant): run it by hand, not in CI.

Usage::

    python scripts/mutation.py --named                 # about 4 minutes
    python scripts/mutation.py                         # every module, an hour or more
    python scripts/mutation.py --modules stats,merge   # some modules
    python scripts/mutation.py --list

The exit status is 1 when a named mutant survives or the kill rate is below ``--target`` (90%).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
logger = logging.getLogger("mutation")


@dataclass(frozen=True)
class Named:
    """One small bug: ``old`` replaced by ``new`` in ``path``; ``tests`` must fail."""

    name: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]


_RULES = "tests/test_rule_boundaries.py"
_QA_NUMBERS = "tests/test_qa_judge_numbers.py"
_SCORING = "memlab/scoring"

NAMED: tuple[Named, ...] = (
    Named(
        "owners paired out of order",
        f"{_SCORING}/comparing/comparison.py",
        "a, b = counts_a.loc[shared], counts_b.loc[shared]",
        "a, b = counts_a.loc[shared], counts_b.loc[shared[::-1]]",
        (f"{_RULES}::test_owners_are_paired_by_name_not_by_row",),
    ),
    Named(
        "significance from the unadjusted p-value",
        f"{_SCORING}/comparing/comparison.py",
        'table["significant"] = rejected',
        'table["significant"] = family_p < options.alpha',
        (f"{_RULES}::test_significance_is_holms_not_the_raw_p_value",),
    ),
    Named(
        "the interval's percentile tail halved",
        f"{_SCORING}/inference/stats.py",
        "t = t_quantile(1 - (1 - level) / 2, owners - 1)",
        "t = t_quantile(1 - (1 - level) / 4, owners - 1)",
        (f"{_RULES}::test_the_interval_tail_is_half_the_complement_with_many_owners",),
    ),
    Named(
        "the MDE's square-root factor dropped",
        f"{_SCORING}/inference/paired_tests.py",
        "factor = noncentrality * math.sqrt(owners / df)",
        "factor = noncentrality",
        (f"{_RULES}::test_the_mde_is_the_noncentral_t_effect_scaled_back_to_owners",),
    ),
    Named(
        "simulated failure rates off by 20%",
        "memlab/simulation/profile_model.py",
        "edge += self.failures.get(category, 0.0)",
        "edge += self.failures.get(category, 0.0) * 1.2",
        (f"{_RULES}::test_profile_draws_follow_the_declared_rates",),
    ),
    Named(
        "simulated wording and confidence shares off by 20%",
        "memlab/simulation/profile_model.py",
        "        edge += share\n",
        "        edge += share * 1.2\n",
        (f"{_RULES}::test_profile_draws_follow_the_declared_rates",),
    ),
    Named(
        "simulated inventions off by 20%",
        "memlab/simulation/profile_model.py",
        "u < self.invent_rate - whole",
        "u < (self.invent_rate - whole) * 1.2",
        (f"{_RULES}::test_profile_draws_follow_the_declared_rates",),
    ),
    Named(
        "simulated propose rate off by 20%",
        "memlab/simulation/model.py",
        '"propose") >= profile.propose_rate',
        '"propose") >= profile.propose_rate * 0.8',
        ("tests/test_sim_metrics.py::test_state_metric_matches_the_profile",),
    ),
    Named(
        "the injection audit ignoring the policy's order",
        f"{_SCORING}/qa/injection_audit.py",
        "rank=injection_policy(policy).rank(ordered, query, embedder),",
        'rank=injection_policy("confidence").rank(ordered, query, embedder),',
        (f"{_RULES}::test_the_audit_offers_facts_in_the_policys_order",),
    ),
    Named(
        "the injection cut one token short",
        "memlab/core/pipeline/injection.py",
        "    if counter.count(text) <= max_tokens:\n        return text",
        "    if counter.count(text) < max_tokens:\n        return text",
        (f"{_RULES}::test_a_text_that_fits_exactly_is_kept_whole",),
    ),
    Named(
        "the injection budget dropping a fact that fits exactly",
        "memlab/core/pipeline/injection.py",
        "if running + cost > max_tokens:",
        "if running + cost >= max_tokens:",
        ("tests/test_injection_audit.py::test_tokens_and_dropped_facts",),
    ),
    Named(
        "the near-duplicate merge replacing the stored fact on a tie",
        "memlab/core/jsondoc/merge.py",
        'replaced = float(proposal["confidence"]) > _confidence(best)',
        'replaced = float(proposal["confidence"]) >= _confidence(best)',
        (f"{_RULES}::test_a_near_duplicate_of_equal_confidence_keeps_the_stored_fact",),
    ),
    Named(
        "the Markdown report title unescaped",
        "memlab/reporting/report_render.py",
        'f"# {md_escape(report.title, 200)}"',
        'f"# {report.title}"',
        (f"{_RULES}::test_report_titles_are_escaped",),
    ),
    Named(
        "the HTML report title unescaped",
        "memlab/reporting/report_render.py",
        "title = escape(report.title)",
        "title = report.title",
        (f"{_RULES}::test_report_titles_are_escaped",),
    ),
    Named(
        "Markdown table cells unescaped",
        "memlab/reporting/statistics.py",
        "md_escape(row[c]) if c in _DATA_COLUMNS else str(row[c])",
        "str(row[c])",
        (f"{_RULES}::test_statistics_tables_escape_names_from_the_data",),
    ),
    Named(
        "the YAML value limit off by one",
        "memlab/core/base/yamlio.py",
        "if self._count > self._max_nodes:",
        "if self._count >= self._max_nodes:",
        (f"{_RULES}::test_yaml_node_and_depth_limits_are_exact",),
    ),
    Named(
        "the YAML depth limit off by one",
        "memlab/core/base/yamlio.py",
        "if self._depth > self._max_depth:",
        "if self._depth >= self._max_depth:",
        (f"{_RULES}::test_yaml_node_and_depth_limits_are_exact",),
    ),
    Named(
        "the YAML size limit off by one",
        "memlab/core/base/files.py",
        "if max_bytes is not None and info.st_size > max_bytes:",
        "if max_bytes is not None and info.st_size >= max_bytes:",
        (f"{_RULES}::test_yaml_file_size_limit_is_exact",),
    ),
    Named(
        "the JSON depth limit off by one",
        "memlab/core/base/jsontext.py",
        "if len(path) >= limit:",
        "if len(path) > limit:",
        (f"{_RULES}::test_json_depth_limit_is_exact",),
    ),
    Named(
        "the name length limit off by one",
        "memlab/core/base/safe_names.py",
        "if len(name) > MAX_COMPONENT_CHARS:",
        "if len(name) >= MAX_COMPONENT_CHARS:",
        (f"{_RULES}::test_name_length_limit_is_exact",),
    ),
    Named(
        "the cache format check removed",
        "memlab/backends/caching/cache.py",
        'if not isinstance(data, dict) or data.get("format") != expected:',
        "if not isinstance(data, dict):",
        (f"{_RULES}::test_a_cache_entry_of_another_format_is_not_read",),
    ),
    Named(
        "kappa without the chance correction",
        "memlab/matching/calibration.py",
        'return (self.agreement - chance) / (1 - chance) if chance < 1 else float("nan")',
        'return self.agreement if chance < 1 else float("nan")',
        (f"{_QA_NUMBERS}::test_flips_and_kappa_by_hand",),
    ),
    Named(
        "the judge band's min and max swapped",
        f"{_SCORING}/qa/qa_metrics.py",
        'row["band_lo"], row["band_hi"] = min(scores.values()), max(scores.values())',
        'row["band_lo"], row["band_hi"] = max(scores.values()), min(scores.values())',
        (f"{_QA_NUMBERS}::test_the_band_by_hand",),
    ),
    Named(
        "flips leave out the answers the second judge accepts",
        f"{_SCORING}/qa/qa_metrics.py",
        '"flips": counts.true_rejected + counts.wrong_accepted,',
        '"flips": counts.true_rejected,',
        (f"{_QA_NUMBERS}::test_flips_and_kappa_by_hand",),
    ),
    Named(
        "an adversarial abstention no longer counted right",
        f"{_SCORING}/qa/qa_verdicts.py",
        '"correct": value is True or declined,',
        '"correct": value is True,',
        (f"{_QA_NUMBERS}::test_verdict_statuses_and_the_adversarial_abstention",),
    ),
    Named(
        "answers read from the snapshot before their session",
        "memlab/postrun/qa_step.py",
        "point = ReplayPoint(owner, index, snapshots[index])",
        "point = ReplayPoint(owner, index, snapshots[max(index - 1, 0)])",
        ("tests/test_qa_sweep.py::test_memory_is_read_right_after_the_session_the_question_names",),
    ),
    Named(
        "the worst case without the end of generation",
        "memlab/backends/decoding/grammar.py",
        "return None if longest is None else longest + 1",
        "return longest",
        ("tests/test_schema_bounds.py::test_the_worst_case_counts_the_end_of_generation",),
    ),
    Named(
        "an unreadable verdict counted as a judged one",
        f"{_SCORING}/qa/qa_metrics.py",
        'missing = (verdicts["status"] == "no_verdict").to_numpy()',
        'missing = (verdicts["status"] == "answer_error").to_numpy()',
        ("tests/test_qa_judge_server.py",),
    ),
)
"""Small bugs every one of which some test must catch."""

_FAST = ("tests/test_rule_boundaries.py",)
_COMPARABILITY = "tests/test_comparability.py"

MODULES: dict[str, tuple[str, tuple[str, ...]]] = {
    "stats": (
        f"{_SCORING}/inference/stats.py",
        ("tests/test_stats.py", "tests/test_stats_edges.py", "tests/test_survival.py", *_FAST),
    ),
    "paired_tests": (
        f"{_SCORING}/inference/paired_tests.py",
        ("tests/test_stats.py", "tests/test_stats_edges.py", *_FAST),
    ),
    "survival": (f"{_SCORING}/inference/survival.py", ("tests/test_survival.py",)),
    "comparison": (
        f"{_SCORING}/comparing/comparison.py",
        ("tests/test_comparison.py", "tests/test_verdicts.py", *_FAST),
    ),
    "estimators": (
        f"{_SCORING}/inference/estimators.py",
        ("tests/test_estimators.py", "tests/test_survival.py", *_FAST),
    ),
    "metric_specs": (
        f"{_SCORING}/metric_specs.py",
        ("tests/test_metric_table.py", "tests/test_metric_specs.py"),
    ),
    "count_specs": (
        f"{_SCORING}/count_specs.py",
        ("tests/test_metric_table.py", "tests/test_metric_specs.py"),
    ),
    "metric_model": (
        f"{_SCORING}/metric_model.py",
        ("tests/test_metric_table.py", "tests/test_metric_specs.py"),
    ),
    "operations": (
        f"{_SCORING}/operations.py",
        ("tests/test_operations_edges.py", "tests/test_operations.py"),
    ),
    "injection_audit": (
        f"{_SCORING}/qa/injection_audit.py",
        ("tests/test_injection_audit.py", *_FAST),
    ),
    "injection": ("memlab/core/pipeline/injection.py", ("tests/test_injection.py", *_FAST)),
    "default_matcher": (
        "memlab/matching/default_matcher.py",
        (
            "tests/test_matching.py",
            "tests/test_matching_kinds.py",
            "tests/test_default_matcher_embedding.py",
        ),
    ),
    "merge": ("memlab/core/jsondoc/merge.py", ("tests/test_merge.py", *_FAST)),
    "safe_names": ("memlab/core/base/safe_names.py", ("tests/test_safe_names.py", *_FAST)),
    "yamlio": ("memlab/core/base/yamlio.py", ("tests/test_yamlio.py", *_FAST)),
    "jsontext": (
        "memlab/core/base/jsontext.py",
        (
            "tests/test_jsontext.py",
            "tests/test_jsontext_limits.py",
            "tests/test_jsontext_reference.py",
            *_FAST,
        ),
    ),
    "cache": (
        "memlab/backends/caching/cache.py",
        ("tests/test_cache.py", "tests/test_cache_integrity.py", *_FAST),
    ),
    "markdown": (
        "memlab/reporting/markdown.py",
        ("tests/test_markdown.py", "tests/test_untrusted_inputs.py", *_FAST),
    ),
    "profile": ("memlab/simulation/profile_model.py", ("tests/test_sim_profile.py", *_FAST)),
    "profile_loader": ("memlab/simulation/profile.py", ("tests/test_sim_profile.py",)),
    "fact_texts": ("memlab/simulation/fact_texts.py", ("tests/test_sim_profile.py",)),
    "qa_causes": (f"{_SCORING}/qa/qa_causes.py", ("tests/test_qa_causes.py",)),
    "qa_metrics": (
        f"{_SCORING}/qa/qa_metrics.py",
        (
            _QA_NUMBERS,
            "tests/test_qa_ceiling.py",
            "tests/test_qa_causes.py",
            "tests/test_qa_every_question.py",
            "tests/test_qa_judge_server.py",
            "tests/test_qa_metrics_values.py",
        ),
    ),
    "qa_verdicts": (
        f"{_SCORING}/qa/qa_verdicts.py",
        (
            _QA_NUMBERS,
            "tests/test_qa_every_question.py",
            "tests/test_qa_judge_server.py",
            "tests/test_qa_metrics_values.py",
        ),
    ),
    "qa_step": (
        "memlab/postrun/qa_step.py",
        (
            "tests/test_qa_every_question.py",
            "tests/test_qa_judge_server.py",
            "tests/test_qa_step_records.py",
            "tests/test_qa_step_wiring.py",
            # The one test that asks procedure questions (about 10 s).
            "tests/test_procedure_qa.py::test_each_reply_scores_what_the_provenance_implies",
        ),
    ),
    "comparability": (
        f"{_SCORING}/comparing/comparability.py",
        (
            f"{_COMPARABILITY}::test_each_blocking_difference_is_refused_in_one_line",
            f"{_COMPARABILITY}::test_what_a_comparison_is_for_is_listed_not_refused",
            f"{_COMPARABILITY}::test_facts_a_run_did_not_record_are_no_difference",
            f"{_COMPARABILITY}::test_lanes_are_ranked_against_the_first_lane_of_their_kind",
            f"{_COMPARABILITY}::test_another_judge_is_refused",
            "tests/test_comparability_words.py",
            *(
                f"tests/test_qa_comparability.py::{name}"
                for name in (
                    "test_the_answer_key_is_named_before_the_dataset_and_judges_only_one_run_has_are_not",
                    "test_a_model_or_a_judge_setting_is_a_difference_under_the_same_spec",
                    "test_an_unrecorded_qa_fact_is_stated_not_refused_and_one_qa_step_is_not_compared",
                )
            ),
        ),
    ),
}
"""The critical modules and the tests run against their mutants (the fast ones that cover
them; the long simulations are left to ``scripts/test.sh``)."""

AT_IMPORT: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "metric_specs": (
        ("x__rate__mutmut_*", "x__operation_rates__mutmut_*"),
        ("tests/test_metric_table.py",),
    ),
    "count_specs": (("x__counts__mutmut_*",), ("tests/test_metric_table.py",)),
}
"""Per module: its functions that run when it is imported (those that build its spec tables,
as mutant name patterns) and the tests for them. mutmut forks each mutant's test process from
one that has imported the module already, so such a mutant never takes effect; these mutants
are run again, each in a process that imports everything afresh with the mutant active
(slower: seconds per mutant, hence light tests that pin the whole table), and that run decides
them. mutmut ties code run at import to the first test it runs."""


def _copy_tree(into: Path) -> None:
    for name in ("memlab", "tests", "datasets"):
        shutil.copytree(ROOT / name, into / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(ROOT / "pyproject.toml", into / "pyproject.toml")


def _pytest(workdir: Path, tests: tuple[str, ...]) -> int:
    env = {**os.environ, "PYTHONPATH": str(workdir)}
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests]
    done = subprocess.run(command, cwd=workdir, env=env, capture_output=True, check=False)
    return done.returncode


def run_named(selected: list[Named]) -> int:
    """Apply each named bug to a fresh copy, run its tests; return how many survived."""
    survived = 0
    with tempfile.TemporaryDirectory(prefix="memlab-mutation-") as tmp:
        workdir = Path(tmp) / "tree"
        _copy_tree(workdir)
        for bug in selected:
            path = workdir / bug.path
            original = path.read_text(encoding="utf-8")
            if original.count(bug.old) != 1:
                print(f"?? {bug.name}: the code to change is not found once in {bug.path}")
                survived += 1
                continue
            path.write_text(original.replace(bug.old, bug.new), encoding="utf-8")
            started = time.perf_counter()
            code = _pytest(workdir, bug.tests)
            path.write_text(original, encoding="utf-8")
            killed = code == 1
            survived += not killed
            status = "killed  " if killed else f"SURVIVED (pytest exit {code})"
            print(f"{status} {bug.name}  [{time.perf_counter() - started:.0f} s]", flush=True)
    print(f"named mutants: {len(selected) - survived} of {len(selected)} killed")
    return survived


def _mutmut_config(module: str, tests: tuple[str, ...], *, fresh_import: bool = False) -> str:
    selection = "\n    ".join(tests)
    config = (
        "[mutmut]\n"
        "source_paths=memlab\n"
        # The bundled datasets, for tests that replay one (found beside memlab/).
        "also_copy=\n    datasets\n"
        f"only_mutate={module}\n"
        f"pytest_add_cli_args_test_selection=\n    {selection}\n"
        "pytest_add_cli_args=\n    -m\n    not simulation\n"
    )
    if fresh_import:
        # A clean server process forks each mutant's tests before anything is imported; the
        # imports count against the time limit, hence the larger constant.
        config += "process_isolation=forkserver\nforkserver_warmup=none\ntimeout_constant=10\n"
    return config


def _show(workdir: Path, mutant: str) -> str:
    return subprocess.run(
        [sys.executable, "-m", "mutmut", "show", mutant],
        cwd=workdir,
        capture_output=True,
        text=True,
        check=False,
    ).stdout


def _mutmut(
    workdir: Path, module: str, tests: tuple[str, ...], patterns: tuple[str, ...] = ()
) -> dict[str, int | None]:
    """Run mutmut in ``workdir`` (on ``patterns`` only, with fresh imports, when given); the
    exit code of every mutant's tests by mutant name (``None``: not run)."""
    fresh = bool(patterns)
    (workdir / "setup.cfg").write_text(
        _mutmut_config(module, tests, fresh_import=fresh), encoding="utf-8"
    )
    prefix = module.removesuffix(".py").replace("/", ".")
    names = [f"{prefix}.{pattern}" for pattern in patterns]
    command = [sys.executable, "-m", "mutmut", "run", "--max-children", "1", *names]
    # Fresh imports are paid per mutant: without pytest's installed plugins (notebooks,
    # hypothesis, snapshots: seconds of imports), which the light tests of these passes need not.
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"} if fresh else None
    done = subprocess.run(
        command, cwd=workdir, env=env, capture_output=True, text=True, check=False
    )
    codes: dict[str, int | None] = {}
    for meta in (workdir / "mutants").rglob("*.meta"):
        codes.update(json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"])
    if fresh:
        codes = {k: v for k, v in codes.items() if any(fnmatch(k, n) for n in names)}
    if not codes or all(v is None for v in codes.values()):
        print(done.stdout[-2000:] + done.stderr[-2000:])
    return codes


_KILLED = frozenset({1, 3, 2, 36, 24, -24, 152, 255})
"""Exit codes of a mutant's tests that kill it: a test failed (1, or 3: pytest's internal
error), the tests could not be collected (2: importing the mutant fails; nobody interrupts
these runs; 255: mutmut's code for pytest's exit 4, "found no collectors" for a test named
by id whose module fails to import), or they ran out of time (36, or the CPU limit's signal)."""
_SKIPPED = 34


def run_module(name: str, survivors: Path | None = None) -> tuple[int, int]:
    """mutmut on one module: (killed, tested); the survivors' diffs appended to ``survivors``."""
    module, tests = MODULES[name]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"memlab-mutmut-{name}-") as tmp:
        workdirs = {}
        workdir = workdirs["main"] = Path(tmp) / "main"
        _copy_tree(workdir)
        codes = _mutmut(workdir, module, tests)
        where = dict.fromkeys(codes, workdir)
        if name in AT_IMPORT:
            patterns, fresh_tests = AT_IMPORT[name]
            fresh_dir = Path(tmp) / "fresh"
            _copy_tree(fresh_dir)
            fresh = _mutmut(fresh_dir, module, fresh_tests, patterns)
            codes.update(fresh)
            where.update(dict.fromkeys(fresh, fresh_dir))
        tested = [k for k, v in codes.items() if v != _SKIPPED]
        left = [k for k in tested if codes[k] not in _KILLED]
        if survivors is not None:
            shown = "\n".join(f"# {k}: exit {codes[k]}\n{_show(where[k], k)}" for k in left)
            with survivors.open("a", encoding="utf-8") as log:
                log.write(f"## {name}\n{shown}\n")
    killed = len(tested) - len(left)
    rate = killed / len(tested) if tested else float("nan")
    print(
        f"{name:16} {killed:4d} / {len(tested):4d} killed ({rate:6.1%})  "
        f"[{time.perf_counter() - started:.0f} s]",
        flush=True,
    )
    return killed, len(tested)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--named", action="store_true", help="run the named mutants only")
    parser.add_argument("--modules", help=f"comma-separated modules: {', '.join(MODULES)}")
    parser.add_argument("--target", type=float, default=0.90, help="kill rate to reach")
    parser.add_argument("--list", action="store_true", help="list modules and named mutants")
    parser.add_argument("--survivors", type=Path, help="append unkilled mutants' diffs here")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.list:
        for name, (module, tests) in MODULES.items():
            print(f"{name:16} {module}  <- {', '.join(tests)}")
        for bug in NAMED:
            print(f"named: {bug.name} ({bug.path})")
        return 0
    if args.named:
        return 1 if run_named(list(NAMED)) else 0
    names = args.modules.split(",") if args.modules else list(MODULES)
    unknown = [n for n in names if n not in MODULES]
    if unknown:
        parser.error(f"unknown module {unknown[0]!r}; modules: {', '.join(MODULES)}")
    killed = tested = 0
    for name in names:
        k, t = run_module(name, args.survivors)
        killed, tested = killed + k, tested + t
    rate = killed / tested if tested else 0.0
    print(f"total {killed:4d} / {tested:4d} killed ({rate:6.1%}); target {args.target:.0%}")
    return 0 if rate >= args.target else 1


if __name__ == "__main__":
    sys.exit(main())
