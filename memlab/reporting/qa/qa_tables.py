"""The per-run tables of the memory-QA section (:mod:`memlab.reporting.qa.qa_section`), as
display frames: accuracy per condition, other question kinds, categories, the judge band, the
answer-key ceiling, causes of wrong answers, cost and procedure questions, each with the run's
lanes named."""

from __future__ import annotations

import math

import pandas as pd

from memlab.qa.conditions import QA_CONDITIONS
from memlab.reporting.groups import group_name
from memlab.reporting.qa.qa_procedures import procedure_table
from memlab.runs.run import Run
from memlab.scoring.inference.coverage import too_few_text
from memlab.scoring.qa.qa_causes import CAUSE_TITLES, CAUSES
from memlab.scoring.qa.qa_metrics import (
    accuracy_table,
    cause_table,
    judge_band,
    key_ceiling,
    qa_cost,
    threshold_ratings,
)

__all__ = [
    "GROUP_COLUMN",
    "accuracy_display",
    "band_display",
    "categories_display",
    "cause_matcher",
    "causes_display",
    "ceiling_display",
    "cost_display",
    "other_kinds_display",
    "procedures_display",
    "threshold_notes",
]


GROUP_COLUMN = "_group"
"""The column of a display frame that says which table a row goes to (real or simulated)."""


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
    out[GROUP_COLUMN] = [group_name(run, str(lane)) for lane in out["lane_id"]]
    return out.drop(columns="lane_id")


def accuracy_display(run: Run) -> pd.DataFrame:
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


def other_kinds_display(run: Run) -> pd.DataFrame:
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


def categories_display(run: Run) -> pd.DataFrame:
    by = ("lane_id", "category", "condition")
    table = accuracy_table(run.qa_answers, by=by, judges=[run.judge], options=run.stats)
    if table.empty:
        return pd.DataFrame()
    table["shown"] = [
        # No interval where its coverage was not measured (memlab.scoring.inference.coverage): said
        # so.
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


def band_display(run: Run) -> pd.DataFrame:
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


def ceiling_display(run: Run) -> tuple[pd.DataFrame, list[str]]:
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


def cause_matcher(run: Run) -> str:
    """The matcher that decided the fates of the evidence (the QA manifest records it)."""
    return str(run.qa_manifest.get("matcher") or "an unrecorded")


def causes_display(run: Run) -> pd.DataFrame:
    table = cause_table(run.qa_answers, run.judge)
    if table.empty:
        return pd.DataFrame()
    shown = table.rename(columns=CAUSE_TITLES)
    keep = ["lane_id", "answered", "wrong", *(CAUSE_TITLES[c] for c in CAUSES)]
    return _named(run, shown[keep])


def threshold_notes(run: Run) -> list[str]:
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


def cost_display(run: Run) -> pd.DataFrame:
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


def procedures_display(run: Run) -> pd.DataFrame:
    table = procedure_table(run)
    return _named(run, table) if not table.empty else table
