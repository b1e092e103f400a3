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
  (:mod:`memlab.reporting.qa.qa_audits`);
- with an answer-key audit (the audited key, or the original key recording the audit), the
  original key's ceiling overall and per category beside the scores against each key, and a
  warning when a score exceeds the ceiling of the key it was scored on;
- why each wrong answer from memory is wrong (a table, and a stacked chart per run; of
  several runs graded alike, one chart with the runs overlaid,
  :mod:`memlab.reporting.figures.overlay`);
- what reading costs (tokens and latency per question) beside what writing costs (tokens
  per conversation);
- procedure questions, scored by the steps the reply names in order, never judged
  (:mod:`memlab.reporting.qa.qa_procedures`).

:func:`~memlab.reporting.qa.qa_judges.judge_robustness` compares configurations under every
judge and says which differences are robust to the judge; the per-run tables are built in
:mod:`memlab.reporting.qa.qa_tables`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html import escape

import pandas as pd
from matplotlib.figure import Figure

from memlab.backends.registry import SIMULATED_MARK, is_simulated
from memlab.datasets.questions import UNJUDGED_KINDS
from memlab.reporting.figures.overlay import qa_chart_runs
from memlab.reporting.groups import check_report
from memlab.reporting.markdown import md_escape
from memlab.reporting.qa.qa_audits import judge_audit_notes, judge_audit_table
from memlab.reporting.qa.qa_charts import qa_accuracy_chart, qa_causes_chart, qa_judge_band_chart
from memlab.reporting.qa.qa_judges import compare_under_judges, judge_robustness
from memlab.reporting.qa.qa_tables import (
    GROUP_COLUMN,
    accuracy_display,
    band_display,
    categories_display,
    cause_matcher,
    causes_display,
    ceiling_display,
    cost_display,
    other_kinds_display,
    procedures_display,
    threshold_notes,
)
from memlab.reporting.statistics import (
    GroupComparison,
    stacked,
    titled_tables_html,
    titled_tables_markdown,
)
from memlab.runs.run import Run
from memlab.scoring.comparing.inconclusive import inconclusive_text
from memlab.scoring.qa.qa_metrics import accuracy_table, interval_note
from memlab.scoring.qa.qa_verdicts import errors_sentence

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
    "robust_inconclusive",
    "said_inconclusive",
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
        errors = errors_sentence(run.qa_error_counts)
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
        frames["accuracy"].append(accuracy_display(run))
        frames["other"].append(other_kinds_display(run))
        frames["categories"].append(categories_display(run))
        frames["band"].append(band_display(run))
        frames["audits"].append(judge_audit_table(run))
        ceiling, over = ceiling_display(run)
        frames["ceiling"].append(ceiling)
        warnings += over
        frames["causes"].append(causes_display(run))
        frames["cost"].append(cost_display(run))
        frames["procedures"].append(procedures_display(run))
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
            f"{cause_matcher(run)} matcher"
        )
        notes += [f"{run.name}: {note}" for note in threshold_notes(run)]
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


def _robust_display(table: pd.DataFrame) -> pd.DataFrame:
    if table.empty:
        return table
    shown = table.rename(columns={"lane": "configuration", "judge_robust": "under every judge"})
    shown.insert(0, "against", shown.pop("baseline_lane"))
    return shown.drop(columns=["baseline_run"])


def robust_inconclusive(
    robust: pd.DataFrame, comparisons: Sequence[GroupComparison]
) -> pd.DataFrame:
    """The section's table of differences under every judge (:attr:`QASection.robust`) with
    each judged rate an inconclusive reason of its group's comparison concerns
    (:func:`memlab.scoring.comparing.inconclusive.inconclusive_text`) said inconclusive: under
    each judge ``inconclusive``, under every judge with the reasons, as in ``memlab compare``;
    every other rate as it was."""
    if robust.empty:
        return robust
    said = [""] * len(robust)
    for found in comparisons:
        lanes = set(zip(found.table["run"], found.table["lane"], strict=True))
        rows = zip(robust["run"], robust["configuration"], robust["metric"], strict=True)
        for i, (run, lane, metric) in enumerate(rows):
            if (run, lane) in lanes:
                said[i] = said[i] or inconclusive_text(found.reasons, str(lane), str(metric))
    return said_inconclusive(robust, said, "under every judge")


def said_inconclusive(robust: pd.DataFrame, said: Sequence[str], summary: str) -> pd.DataFrame:
    """A table of differences under every judge with each row whose ``said`` text is not empty
    (:func:`memlab.scoring.comparing.inconclusive.inconclusive_text`) inconclusive: under each
    judge (``verdict:<judge>`` columns) ``inconclusive``, in its ``summary`` column that text;
    the other rows as they were. One rule for the report's table and ``memlab compare``'s."""
    judges = {
        column: ["inconclusive" if why else v for why, v in zip(said, robust[column], strict=True)]
        for column in robust.columns
        if str(column).startswith("verdict:")
    }
    every = [why or v for why, v in zip(said, robust[summary], strict=True)]
    return robust.assign(**judges, **{summary: every})


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


_GROUP_TITLES = {"real": "real model", "simulated": SIMULATED_MARK}


def _tables(section: QASection) -> list[tuple[str, pd.DataFrame]]:
    """Each table of the section, split into real and simulated lanes when it has both."""
    found: list[tuple[str, pd.DataFrame]] = []
    for title, name in _TABLES:
        table: pd.DataFrame = getattr(section, name)
        if table.empty or GROUP_COLUMN not in table.columns:
            found.append((title, table))
            continue
        groups = sorted(dict.fromkeys(table[GROUP_COLUMN]), key=lambda g: g != "real")
        for group in groups:
            part = (
                table[table[GROUP_COLUMN] == group]
                .drop(columns=GROUP_COLUMN)
                .reset_index(drop=True)
            )
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
    return table.drop(columns=["run", GROUP_COLUMN], errors="ignore").to_string(index=False)


def qa_text(run: Run) -> str:
    """The run's memory QA as plain text (``memlab qa``, ``memlab sweep``): answerable
    accuracy per configuration and condition under the headline judge, the judge band and
    the causes of wrong answers from memory ("" without memory QA)."""
    if run.qa_answers.empty:
        return ""
    accuracy = accuracy_display(run)
    blocks = [
        f"memory QA, {who_answered(run)}; headline judge {run.judge} (judges: "
        f"{', '.join(run.judges)}); answerable questions, 95% intervals over owners",
        _text(accuracy) if not accuracy.empty else "no answerable questions",
    ]
    procedures = procedures_display(run)
    if not procedures.empty:
        blocks += [
            "procedure questions (asked of the memory; steps named in order, not judged)",
            _text(procedures),
        ]
    other = other_kinds_display(run)
    if not other.empty:
        blocks += [
            "abstain and adversarial questions (apart)",
            _text(other),
        ]
    band = band_display(run)
    if not band.empty:
        blocks += ["judge band", _text(band)]
    blocks += [
        "judges audited on the judge calibration set",
        _text(judge_audit_table(run)),
        *judge_audit_notes(run),
    ]
    ceiling, warnings = ceiling_display(run)
    if not ceiling.empty:
        blocks += ["answer-key ceiling", _text(ceiling)]
    causes = causes_display(run)
    if not causes.empty:
        blocks += [
            f"why answers from memory are wrong ({run.judge} judge; evidence matched by the "
            f"{cause_matcher(run)} matcher)",
            _text(causes),
            *threshold_notes(run),
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
    errors = errors_sentence(run.qa_error_counts)
    judged = ~run.qa_answers["kind"].isin(UNJUDGED_KINDS)
    graded = "every answer was graded by every judge" if judged.any() else "no answer is judged"
    blocks.append(f"warning: {errors}" if errors else graded)
    return "\n\n".join(blocks)
