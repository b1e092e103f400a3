"""Each judge of a run's memory QA beside its audit on the judge calibration set.

A judge's band says how much the accuracy moves between judges; its audit says how far each
judge agrees with verdicts decided by reading (:mod:`memlab.scoring.qa.judge_audit`). The audit
shown for a judge is the one kept in the run (``memlab judge audit --run RUN``,
:mod:`memlab.postrun.judge_audit_step`) for exactly that judge: the prompt text (hash), backend,
model and judge settings the QA manifest records. A judge with no such audit is named as not
audited, with the command that audits it.
"""

from __future__ import annotations

import math
import shlex
from typing import Any

import pandas as pd

from memlab.backends.registry import SIMULATED_MARK
from memlab.postrun.judge_audit_step import run_judge_audit
from memlab.runs.run import Run

__all__ = ["audit_command", "judge_audit_notes", "judge_audit_table"]


def audit_command(run: Run) -> str:
    """The command that audits the run's judges and keeps the audit in the run."""
    return f"memlab judge audit --run {shlex.quote(str(run.path))}"


def _pct(value: Any) -> str:
    return (
        "-"
        if value is None or (isinstance(value, float) and math.isnan(value))
        else (f"{float(value):.1%}")
    )


def _backend(identity: Any) -> str:
    if not isinstance(identity, dict):
        return "-"
    name, model = str(identity.get("name", "?")), str(identity.get("model") or "")
    shown = f"{name} ({model})" if model and model != name else name
    return f"{shown} {SIMULATED_MARK}" if identity.get("simulated") else shown


def _row(run: Run, judge: str, audit: dict[str, Any] | None) -> dict[str, str]:
    prompt = ((run.qa_manifest.get("identity") or {}).get("judges") or {}).get(judge)
    row = {"run": run.name, "judge": judge, "prompt sha256": str(prompt or "-")[:12]}
    if audit is None:
        return {**row, "audited agreement": "not audited"}
    wrong = audit.get("on_topic_wrong") or {}
    calibration = audit.get("calibration") or {}
    kappa = audit.get("kappa")
    return {
        **row,
        "audited agreement": _pct(audit.get("agreement")),
        "kappa": "-" if kappa is None else f"{float(kappa):.2f}",
        "on-topic wrong accepted": f"{_pct(wrong.get('accepted'))} of {wrong.get('graded', 0)}",
        "no verdict": f"{audit.get('unreadable', 0)} of {audit.get('n', 0)}",
        "judged by": _backend(audit.get("backend_identity")),
        "calibration set": f"{calibration.get('source', '?')} "
        f"({calibration.get('triples', '?')} triples)",
    }


def judge_audit_table(run: Run) -> pd.DataFrame:
    """One row per judge of the run's memory QA: its audited agreement with the calibration
    set's verdicts, Cohen's kappa, the share of on-topic wrong answers it accepted and its
    unreadable replies, or "not audited" (empty without memory QA)."""
    if run.qa_answers.empty:
        return pd.DataFrame()
    rows = [_row(run, judge, run_judge_audit(run, judge)) for judge in run.judges]
    return pd.DataFrame(rows).fillna("-")


def judge_audit_notes(run: Run) -> list[str]:
    """One line naming the judges of the run with no audit of their own, with the command that
    audits them (none when every judge is audited)."""
    if run.qa_answers.empty:
        return []
    missing = [judge for judge in run.judges if run_judge_audit(run, judge) is None]
    if not missing:
        return []
    return [
        f"{run.name}: judge {', '.join(missing)} not audited: run `{audit_command(run)}` "
        "(an audit of another prompt text, backend, model or judge setting is not shown)"
    ]
