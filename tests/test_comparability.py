"""Comparisons check what differs between lanes before ranking them.

Every refusal (dataset, owner set, matcher, judge, simulated against real) and its
``--allow-mixed`` banner, in the library and on the command line; the prompt-diff section's
choice of the lane each prompt edit is diffed against; the gate that cannot see a
regression; the call counts that tell model calls from cache hits and the simulated model.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from builders import update

from memlab import compare
from memlab.backends.scripted import ScriptedBackend
from memlab.cli.main import main
from memlab.core.pipeline.llm import CompletionRequest, OutputMode
from memlab.core.prompts import PromptRegistry
from memlab.grids.grid import Grid
from memlab.matching.base import LexicalMatcher
from memlab.matching.default_matcher import DefaultMatcher
from memlab.postrun.rescoring import rescore
from memlab.reporting.compare.prompt_changes import prompt_changes, prompt_changes_html
from memlab.reporting.compare.trial import try_prompt
from memlab.reporting.report import build_report
from memlab.reporting.tables import compare_table
from memlab.runs.run import Run, load_run
from memlab.scoring.comparing.comparability import (
    BLOCKING,
    Difference,
    JudgeFacts,
    LaneFacts,
    MixedComparisonError,
    QAFacts,
    check_pairs,
    differences,
    kind_baselines,
)
from memlab.sweeps.driver import sweep

QA = QAFacts(
    answerer="sim:careful",
    answerer_model="model simulated-careful",
    answer_prompt="default",
    answer_prompt_sha256="a" * 64,
    answer_settings="max_tokens 64",
    judges={
        "lenient": JudgeFacts("sim:careful", "model simulated-careful", "b" * 64, "max_tokens 32")
    },
    conditions=("memory", "none"),
    answer_key="original",
)

BASE = LaneFacts(
    run="a",
    lane="x",
    dataset="sha256 0123",
    owners=frozenset({"u1", "u2"}),
    matcher="default",
    matcher_version="0.1.0",
    judge="lenient",
    backend="local:smollm2",
    simulated=False,
    prompt="default",
    prompt_sha256="aaaaaaaa11",
    settings={"output_mode": "free", "max_facts": 100},
    qa=QA,
)

CHANGES: dict[str, dict[str, object]] = {
    "answer key": {"qa": replace(QA, answer_key="audited")},
    "dataset": {"dataset": "sha256 4567"},
    "owners": {"owners": frozenset({"u1", "u3"})},
    "matcher": {"matcher": "lexical"},
    "matcher version": {"matcher_version": "0.2.0"},
    "judge": {"judge": "strict"},
    "answerer": {"qa": replace(QA, answerer="sim:sloppy")},
    "answer prompt": {"qa": replace(QA, answer_prompt_sha256="c" * 64)},
    "answer settings": {"qa": replace(QA, answer_settings="max_tokens 128")},
    "QA conditions": {"qa": replace(QA, conditions=("memory",))},
    "backend kind": {"simulated": True},
}

# Each blocking difference in words, the candidate's value (run b, CHANGES) first and the
# baseline's (run a, BASE) second, as the line names b before a.
WORDS: dict[str, str] = {
    "answer key": "audited vs original",
    "dataset": "sha256 4567 vs sha256 0123",
    "owners": "2 owners (1 not in the other: u3) vs 2 owners (1 not in the other: u2)",
    "matcher": "lexical vs default",
    "matcher version": "0.2.0 vs 0.1.0",
    "judge": "strict vs lenient",
    "answerer": "sim:sloppy vs sim:careful",
    "answer prompt": f"default ({'c' * 12}) vs default ({'a' * 12})",
    "answer settings": "max_tokens 128 vs max_tokens 64",
    "QA conditions": "memory vs memory, none",
    "backend kind": "simulated vs real",
}


def facts(**changes: object) -> LaneFacts:
    fields = {**BASE.__dict__, "run": "b", **changes}
    return LaneFacts(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize("what", BLOCKING)
def test_each_blocking_difference_is_refused_in_one_line(what: str) -> None:
    other = facts(**CHANGES[what])
    with pytest.raises(MixedComparisonError) as caught:
        check_pairs([(BASE, other)])
    message = str(caught.value)
    line = f"b: x vs a: x: different {what}: {WORDS[what]}"
    assert message.startswith(f"{line}; "), message
    assert "\n" not in message and "--allow-mixed" in message
    assert caught.value.difference.what == what
    banners = check_pairs([(BASE, other), (BASE, other)], allow_mixed=True)
    assert banners == [f"mixed comparison: {line}"]


def test_what_a_comparison_is_for_is_listed_not_refused() -> None:
    other = facts(
        backend="openai:gpt-4o-mini",
        prompt="concise",
        prompt_sha256="bbbbbbbb22",
        settings={"output_mode": "json_schema", "max_facts": 100},
    )
    assert check_pairs([(BASE, other)]) == []
    assert differences(BASE, other) == [
        Difference("backend", "local:smollm2", "openai:gpt-4o-mini"),
        Difference("prompt", "default (aaaaaaaa)", "concise (bbbbbbbb)"),
        Difference("setting output_mode", "free", "json_schema"),
    ]
    assert differences(BASE, facts()) == []


def test_facts_a_run_did_not_record_are_no_difference() -> None:
    older = facts(matcher_version="", judge="", dataset="", prompt_sha256="")
    assert differences(BASE, older) == []
    # A path (a run whose dataset file is gone) is not compared with a content hash.
    assert differences(BASE, facts(dataset="/gone/owners.jsonl")) == []
    paths = differences(facts(dataset="/a.jsonl"), facts(dataset="/b.jsonl"))
    assert [str(d) for d in paths] == ["dataset: /b.jsonl vs /a.jsonl"]
    owners = differences(BASE, facts(owners=frozenset({"u1", "u2", "u3", "u4", "u5", "u6"})))
    assert [str(d) for d in owners] == [
        "owners: 6 owners (4 not in the other: u3, u4, u5, ...) vs 2 owners"
    ]


def test_lanes_are_ranked_against_the_first_lane_of_their_kind() -> None:
    kinds = [facts(simulated=s) for s in (False, True, False, True, True)]
    pairs = kind_baselines(range(len(kinds)), lambda i: kinds[i])
    assert pairs == [(0, 0), (1, 1), (0, 2), (1, 3), (1, 4)]


# --- runs on disk ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("runs")


def _personas(name: str, runs_dir: Path, owners: int = 3, **grid: object) -> Run:
    spec = {"name": name, "max_owners": owners, "max_sessions": 2, **grid}
    return sweep("personas", Grid.from_mapping(spec), runs_dir=runs_dir, progress=False)


@pytest.fixture(scope="module")
def mixed(runs_dir: Path) -> Run:
    """Two real (scripted) lanes and two simulated ones in one run."""
    return _personas(
        "mixed",
        runs_dir,
        axes={"backend": ["scripted:user-lines", "sim:chatty"], "max_facts": [10, 50]},
    )


@pytest.fixture(scope="module")
def plain(runs_dir: Path) -> Run:
    return _personas("plain", runs_dir, base={"backend": "scripted:user-lines"})


def test_one_run_compares_each_lane_with_its_own_kind(mixed: Run) -> None:
    table = compare(mixed, metrics=["recall"])
    kinds = {mixed.label(lid): mixed.lane_facts(lid).simulated for lid in mixed.lanes}
    assert sorted(kinds.values()) == [False, False, True, True]
    assert len(table) == 2
    for _, row in table.iterrows():
        assert kinds[row["lane"]] == kinds[row["baseline_lane"]], row["lane"]
    assert table.attrs["banners"] == []


def test_a_simulated_lane_against_a_real_baseline_is_refused(
    mixed: Run, capsys: pytest.CaptureFixture[str]
) -> None:
    real = next(mixed.label(lid) for lid in mixed.lanes if not mixed.lane_facts(lid).simulated)
    # The real lane is the baseline, named last, and so is its kind.
    ending = f" vs mixed: {real}: different backend kind: simulated vs real"
    with pytest.raises(MixedComparisonError, match=re.escape(ending)):
        compare(mixed, baseline_lane=real, metrics=["recall"])
    args = ["compare", str(mixed.path), "--baseline-lane", real, "--metrics", "recall"]
    assert main([*args, "--resamples", "200"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and ending in err
    assert main([*args, "--resamples", "200", "--allow-mixed"]) == 0
    out = capsys.readouterr().out.replace("\n  ", " ")  # the banner wraps at 120 columns
    assert out.startswith("mixed comparison: mixed: [simulated] ")
    assert out.splitlines()[0].endswith(ending)


def test_a_rescored_run_is_not_compared_with_the_original(
    plain: Run, runs_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = runs_dir / "plain-lexical"
    shutil.copytree(plain.path, copy)
    relexed = rescore(copy, LexicalMatcher())
    original = plain.environment["matcher"]["name"]
    lane = plain.label(next(iter(plain.lanes)))
    # The rescored copy is the candidate: its name and its matcher come first.
    message = f"plain-lexical: {lane} vs plain: {lane}: different matcher: lexical vs {original}"
    with pytest.raises(MixedComparisonError, match=re.escape(message)):
        compare(plain, relexed)
    assert main(["compare", str(plain.path), str(copy)]) == 2
    assert message in capsys.readouterr().err
    gate = ["gate", str(copy), "--baseline", str(plain.path), "--no-significant-regression"]
    assert main(gate) == 2
    assert message in capsys.readouterr().err
    assert main([*gate, "--allow-mixed", "--tolerance", "1"]) in (0, 1)
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"mixed comparison: {message}"


def test_another_owner_set_is_refused(
    plain: Run, runs_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fewer = _personas("plain-2", runs_dir, owners=2, base={"backend": "scripted:user-lines"})
    # The candidate has 2 owners, the baseline 3 (the one the candidate lacks named with it).
    lane = plain.label(next(iter(plain.lanes)))
    line = f"plain-2: {lane} vs plain: {lane}: different owners: 2 owners vs 3 owners (1 not in"
    with pytest.raises(MixedComparisonError, match=re.escape(line)):
        compare(plain, fewer)
    table = compare(plain, fewer, allow_mixed=True, metrics=["recall"])
    assert table["owners"].max() <= 2
    assert table.attrs["banners"][0].startswith(f"mixed comparison: {line}")
    assert main(["compare", str(plain.path), str(fewer.path)]) == 2
    assert line in capsys.readouterr().err


def test_another_judge_is_refused() -> None:
    lenient, strict = facts(judge="lenient"), facts(judge="strict", run="c")
    with pytest.raises(MixedComparisonError) as caught:
        check_pairs([(lenient, strict)])
    assert str(caught.value).startswith("c: x vs b: x: different judge: strict vs lenient; ")


def test_two_owners_cannot_pass_a_regression_gate(
    runs_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = _personas("two-a", runs_dir, owners=2, base={"backend": "scripted:user-lines"})
    b = _personas("two-b", runs_dir, owners=2, base={"backend": "scripted:user-lines"})
    args = ["gate", str(b.path), "--baseline", str(a.path), "--no-significant-regression"]
    for tolerance in ("0.05", "1"):
        assert main([*args, "recall", "--tolerance", tolerance]) == 1
        out = capsys.readouterr().out
        size = f"{float(tolerance) * 100:.1f} pts"
        # 2 owners: the sign-flip test's smallest p-value is 2 / 2**2 = 0.5, no test at all.
        assert "recall: no test possible: 2 owners (a paired test at this level needs " in out
        assert f"so a regression of {size} cannot be detected" in out
        assert "gate passed" not in out
    assert main([*args, "recall", "--tolerance", "recal=0.1"]) == 2
    assert "--tolerance recal: not a metric the gate checks" in capsys.readouterr().err


def test_calls_are_counted_by_where_the_reply_came_from(
    mixed: Run, runs_dir: Path, tmp_path: Path
) -> None:
    summary = mixed.summary.set_index("label")
    for label, row in summary.iterrows():
        simulated = str(label).startswith("[simulated]")
        assert row["cache_hits"] == 0
        assert (row["simulated_calls"] > 0) == simulated, label
        assert (row["model_calls"] > 0) == (not simulated), label
        assert row["model_calls"] + row["simulated_calls"] <= row["llm_calls"]
    backend = ScriptedBackend(function=lambda _r: update("Likes tea"))

    def cached(name: str) -> Run:
        return sweep(
            "smoke",
            Grid.from_mapping({"name": name, "max_owners": 1}),
            runs_dir=tmp_path,
            backend_factory=lambda _s: backend,
            cache_dir=tmp_path / "cache",
            progress=False,
        )

    first, again = cached("first").summary.iloc[0], cached("again").summary.iloc[0]
    assert first["model_calls"] == first["llm_calls"] > 0 and first["cache_hits"] == 0
    assert again["cache_hits"] == first["llm_calls"] and again["model_calls"] == 0


# --- the prompt-diff section -------------------------------------------------------------


def _mode_backend() -> ScriptedBackend:
    """Valid replies, except prose in json_object mode: the mode changes the numbers, the
    prompt does not."""

    def reply(request: CompletionRequest) -> str:
        if request.mode is OutputMode.JSON_OBJECT:
            return "Noted, thanks!"
        return update("Likes tea")

    return ScriptedBackend(function=reply)


@pytest.mark.parametrize("modes", [["free", "json_object"], ["json_object", "free"]])
def test_a_prompt_edit_is_diffed_against_its_predecessor_not_the_mode_change(
    tmp_path: Path, modes: list[str]
) -> None:
    template = PromptRegistry().get("default").template
    backend = _mode_backend()

    def run(name: str, text: str, axes: dict[str, list[str]]) -> Run:
        grid = {"name": name, "max_owners": 2, "max_sessions": 2, "axes": axes}
        return sweep(
            "personas",
            Grid.from_mapping({**grid, "base": {"prompt": "mine"}}),
            runs_dir=tmp_path,
            prompts={"mine": text},
            backend_factory=lambda _s: backend,
            progress=False,
        )

    v1 = run("v1", template + "\nKeep facts short.\n", {"output_mode": ["free"]})
    v2 = run("v2", template + "\nKeep facts very short.\n", {"output_mode": modes})
    runs = [v1, v2]
    metrics = compare_table(runs)
    failing = metrics["parse_failure_rate"].tolist()
    assert failing[0] == 0 and sorted(failing[1:]) == [0.0, 1.0]  # the mode matters
    changes = prompt_changes(runs, metrics)
    assert len(changes) == 1, changes
    change = changes[0]
    assert (change.run, change.baseline) == ("v2", "v1: mine")
    assert change.lane.startswith("mode=free")
    assert change.also == [] and change.note == ""
    assert "-Keep facts short." in change.diff and "+Keep facts very short." in change.diff
    assert not any("parse failure" in title for title, _ in change.deltas), change.deltas


def test_a_prompt_edit_with_no_like_lane_says_what_else_differs(tmp_path: Path) -> None:
    template = PromptRegistry().get("default").template
    backend = _mode_backend()

    def run(name: str, text: str, mode: str) -> Run:
        grid = {"name": name, "max_owners": 2, "max_sessions": 2}
        return sweep(
            "personas",
            Grid.from_mapping({**grid, "base": {"prompt": "mine", "output_mode": mode}}),
            runs_dir=tmp_path,
            prompts={"mine": text},
            backend_factory=lambda _s: backend,
            progress=False,
        )

    runs = [run("v1", template + "\nA.\n", "free"), run("v2", template + "\nB.\n", "json_object")]
    changes = prompt_changes(runs, compare_table(runs))
    assert len(changes) == 1
    assert changes[0].also == ["setting output_mode: json_object vs free"]  # v2's first
    assert changes[0].run == "v2" and changes[0].baseline == "v1: mine"
    words = "Not only the prompt differs (this lane vs v1: mine): setting output_mode: json_object"
    assert words in prompt_changes_html(changes)[0]
    assert ("parse failure rate", "+100.0 pts") in changes[0].deltas


def test_simulated_prompt_lanes_say_the_prompt_is_ignored(
    runs_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level("WARNING", logger="memlab.sweeps.driver"):
        run = _personas(
            "sim-prompts",
            runs_dir,
            owners=2,
            base={"backend": "sim:chatty"},
            axes={"prompt": ["default", "concise"]},
        )
    warned = [r.getMessage() for r in caplog.records if "ignores prompt text" in r.getMessage()]
    assert len(warned) == 1
    changes = prompt_changes([run], compare_table([run]))
    assert [c.note for c in changes] == [
        "the simulated model ignores prompt text: these lanes differ only in their labels"
    ]


# --- the prompt trial --------------------------------------------------------------------


def test_a_trial_on_the_simulated_model_says_it_shows_nothing(
    runs_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    run = _personas("sim-trial", runs_dir, owners=2, base={"backend": "sim:chatty"})
    with caplog.at_level("WARNING", logger="memlab.reporting.compare.trial"):
        trial = try_prompt(run, "concise", owners="all")
    assert trial.title.startswith("[simulated] Prompt trial: default (")
    assert "ignores prompt text" in trial._repr_html_()
    assert any("ignores prompt text" in r.getMessage() for r in caplog.records)
    assert trial.banners == []


def test_a_trial_scores_with_the_runs_matcher_and_refuses_another(
    plain: Run, runs_dir: Path
) -> None:
    copy = runs_dir / "plain-trial"
    shutil.copytree(plain.path, copy)
    relexed = rescore(copy, LexicalMatcher())
    trial = try_prompt(relexed, "concise", owners="all")
    assert trial.run.environment["matcher"]["name"] == "lexical"
    assert not trial.title.startswith("[simulated]")
    # The trial (scored by the default matcher) is the candidate, the lexically scored run
    # its baseline: so the default matcher is named first.
    default = DefaultMatcher()
    refused = rf" vs plain-trial: \S+: different matcher: {re.escape(default.name)} vs lexical;"
    with pytest.raises(MixedComparisonError, match=refused):
        try_prompt(relexed, "concise", owners="all", matcher=default)
    mixed_trial = try_prompt(
        relexed, "concise", owners="all", matcher=DefaultMatcher(), allow_mixed=True
    )
    assert mixed_trial.banners and "different matcher" in mixed_trial.banners[0]
    assert mixed_trial.banners[0] in mixed_trial._repr_html_()


def test_metric_tables_rank_each_kind_apart(mixed: Run) -> None:
    table = compare_table([mixed])
    assert table["group"].tolist().count("simulated") == 2
    assert set(table["group"]) == {"real", "simulated"}
    for _, kind in table.groupby("group"):
        first = kind.index[0]
        for column in ("recall", "final_facts"):
            expected = kind[column] - kind.loc[first, column]
            assert kind[f"{column}_delta"].tolist() == pytest.approx(expected.tolist())
        recall = kind["recall"]
        best = recall.max() if recall.nunique() > 1 else None
        assert kind["recall_best"].tolist() == [v == best for v in recall]
    # The simulated model recalls more than the scripted user lines, and within each kind the
    # lanes tie: ranked together, the simulated lanes would be starred with a positive delta.
    sim, real = table[table["group"] == "simulated"], table[table["group"] == "real"]
    assert sim["recall"].min() > real["recall"].max()
    assert not table["recall_best"].any()
    assert (sim["recall_delta"] == 0).all()


def test_a_report_refuses_mixed_runs_and_banners_them_when_allowed(
    plain: Run, mixed: Run, runs_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Simulated and real lanes in one report: each kind against its own first lane.
    html = build_report([mixed], tmp_path / "mixed").html.read_text(encoding="utf-8")
    headings = [part.split("</h3>", 1)[0] for part in html.split("<h3>")[1:]]
    against = [h for h in headings if "against mixed: " in h]
    assert len(against) == 2, headings
    assert against[0].startswith("Real model: ") and "[simulated]" not in against[0]
    assert against[1].startswith("Simulated model [simulated]: ") and "[simulated]" in against[1]
    copy = runs_dir / "plain-report"
    shutil.copytree(plain.path, copy)
    rescore(copy, LexicalMatcher())
    with pytest.raises(MixedComparisonError, match="different matcher"):
        build_report([plain, load_run(copy)], tmp_path / "refused")
    assert not (tmp_path / "refused" / "index.html").exists()
    args = ["report", str(plain.path), str(copy), "-o", str(tmp_path / "cli")]
    assert main(args) == 2
    assert "different matcher" in capsys.readouterr().err
    assert main([*args, "--allow-mixed"]) == 0
    text = (tmp_path / "cli" / "index.html").read_text(encoding="utf-8")
    intro = text.split("<ul class='intro'>", 1)[1].split("</ul>", 1)[0]
    assert intro.startswith("<li>mixed comparison: plain-report: ")
    assert "different matcher" in intro
    md = (tmp_path / "cli" / "summary.md").read_text(encoding="utf-8")
    assert "mixed comparison: plain-report: " in md
