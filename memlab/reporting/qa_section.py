"""The reports' memory-QA section: does the memory help the agent answer, and why not.

Per run with memory QA (``memlab qa RUN``), under the run's headline judge (the first judge
of the QA step):

- accuracy of the answerable questions per configuration and condition (the lane's memory
  beside no memory, the raw history within the budget and the gold memory), with LoCoMo's
  token F1, mem0's BLEU-1 and mem0's F1 and 95% intervals over owners; abstain and
  adversarial questions in a table of their own, never in the headline;
- accuracy per category under ``memory`` and ``gold_memory``;
- the judge band: the same answers under every judge, flip rate and Cohen's kappa, and
  beside it each judge's audit on the judge calibration set, or the command that audits it
  (:mod:`memlab.reporting.qa_audits`);
- with an answer-key audit (the audited key, or the original key recording the audit), the
  original key's ceiling overall and per category beside the scores against each key, and a
  warning when a score exceeds the ceiling of the key it was scored on;
- why each wrong answer from memory is wrong (a table, and a stacked chart per run; of
  several runs graded alike, one chart with the runs overlaid, :mod:`memlab.reporting.overlay`);
- what reading costs (tokens and latency per question) beside what writing costs (tokens
  per conversation);
- procedure questions, scored by the steps the reply names in order, never judged
  (:mod:`memlab.reporting.qa_procedures`).

:func:`judge_robustness` compares configurations under every judge and says which
differences are robust to the judge.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any, TypeGuard

import pandas as pd
from matplotlib.figure import Figure

from memlab.backends.registry import SIMULATED_MARK, is_simulated
from memlab.datasets.questions import UNJUDGED_KINDS
from memlab.qa.conditions import QA_CONDITIONS
from memlab.reporting.groups import check_report, group_name, lane_groups
from memlab.reporting.markdown import md_escape
from memlab.reporting.overlay import qa_chart_runs
from memlab.reporting.qa_audits import judge_audit_notes, judge_audit_table
from memlab.reporting.qa_charts import qa_accuracy_chart, qa_causes_chart, qa_judge_band_chart
from memlab.reporting.qa_procedures import procedure_table
from memlab.reporting.statistics import (
    compared_metrics,
    group_pairs,
    stacked,
    titled_tables_html,
    titled_tables_markdown,
)
from memlab.runs.run import Run, RunError
from memlab.scoring.comparison import Lane, compare, compare_lanes
from memlab.scoring.coverage import too_few_text
from memlab.scoring.qa_causes import CAUSE_TITLES, CAUSES
from memlab.scoring.qa_metrics import (
    accuracy_table,
    cause_table,
    error_counts,
    errors_sentence,
    interval_note,
    judge_band,
    judged_metrics,
    key_ceiling,
    qa_cost,
    robust_verdicts,
    threshold_ratings,
)
from memlab.scoring.stats import StatOptions

__all__ = [
    "QA_CHARTS",
    "QASection",
    "compare_under_judges",
    "judge_robustness",
    "qa_error_notes",
    "qa_html",
    "qa_markdown",
    "qa_section",
    "qa_text",
]

QA_CHARTS: tuple[tuple[str, Callable[[Run], Figure]], ...] = (
    ("Accuracy per condition", qa_accuracy_chart),
    ("Judge band", qa_judge_band_chart),
    ("Why answers from memory are wrong", qa_causes_chart),
)
"""The section's charts by title, drawn for each run with memory QA."""

INTRO = (
    "Every lane's memory is asked the dataset's questions right after the session each "
    "question names, through the lane's injection path (budget and policy); a backend answers "
    "and judge prompts grade. Conditions: memory (the lane's memory), none (no memory), "
    "full_context (the raw conversations, newest first, as much as fits the budget), "
    "gold_memory (the labelled facts active then: the ceiling of the write side). Accuracy "
    "counts answerable questions only; abstain and adversarial questions are reported apart; "
    "procedure questions (gold_memory: with the labelled procedures too) are scored by the "
    "steps the answer names in order (step-order accuracy), not judged."
)


@dataclass(frozen=True)
class QASection:
    """What the section shows (display strings, ready to render)."""

    runs: list[Run]
    accuracy: pd.DataFrame
    other_kinds: pd.DataFrame
    categories: pd.DataFrame
    band: pd.DataFrame
    ceiling: pd.DataFrame
    causes: pd.DataFrame
    cost: pd.DataFrame
    robust: pd.DataFrame
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    banners: list[str] = field(default_factory=list)
    """What a mixed report mixes among the runs with memory QA (another answerer, judge or
    answer key: :func:`memlab.reporting.groups.check_report`)."""
    audits: pd.DataFrame = field(default_factory=pd.DataFrame)
    """Each judge's audit on the judge calibration set (:func:`judge_audit_table`)."""
    procedures: pd.DataFrame = field(default_factory=pd.DataFrame)
    """Procedure questions per lane (:func:`procedure_table`)."""


def _pct(value: float, lo: float = math.nan, hi: float = math.nan) -> str:
    if value is None or pd.isna(value):
        return "-"
    if pd.isna(lo) or pd.isna(hi):
        return f"{value:.1%}"
    return f"{value:.1%} [{lo * 100:.1f}, {hi * 100:.1f}]"


def _named(run: Run, frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with the run's name and each lane's label in front (``lane_id`` dropped)."""
    out = frame.copy()
    out.insert(0, "configuration", [run.label(str(lane)) for lane in out["lane_id"]])
    out.insert(0, "run", run.name)
    # Which table the row goes to: real and simulated lanes are never ranked together.
    out[_GROUP] = [group_name(run, str(lane)) for lane in out["lane_id"]]
    return out.drop(columns="lane_id")


def _accuracy(run: Run) -> pd.DataFrame:
    table = accuracy_table(run.qa_answers, judges=[run.judge], options=run.stats)
    rows = [
        {
            "lane_id": r["lane_id"],
            "condition": r["condition"],
            "owners": r["owners"],
            "questions": f"{r['questions']:g}",
            f"accuracy ({run.judge})": _pct(r["accuracy"], r["accuracy_lo"], r["accuracy_hi"]),
            "token F1": _pct(r["f1"], r["f1_lo"], r["f1_hi"]),
            "BLEU-1": _pct(r["bleu1"], r["bleu1_lo"], r["bleu1_hi"]),
            # mem0's harness's F1 (word sets, no stemming), beside LoCoMo's token F1.
            "mem0 F1": _pct(r["mem0_f1"], r["mem0_f1_lo"], r["mem0_f1_hi"]),
            # Counted wrong above: shown so that they are not read as the memory's fault.
            "no verdict": f"{r['judge_errors']:g}",
            "failed answers": f"{r['answer_errors']:g}",
        }
        for _, r in table.iterrows()
    ]
    return _named(run, pd.DataFrame(rows)) if rows else pd.DataFrame()


def _other_kinds(run: Run) -> pd.DataFrame:
    frames = []
    for kind in ("abstain", "adversarial"):
        table = accuracy_table(run.qa_answers, kinds=[kind], judges=[run.judge], options=run.stats)
        if table.empty:
            continue
        frames.append(
            pd.DataFrame(
                {
                    "lane_id": table["lane_id"],
                    "condition": table["condition"],
                    "kind": kind,
                    "questions": table["questions"].map(lambda v: f"{v:g}"),
                    f"right response ({run.judge})": [
                        _pct(v, lo, hi)
                        for v, lo, hi in table[
                            ["accuracy", "accuracy_lo", "accuracy_hi"]
                        ].to_numpy()
                    ],
                }
            )
        )
    return _named(run, pd.concat(frames, ignore_index=True)) if frames else pd.DataFrame()


def _categories(run: Run) -> pd.DataFrame:
    by = ("lane_id", "category", "condition")
    table = accuracy_table(run.qa_answers, by=by, judges=[run.judge], options=run.stats)
    if table.empty:
        return pd.DataFrame()
    table["shown"] = [
        # No interval where its coverage was not measured (memlab.scoring.coverage): said so.
        _pct(v, lo, hi) + (f" ({too_few_text(int(n))})" if pd.isna(lo) and not pd.isna(v) else "")
        for v, lo, hi, n in table[["accuracy", "accuracy_lo", "accuracy_hi", "owners"]].to_numpy()
    ]
    wide = table.pivot_table(
        index=["lane_id", "category"], columns="condition", values="shown", aggfunc="first"
    )
    # The conditions in their registration order (memory first), not alphabetically; one no
    # longer registered (its plugin uninstalled) last.
    declared = [c for c in QA_CONDITIONS if c in wide.columns]
    wide = wide[declared + [c for c in wide.columns if c not in declared]].reset_index()
    counts = table.groupby(["lane_id", "category"])["questions"].first().reset_index()
    wide = wide.merge(counts, on=["lane_id", "category"])
    wide["questions"] = wide["questions"].map(lambda v: f"{v:g}")
    order = ["lane_id", "category", "questions"]
    wide = wide[order + [c for c in wide.columns if c not in order]]
    return _named(run, wide)


def _band(run: Run) -> pd.DataFrame:
    band = judge_band(run.qa_answers, options=run.stats)
    if band.empty:
        return pd.DataFrame()
    shown = band[["lane_id", "condition"]].copy()
    for column in band.columns:
        if column.startswith("accuracy:"):
            shown[column.split(":", 1)[1]] = band[column].map(_pct)
    shown["band"] = [f"{lo:.1%}-{hi:.1%}" for lo, hi in band[["band_lo", "band_hi"]].to_numpy()]
    shown["flip rate"] = band["flip_rate"].map(_pct)
    shown["kappa"] = band["kappa"].map(lambda k: "-" if pd.isna(k) else f"{k:.2f}")
    return _named(run, shown)


def _ceiling(run: Run) -> tuple[pd.DataFrame, list[str]]:
    table = key_ceiling(run.qa_answers, options=run.stats)
    table = table[table["judge"] == run.judge]
    if table.empty:
        return pd.DataFrame(), []
    unit = ["lane_id", "condition", "category"]
    shown = table.drop_duplicates(unit)[[*unit, "questions", "changed"]].copy()
    shown["questions"] = shown["questions"].map(lambda v: f"{v:g}")
    shown = shown.rename(columns={"changed": "answers the audit changed"})
    for key in ("original", "audited"):  # the key the ceiling limits first
        mine = table[table["key"] == key].set_index(unit)
        if mine.empty:
            continue
        at = pd.MultiIndex.from_frame(shown[unit])
        if key == "original":
            shown["ceiling (original key)"] = mine["ceiling"].reindex(at).map(_pct).to_numpy()
        shown[f"accuracy ({key} key)"] = mine["accuracy"].reindex(at).map(_pct).to_numpy()
    warnings = [
        f"{run.name}: {run.label(r['lane_id'])} / {r['condition']} / {r['category']}: "
        f"{r['accuracy']:.1%} against the {r['key']} key exceeds its ceiling "
        f"{r['ceiling']:.1%}: the answers repeat the key's errors, or the {run.judge} "
        "judge accepts wrong answers"
        for _, r in table[table["over_ceiling"]].iterrows()
    ]
    return _named(run, shown), warnings


def _cause_matcher(run: Run) -> str:
    """The matcher that decided the fates of the evidence (the QA manifest records it)."""
    return str(run.qa_manifest.get("matcher") or "an unrecorded")


def _causes(run: Run) -> pd.DataFrame:
    table = cause_table(run.qa_answers, run.judge)
    if table.empty:
        return pd.DataFrame()
    shown = table.rename(columns=CAUSE_TITLES)
    keep = ["lane_id", "answered", "wrong", *(CAUSE_TITLES[c] for c in CAUSES)]
    return _named(run, shown[keep])


def _threshold_notes(run: Run) -> list[str]:
    """Per lane, the ratings that kept the evidence of wrong answers below the threshold
    (where the records give them: a tiered memory's key points)."""
    table = threshold_ratings(run.qa_answers, run.judge)
    table = table[table["rating"] != "proposed below the threshold"]
    notes = []
    for lane, block in table.groupby("lane_id", sort=False):
        shown = ", ".join(f"{r} ({n})" for r, n in block[["rating", "evidence"]].to_numpy())
        notes.append(
            f"{run.label(str(lane))}: evidence of wrong answers below the threshold: {shown}"
        )
    return notes


def _cost(run: Run) -> pd.DataFrame:
    table = qa_cost(run.qa_answers, run.calls)
    shown = pd.DataFrame(
        {
            "lane_id": table["lane_id"],
            "condition": table["condition"],
            "read tokens / question": table["read_tokens_per_question"].map(lambda v: f"{v:.0f}"),
            "context tokens / question": table["context_tokens_per_question"].map(
                lambda v: f"{v:.0f}"
            ),
            "read latency / question": table["read_latency_s_per_question"].map(
                lambda v: f"{v:.3f} s"
            ),
            "write tokens / conversation": table["write_tokens_per_conversation"].map(
                lambda v: "-" if pd.isna(v) else f"{v:.0f}"
            ),
        }
    )
    return _named(run, shown)


def judge_robustness(runs: Sequence[Run], *, allow_mixed: bool = False) -> pd.DataFrame:
    """The report's comparisons of the judged QA rates under every judge the runs share
    (:func:`memlab.scoring.qa_metrics.robust_verdicts`); empty when no group has memory QA
    graded by two judges.

    Each judge's comparison is the report's own: the same pairs per group, the same rates and
    primary metrics, so the same Holm family; only the judge's verdicts differ. A difference
    robust to the judge is then one the headline finds too.
    """
    metrics, primary, options = compared_metrics(runs), runs[0].primary, runs[0].stats
    found: list[pd.DataFrame] = []
    for group in lane_groups(runs):
        pairs, _ = group_pairs(group)
        lanes = [lane for pair in pairs for lane in pair]
        asked = list({id(r): r for r in (lane.run for lane in lanes) if _asked(r)}.values())
        if not pairs or not asked:
            continue

        def table(judge: str, pairs: list[tuple[Lane, Lane]] = pairs) -> pd.DataFrame:
            judged = [(_under(base, judge), _under(cand, judge)) for base, cand in pairs]
            compared = compare_lanes(
                judged, metrics=metrics, primary=primary, options=options, allow_mixed=allow_mixed
            )
            return _judged_rows(compared)

        found.append(_under_every_judge(asked, table))
    found = [f for f in found if not f.empty]
    return pd.concat(found, ignore_index=True) if found else pd.DataFrame()


def compare_under_judges(
    run_a: Run,
    run_b: Run | None = None,
    *,
    baseline_lane: str | None = None,
    metrics: Sequence[str] | None = None,
    primary: Sequence[str] | None = None,
    options: StatOptions | None = None,
    allow_mixed: bool = False,
) -> pd.DataFrame:
    """:func:`memlab.scoring.comparison.compare` under every judge the runs share, merged by
    :func:`memlab.scoring.qa_metrics.robust_verdicts` (a difference is robust to the judge
    only when every judge finds it); empty when they share fewer than two judges. Each judge's
    comparison has the arguments of the headline one (``metrics``, ``primary``), so the same
    Holm family decides it; the judged rates' rows are kept."""

    def table(judge: str) -> pd.DataFrame:
        compared = compare(
            run_a.with_judge(judge),
            run_b.with_judge(judge) if run_b is not None else None,
            baseline_lane=baseline_lane,
            metrics=metrics,
            primary=primary,
            options=options,
            allow_mixed=allow_mixed,
        )
        return _judged_rows(compared)

    return _under_every_judge([run_a] if run_b is None else [run_a, run_b], table)


def _judged_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of a comparison whose rate a judge grades."""
    if table.empty:
        return table
    return table[table["metric"].isin(judged_metrics())].reset_index(drop=True)


def _asked(run: Any) -> TypeGuard[Run]:
    return isinstance(run, Run) and not run.qa_answers.empty


def _under_every_judge(runs: Sequence[Run], table: Callable[[str], pd.DataFrame]) -> pd.DataFrame:
    shared = [j for j in runs[0].judges if all(j in run.judges for run in runs)]
    if len(shared) < 2:
        return pd.DataFrame()
    return robust_verdicts({judge: table(judge) for judge in shared})


def _under(lane: Lane, judge: str) -> Lane:
    """``lane`` with its run's QA metrics counted under ``judge`` (a run without memory QA as
    it is: it has no judged rate to count)."""
    if not isinstance(lane.run, Run):
        raise RunError(f"{lane.run.name} is not a run")
    if lane.run.qa_answers.empty:
        return lane
    return Lane(lane.run.with_judge(judge), lane.lane_id)


def _backend(identity: object) -> str:
    if not isinstance(identity, dict):
        return "unknown (not recorded)"
    name, model = str(identity.get("name", "?")), str(identity.get("model") or "")
    return f"{name} ({model})" if model and model != name else name


def who_answered(run: Run) -> str:
    """Who answered and who judged the run's memory QA, as one clause (the QA manifest's
    identity: backend name and model of the answerer and of the judges)."""
    identity = run.qa_manifest.get("identity", {})
    answerer = _backend(identity.get("answer_backend"))
    judge = _backend(identity.get("judge_backend"))
    spec = run.qa_manifest.get("spec") or {}
    specs = [spec.get("answer_backend"), spec.get("judge_backend")]
    tag = f" {SIMULATED_MARK}" if any(is_simulated(str(s)) for s in specs if s) else ""
    return f"answered by {answerer}, judged by {judge}{tag}"


SIMULATED_FULL_CONTEXT = (
    "the simulated answerer recognises evidence only when it is written as a stored fact, not "
    "in the conversations' own words, so full_context scores like none here: it measures "
    "nothing about raw history"
)
"""What the simulated answerer cannot read, said wherever full_context is shown for it."""


def simulator_notes(run: Run) -> list[str]:
    """What the run's QA numbers cannot show because a simulated model answered."""
    spec = run.qa_manifest.get("spec") or {}
    conditions = spec.get("conditions") or []
    if is_simulated(str(spec.get("answer_backend", ""))) and "full_context" in conditions:
        return [f"{run.name}: {SIMULATED_FULL_CONTEXT}."]
    return []


def unfinished_notes(run: Run) -> list[str]:
    """One line per lane some of whose owners' replays did not finish (their questions were
    asked of what the replay had reached)."""
    status = run.lane_status
    if status.empty or "incomplete" not in status.columns:
        return []
    return [
        f"{run.name}: {run.label(str(lane))}: {int(n)} owner replay(s) did not finish; their "
        "answers come from the memory the replay reached"
        for lane, n in status["incomplete"].items()
        if int(n)
    ]


def qa_error_notes(runs: Sequence[Run]) -> list[str]:
    """Per run with memory QA, one line naming the answers that could not be graded (each
    counted wrong); none for a run whose every answer was graded. The first screen and the
    QA section both show them."""
    notes = []
    for run in runs:
        if run.qa_answers.empty:
            continue
        errors = errors_sentence(error_counts(run.qa_answers, run.judges))
        if errors:
            notes.append(f"{run.name}: {errors}.")
    return notes


def qa_section(runs: Sequence[Run], *, allow_mixed: bool = False) -> QASection | None:
    """The section for the runs that have memory QA; ``None`` when none has. Lanes are
    compared with the first lane of their kind; runs answered, judged or scored differently
    (another answerer or its model, answer prompt, judge backend or prompt, conditions or
    answer key) are refused unless ``allow_mixed``, and the section's banners then say what
    is mixed (:func:`memlab.reporting.groups.check_report`).

    Raises:
        MixedComparisonError: Runs measured differently, without ``allow_mixed``.
    """
    asked = [run for run in runs if not run.qa_answers.empty]
    if not asked:
        return None
    banners = check_report(asked, allow_mixed=allow_mixed)
    notes, warnings = [], []
    names = ["accuracy", "other", "categories", "band", "audits", "ceiling", "causes", "cost"]
    names.append("procedures")
    frames: dict[str, list[pd.DataFrame]] = {name: [] for name in names}
    for run in asked:
        frames["accuracy"].append(_accuracy(run))
        frames["other"].append(_other_kinds(run))
        frames["categories"].append(_categories(run))
        frames["band"].append(_band(run))
        frames["audits"].append(judge_audit_table(run))
        ceiling, over = _ceiling(run)
        frames["ceiling"].append(ceiling)
        warnings += over
        frames["causes"].append(_causes(run))
        frames["cost"].append(_cost(run))
        frames["procedures"].append(_procedures(run))
        owners = run.qa_answers["user_id"].nunique()
        table = accuracy_table(run.qa_answers, judges=[run.judge], options=run.stats)
        note = interval_note(table, owners)
        judges = ", ".join(run.judges)
        notes.append(
            f"{run.name}: {who_answered(run)}; headline judge {run.judge} (judges: {judges}). "
            f"{note}".strip()
        )
        notes.append(
            f"{run.name}: causes of wrong answers from the evidence matched by the "
            f"{_cause_matcher(run)} matcher"
        )
        notes += [f"{run.name}: {note}" for note in _threshold_notes(run)]
        notes += simulator_notes(run) + judge_audit_notes(run)
        warnings += unfinished_notes(run)
        warnings += qa_error_notes([run])
        if not run.qa_manifest.get("complete", True):
            warnings.append(f"{run.name}: some QA calls failed; their answers count as wrong")
    robust = judge_robustness(runs, allow_mixed=allow_mixed)
    return QASection(
        runs=asked,
        accuracy=stacked(frames["accuracy"]),
        other_kinds=stacked(frames["other"]),
        categories=stacked(frames["categories"]),
        band=stacked(frames["band"]),
        ceiling=stacked(frames["ceiling"]),
        causes=stacked(frames["causes"]),
        cost=stacked(frames["cost"]),
        robust=_robust_display(robust),
        notes=notes,
        warnings=warnings,
        banners=banners,
        audits=stacked(frames["audits"]),
        procedures=stacked(frames["procedures"]),
    )


def _procedures(run: Run) -> pd.DataFrame:
    table = procedure_table(run)
    return _named(run, table) if not table.empty else table


def _robust_display(table: pd.DataFrame) -> pd.DataFrame:
    if table.empty:
        return table
    shown = table.rename(columns={"lane": "configuration", "judge_robust": "under every judge"})
    shown.insert(0, "against", shown.pop("baseline_lane"))
    return shown.drop(columns=["baseline_run"])


_TABLES = (
    ("Answerable questions per condition", "accuracy"),
    ("Abstain and adversarial questions (apart from the headline)", "other_kinds"),
    ("Procedure questions (steps named in order; not judged)", "procedures"),
    ("Per category", "categories"),
    ("Judge band (answerable questions)", "band"),
    ("Judges audited on the judge calibration set", "audits"),
    ("Differences against the baseline, under every judge", "robust"),
    ("Answer-key ceiling", "ceiling"),
    ("Why answers from memory are wrong", "causes"),
    ("Cost: reading beside writing", "cost"),
)


_GROUP = "_group"
_GROUP_TITLES = {"real": "real model", "simulated": SIMULATED_MARK}


def _tables(section: QASection) -> list[tuple[str, pd.DataFrame]]:
    """Each table of the section, split into real and simulated lanes when it has both."""
    found: list[tuple[str, pd.DataFrame]] = []
    for title, name in _TABLES:
        table: pd.DataFrame = getattr(section, name)
        if table.empty or _GROUP not in table.columns:
            found.append((title, table))
            continue
        groups = sorted(dict.fromkeys(table[_GROUP]), key=lambda g: g != "real")
        for group in groups:
            part = table[table[_GROUP] == group].drop(columns=_GROUP).reset_index(drop=True)
            found.append((f"{title} ({_GROUP_TITLES[group]})" if len(groups) > 1 else title, part))
    return found


def qa_markdown(section: QASection | None) -> list[str]:
    """Markdown lines of the section (none without one)."""
    if section is None:
        return []
    lines = ["## Memory QA", "", md_escape(INTRO), ""]
    lines += [f"**{md_escape(b)}**  " for b in section.banners]
    lines += [f"**warning**: {md_escape(w)}  " for w in section.warnings]
    lines += [f"{md_escape(note)}  " for note in section.notes]
    lines += titled_tables_markdown(_tables(section))
    return [*lines, ""]


def qa_html(section: QASection | None, image: Callable[[Figure], str]) -> list[str]:
    """HTML parts of the section with its charts, under its heading (``image`` turns a Figure
    into a URI)."""
    if section is None:
        return []
    parts = [f"<p class='muted'>{escape(INTRO)}</p>"]
    parts += [f"<p><b>{escape(b)}</b></p>" for b in section.banners]
    parts += [f"<p><b>warning</b>: {escape(w)}</p>" for w in section.warnings]
    parts += [f"<p class='muted'>{escape(note)}</p>" for note in section.notes]
    parts += titled_tables_html(_tables(section))
    for run, name in qa_chart_runs(section.runs):
        for title, chart in QA_CHARTS:
            parts.append(f"<h3>{escape(title)}: {escape(name)}</h3>")
            parts.append(f"<img alt='{escape(title)}' src='{image(chart(run))}'>")
    return parts


def _text(table: pd.DataFrame) -> str:
    """A section table as plain text, without the columns the report uses to split it."""
    return table.drop(columns=["run", _GROUP], errors="ignore").to_string(index=False)


def qa_text(run: Run) -> str:
    """The run's memory QA as plain text (``memlab qa``, ``memlab sweep``): answerable
    accuracy per configuration and condition under the headline judge, the judge band and
    the causes of wrong answers from memory ("" without memory QA)."""
    if run.qa_answers.empty:
        return ""
    accuracy = _accuracy(run)
    blocks = [
        f"memory QA, {who_answered(run)}; headline judge {run.judge} (judges: "
        f"{', '.join(run.judges)}); answerable questions, 95% intervals over owners",
        _text(accuracy) if not accuracy.empty else "no answerable questions",
    ]
    procedures = _procedures(run)
    if not procedures.empty:
        blocks += [
            "procedure questions (asked of the memory; steps named in order, not judged)",
            _text(procedures),
        ]
    other = _other_kinds(run)
    if not other.empty:
        blocks += [
            "abstain and adversarial questions (apart)",
            _text(other),
        ]
    band = _band(run)
    if not band.empty:
        blocks += ["judge band", _text(band)]
    blocks += [
        "judges audited on the judge calibration set",
        _text(judge_audit_table(run)),
        *judge_audit_notes(run),
    ]
    ceiling, warnings = _ceiling(run)
    if not ceiling.empty:
        blocks += ["answer-key ceiling", _text(ceiling)]
    causes = _causes(run)
    if not causes.empty:
        blocks += [
            f"why answers from memory are wrong ({run.judge} judge; evidence matched by the "
            f"{_cause_matcher(run)} matcher)",
            _text(causes),
            *_threshold_notes(run),
        ]
    note = interval_note(
        accuracy_table(run.qa_answers, judges=[run.judge], options=run.stats),
        int(run.qa_answers["user_id"].nunique()),
    )
    if not run.qa_manifest.get("complete", True):
        warnings.append("some QA calls failed; their answers count as wrong")
    blocks += [f"warning: {w}" for w in warnings] + ([note] if note else [])
    blocks += [f"note: {n}" for n in simulator_notes(run)]
    # Last, where a terminal leaves it in view: answers that could not be graded.
    errors = errors_sentence(error_counts(run.qa_answers, run.judges))
    judged = ~run.qa_answers["kind"].isin(UNJUDGED_KINDS)
    graded = "every answer was graded by every judge" if judged.any() else "no answer is judged"
    blocks.append(f"warning: {errors}" if errors else graded)
    return "\n\n".join(blocks)
