"""Judge audits kept with a run: how far the judges that graded its memory QA can be trusted.

:func:`audit_run_judges` (``memlab judge audit --run RUN``) grades the judge calibration set
(:mod:`memlab.qa.judge_calibration`) with the judge backend and judge prompts the run's QA
step used, at the QA step's judge settings (:mod:`memlab.scoring.qa.judge_audit`), and keeps the
result in ``qa/judge_audits.json``::

    {"judge_audits_format": 1,
     "audits": [{"judge": "strict", "prompt_sha256": "...", "backend": "sim:careful",
                 "backend_identity": {"name": "sim", ...},
                 "params": {"temperature": 0.0, "max_tokens": 32, "seed": 0},
                 "calibration": {"source": "...", "sha256": "...", "triples": 240},
                 "audited_at": "2025-...Z",
                 "n": 240, "graded": 240, ..., "agreement": 0.97, "kappa": 0.94,
                 "on_topic_wrong": {...}, "by_kind": {...}}, ...]}

One entry per judge identity (prompt hash, backend identity, judge settings) and calibration
set: a new audit replaces the entry it repeats and keeps the others. :func:`run_judge_audit`
gives the entry of a run's judge only when its identity is the one the QA manifest records: an
audit of another judge prompt text, backend, model or setting is never shown as this judge's.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memlab.backends.caching.cache import CacheMode
from memlab.backends.identity import backend_identity
from memlab.core.jsondoc.document import utc_iso
from memlab.core.pipeline.llm import Backend
from memlab.grids.qa_spec import QAError, QASpec, resolve_prompts
from memlab.qa.judge_calibration import JudgeCalibrationSet, load_judge_calibration
from memlab.runs.run import Run, load_run
from memlab.runs.run_lock import writes_run
from memlab.runs.rundir import JUDGE_AUDITS, QA_MANIFEST, RunError
from memlab.scoring.qa.judge_audit import JudgeAudit, audit_judges, judge_backend

__all__ = [
    "JUDGE_AUDITS",
    "JUDGE_AUDITS_FORMAT",
    "audit_run_judges",
    "judge_identity",
    "run_judge_audit",
    "stored_judge_audits",
]

"""Where a run keeps the audits of its judges."""

JUDGE_AUDITS_FORMAT = 1

_IDENTITY = ("prompt_sha256", "backend_identity", "params")


def judge_identity(run: Run, judge: str) -> dict[str, Any] | None:
    """What identifies the judge ``judge`` of the run's QA step, as its QA manifest records
    it: the prompt's hash, the backend's identity and the judge settings (None when the
    manifest does not record them all)."""
    identity = run.qa_manifest.get("identity") or {}
    prompt = (identity.get("judges") or {}).get(judge)
    backend, params = identity.get("judge_backend"), identity.get("judge_params")
    if not prompt or not isinstance(backend, dict) or not isinstance(params, dict):
        return None
    return {"prompt_sha256": prompt, "backend_identity": backend, "params": params}


def stored_judge_audits(run: Run) -> list[dict[str, Any]]:
    """The audit entries kept in the run (none when it has no ``qa/judge_audits.json``).

    Raises:
        RunError: The file is unreadable or not one memlab writes.
    """
    path = run.path / JUDGE_AUDITS
    if not path.exists():
        return []
    data = run.dir.read_json(path, "judge audits")
    data = data if isinstance(data, dict) else {}
    audits = data.get("audits")
    if data.get("judge_audits_format") != JUDGE_AUDITS_FORMAT or not isinstance(audits, list):
        raise RunError(
            f"{path}: not judge audits this memlab writes; delete it and audit the judges "
            f"again (memlab judge audit --run {run.path})"
        )
    return [a for a in audits if isinstance(a, dict)]


def run_judge_audit(run: Run, judge: str) -> dict[str, Any] | None:
    """The newest audit kept in the run of exactly the judge ``judge`` graded with
    (:func:`judge_identity`), or None when there is none."""
    identity = judge_identity(run, judge)
    if identity is None:
        return None
    found = [a for a in stored_judge_audits(run) if all(a.get(k) == identity[k] for k in _IDENTITY)]
    return max(found, key=lambda a: str(a.get("audited_at", "")), default=None)


def _entries(audit: JudgeAudit, at: str) -> list[dict[str, Any]]:
    data = audit.to_json()
    shared = {
        "backend": data["backend"],
        "backend_identity": data["backend_identity"],
        "params": data["params"],
        "calibration": data["calibration"],
        "audited_at": at,
    }
    return [{"judge": name, **shared, **numbers} for name, numbers in data["judges"].items()]


def _key(entry: dict[str, Any]) -> str:
    parts = [entry.get(k) for k in _IDENTITY] + [(entry.get("calibration") or {}).get("sha256")]
    return json.dumps(parts, sort_keys=True)


def _store(run: Run, audit: JudgeAudit) -> None:
    """Add the audit's entries to the run's file, replacing those they repeat (atomically)."""
    new = _entries(audit, utc_iso(datetime.now(UTC)))
    replaced = {_key(e) for e in new}
    kept = [e for e in stored_judge_audits(run) if _key(e) not in replaced]
    data = {"judge_audits_format": JUDGE_AUDITS_FORMAT, "audits": [*kept, *new]}
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    run.dir.write_text(run.path / JUDGE_AUDITS, text)


def _qa_spec(run: Run) -> QASpec:
    spec = run.qa_manifest.get("spec")
    if not isinstance(spec, dict):
        raise QAError(
            f"{run.path}: no memory QA to audit the judges of ({QA_MANIFEST} is missing); "
            f"run memlab qa {run.path} first"
        )
    return QASpec.model_validate(spec)


@writes_run("judge audit")
def audit_run_judges(
    run: Run | str | Path,
    *,
    calibration: JudgeCalibrationSet | None = None,
    cache_dir: str | Path | None = None,
    cache_mode: CacheMode = CacheMode.READ_WRITE,
    max_workers: int = 4,
    backend_factory: Callable[[str], Backend] | None = None,
    prompts_dir: str | Path | None = None,
) -> JudgeAudit:
    """Audit the judges of ``run``'s memory QA on ``calibration`` (default: the bundled set)
    and keep the result in the run (see the module docstring) when every call succeeded: an
    audit with failed calls is returned, not kept.

    Args:
        run: A run with memory QA, or its directory.
        calibration: The triples to grade.
        cache_dir: Response cache directory for the verdicts.
        cache_mode: ``READ_WRITE``, ``READ_ONLY`` or ``OFF``.
        max_workers: Concurrent calls.
        backend_factory: Builds the judge backend from its spec (default: the registry, as
            ``memlab judge audit`` builds it).
        prompts_dir: Where relative judge prompt files are (default: the grid file's folder).

    Raises:
        QAError: The run has no memory QA, or a judge prompt now differs from the one its QA
            step used (the message names it; nothing is written).
    """
    run = load_run(run) if isinstance(run, str | Path) else run
    spec = _qa_spec(run)
    base = Path(prompts_dir) if prompts_dir is not None else run.grid.base_dir
    judges = resolve_prompts(spec, base).judges
    recorded = (run.qa_manifest.get("identity") or {}).get("judges") or {}
    for judge in judges:
        if recorded.get(judge.name) != judge.sha256:
            raise QAError(
                f"{run.path}: judge prompt {judge.name!r} is not the one the QA step used "
                f"(sha256 {judge.sha256[:12]} now, {str(recorded.get(judge.name))[:12]} then); "
                f"run the QA step again (memlab qa {run.path}) and then the audit"
            )
    calibration = calibration or load_judge_calibration()
    triples = calibration.triples
    if backend_factory is not None:
        backend = backend_factory(spec.grader)
    else:
        backend = judge_backend(
            spec.grader, judges, triples, cache_dir=cache_dir, cache_mode=cache_mode
        )
    params = spec.judge_params()
    scores = audit_judges(backend, judges, triples, params=params, max_workers=max_workers)
    audit = JudgeAudit(spec.grader, backend_identity(backend), calibration, params, tuple(scores))
    if not any(score.total.failed for score in scores):
        _store(run, audit)
    return audit
