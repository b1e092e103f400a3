"""Audit a QA judge on the judge calibration set: how far its verdicts can be trusted.

:func:`audit_judges` grades every triple of a calibration set
(:mod:`memlab.qa.judge_calibration`) under each judge prompt on one backend, with the
requests a QA run sends (:func:`~memlab.qa.answering.judge_tasks`), one call per triple and
prompt (:func:`~memlab.qa.answering.call`), each reply read by
:func:`~memlab.qa.verdicts.parse_verdict`. Per judge prompt (:class:`JudgeScore`), overall,
per kind and over the on-topic WRONG triples (:class:`Tally`):

- ``n`` triples, of which ``graded`` got a readable verdict, ``unreadable`` a reply with no
  single verdict (prose naming both labels, neither, two JSON objects) and ``failed`` a failed
  call. Unreadable and failed replies are counted apart and are never a verdict: agreement
  and kappa are over the graded triples, and ``coverage`` is ``graded / n``;
- ``agreement`` with the set's verdicts and Cohen's kappa (agreement beyond what the two
  sides' CORRECT rates give by chance;
  :attr:`~memlab.matching.calibration.KindCounts.kappa`);
- ``accepted``: the share of graded triples called CORRECT; over the on-topic WRONG triples,
  the share of wrong-but-on-topic answers the judge accepts.

:meth:`JudgeAudit.to_json` is what ``memlab judge audit --out FILE`` writes, for reports to
read::

    {"judge_audit_format": 1,
     "backend": "sim:careful", "backend_identity": {"name": "sim", ...},
     "calibration": {"source": "memlab/qa/data/judge_calibration.jsonl",
                     "sha256": "...", "triples": 240},
     "params": {"temperature": 0.0, "max_tokens": 32, "seed": 0},
     "judges": {"lenient": {"prompt_sha256": "...", "n": 240, "graded": 238,
                            "unreadable": 2, "failed": 0, "coverage": 0.9917,
                            "agreement": 0.74, "kappa": 0.49, "accepted": 0.63,
                            "on_topic_wrong": {"n": 117, "graded": 116, ..., "accepted": 0.6},
                            "by_kind": {"paraphrase": {"n": 30, ...}, ...}},
                "strict": {...}}}

Every tally has the keys ``n graded unreadable failed coverage agreement kappa accepted``;
a rate over no triple is null.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memlab.backends.caching.cache import CachedBackend, CacheMode
from memlab.backends.identity import backend_identity
from memlab.backends.registry import cacheable, is_simulated, resolve_backend
from memlab.core.pipeline.llm import Backend, GenerationParams
from memlab.matching.calibration import KindCounts
from memlab.qa.answering import call, judge_tasks
from memlab.qa.judge_calibration import JudgeCalibrationSet, JudgeTriple
from memlab.qa.qa_prompts import JudgePrompt
from memlab.qa.verdicts import parse_verdict

__all__ = [
    "JUDGE_AUDIT_FORMAT",
    "JudgeAudit",
    "JudgeScore",
    "Tally",
    "audit_backend",
    "audit_judges",
    "judge_backend",
]

JUDGE_AUDIT_FORMAT = 1
"""Version of the JSON :meth:`JudgeAudit.to_json` gives."""


def _default_params() -> GenerationParams:
    # A verdict is one short JSON object, read greedily (the QA step's judge settings).
    return GenerationParams(temperature=0.0, max_tokens=32, seed=0)


@dataclass
class Tally:
    """Verdicts of one judge prompt on some triples: readable ones in a confusion table
    (label: the set's verdict; accepted: the judge said CORRECT), the rest counted apart."""

    counts: KindCounts = field(default_factory=KindCounts)
    unreadable: int = 0
    failed: int = 0

    def add(self, label: bool, verdict: bool | None, failed: bool) -> None:
        """Count one triple's outcome."""
        if failed:
            self.failed += 1
        elif verdict is None:
            self.unreadable += 1
        else:
            self.counts.add(label, verdict)

    @property
    def graded(self) -> int:
        """Triples with a readable verdict."""
        return self.counts.pairs

    @property
    def n(self) -> int:
        """Every triple put to the judge."""
        return self.graded + self.unreadable + self.failed

    @property
    def coverage(self) -> float:
        """``graded / n`` (NaN for no triple)."""
        return self.graded / self.n if self.n else math.nan

    @property
    def agreement(self) -> float:
        """Share of graded triples whose verdict is the set's."""
        return self.counts.agreement

    @property
    def kappa(self) -> float:
        """Cohen's kappa of the verdicts against the set's, over graded triples."""
        return self.counts.kappa

    @property
    def accepted(self) -> float:
        """Share of graded triples the judge called CORRECT."""
        said = self.counts.true_accepted + self.counts.wrong_accepted
        return said / self.graded if self.graded else math.nan

    def as_dict(self) -> dict[str, Any]:
        """The JSON-ready numbers (rates rounded to 4 places, None when undefined)."""
        return {
            "n": self.n,
            "graded": self.graded,
            "unreadable": self.unreadable,
            "failed": self.failed,
            **{
                name: _rate(getattr(self, name))
                for name in ("coverage", "agreement", "kappa", "accepted")
            },
        }


def _rate(value: float) -> float | None:
    return None if math.isnan(value) else round(value, 4)


@dataclass
class JudgeScore:
    """One judge prompt's audit: overall, over the on-topic WRONG triples, and per kind."""

    judge: str
    prompt_sha256: str
    total: Tally = field(default_factory=Tally)
    on_topic_wrong: Tally = field(default_factory=Tally)
    by_kind: dict[str, Tally] = field(default_factory=dict)

    def add(self, triple: JudgeTriple, verdict: bool | None, failed: bool) -> None:
        """Count ``triple``'s outcome everywhere it belongs."""
        self.total.add(triple.correct, verdict, failed)
        self.by_kind.setdefault(triple.kind, Tally()).add(triple.correct, verdict, failed)
        if triple.on_topic:
            self.on_topic_wrong.add(triple.correct, verdict, failed)

    def as_dict(self) -> dict[str, Any]:
        """The JSON-ready audit of this judge prompt."""
        return {
            "prompt_sha256": self.prompt_sha256,
            **self.total.as_dict(),
            "on_topic_wrong": self.on_topic_wrong.as_dict(),
            "by_kind": {kind: tally.as_dict() for kind, tally in self.by_kind.items()},
        }


@dataclass(frozen=True)
class JudgeAudit:
    """A backend's judge prompts audited on one calibration set."""

    backend: str
    backend_identity: dict[str, Any]
    calibration: JudgeCalibrationSet
    params: GenerationParams
    scores: tuple[JudgeScore, ...]

    def to_json(self) -> dict[str, Any]:
        """The audit as JSON (see the module docstring)."""
        return {
            "judge_audit_format": JUDGE_AUDIT_FORMAT,
            "backend": self.backend,
            "backend_identity": self.backend_identity,
            "calibration": {
                "source": self.calibration.source,
                "sha256": self.calibration.sha256,
                "triples": len(self.calibration.triples),
            },
            "params": self.params.as_dict(),
            "judges": {score.judge: score.as_dict() for score in self.scores},
        }


def audit_judges(
    backend: Backend,
    judges: Sequence[JudgePrompt],
    triples: Sequence[JudgeTriple],
    *,
    params: GenerationParams | None = None,
    max_workers: int = 4,
) -> list[JudgeScore]:
    """Grade every triple under every judge prompt on ``backend`` (``max_workers`` calls at
    a time) and tally the verdicts per judge prompt, in the order of ``judges``."""
    params = params or _default_params()
    work = [
        (judge_index, triple, task.request)
        for triple in triples
        for judge_index, task in enumerate(
            judge_tasks(triple.as_question(), triple.answer, judges, params, every_answer=True)
        )
    ]
    with ThreadPoolExecutor(max_workers=max(1, max_workers)) as pool:
        results = list(pool.map(lambda item: call(backend, item[2]), work))
    scores = [JudgeScore(judge.name, judge.sha256) for judge in judges]
    for (judge_index, triple, _request), result in zip(work, results, strict=True):
        verdict = parse_verdict(result.text) if result.text is not None else None
        scores[judge_index].add(triple, verdict, failed=result.text is None)
    return scores


def judge_backend(
    spec: str,
    judges: Sequence[JudgePrompt],
    triples: Sequence[JudgeTriple],
    *,
    cache_dir: str | Path | None = None,
    cache_mode: CacheMode = CacheMode.READ_WRITE,
) -> Backend:
    """The backend ``spec`` names, ready to grade ``triples``: the simulated model (``sim:``)
    is given the judge prompts and the triples' known verdicts (it has no dataset to judge
    from); any other backend goes through the response cache when ``cache_dir`` is given."""
    if is_simulated(spec):
        return resolve_backend(spec, dataset=[], judges=list(judges), calibration=list(triples))
    backend = resolve_backend(spec)
    if cache_dir is not None and cacheable(spec):
        backend = CachedBackend(backend, cache_dir, mode=cache_mode)
    return backend


def audit_backend(
    spec: str,
    judges: Sequence[JudgePrompt],
    calibration: JudgeCalibrationSet,
    *,
    params: GenerationParams | None = None,
    cache_dir: str | Path | None = None,
    cache_mode: CacheMode = CacheMode.READ_WRITE,
    max_workers: int = 4,
) -> JudgeAudit:
    """Audit ``judges`` on the backend ``spec`` names (:func:`judge_backend`) over
    ``calibration``."""
    params = params or _default_params()
    triples = calibration.triples
    backend = judge_backend(spec, judges, triples, cache_dir=cache_dir, cache_mode=cache_mode)
    scores = audit_judges(backend, judges, triples, params=params, max_workers=max_workers)
    return JudgeAudit(spec, backend_identity(backend), calibration, params, tuple(scores))
