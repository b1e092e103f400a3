"""What a run records about one of its lanes, as
:class:`~memlab.scoring.comparing.comparability.LaneFacts`.

Read from the run directory: the dataset (``grid.yaml``: its path and content hash), the
owners the lane's session rows cover, the matcher (``environment.json``), the QA judge, the
backend identity and prompt hash (``lanes/<lane_id>/config.json``), the lane's settings, and
what the memory QA answered and judged with (``qa/manifest.json``: the spec and the identity
the QA step recorded; the answer key from the answer table's ``audited`` column).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

import pandas as pd

from memlab.backends.identity import file_digest
from memlab.backends.registry import is_simulated, reads_prompts
from memlab.core.base.yamlio import read_yaml
from memlab.errors import MemlabError
from memlab.grids.lane import LaneConfig
from memlab.runs.rundir import RunDir
from memlab.scoring.comparing.comparability import JudgeFacts, LaneFacts, QAFacts

__all__ = ["dataset_identity", "qa_facts", "read_lane_facts"]

_NOT_SETTINGS = frozenset({"prompt", "backend"})


class Run(Protocol):
    """What is read of a run (:class:`memlab.runs.run.Run` is one)."""

    @property
    def name(self) -> str: ...
    @property
    def path(self) -> Path: ...
    @property
    def lanes(self) -> Mapping[str, LaneConfig]: ...
    @property
    def sessions(self) -> pd.DataFrame: ...
    @property
    def environment(self) -> dict[str, Any]: ...
    @property
    def qa_manifest(self) -> dict[str, Any]: ...
    @property
    def qa_answers(self) -> pd.DataFrame: ...
    @property
    def judge(self) -> str: ...
    def label(self, lane_id: str) -> str: ...
    def lane_info(self, lane_id: str) -> dict[str, Any]: ...


def dataset_identity(run: Run) -> str:
    """The dataset's content hash as ``grid.yaml`` records it, else its path ("" when the
    run has no ``grid.yaml``: a run built in memory)."""
    try:
        data = read_yaml(RunDir(run.path).grid_file, inside=run.path).data
    except (MemlabError, OSError):
        return ""
    if not isinstance(data, dict):
        return ""
    digest = data.get("dataset_sha256")
    path = str(data.get("dataset") or "")
    if not (isinstance(digest, str) and digest) and path:
        try:  # a run recorded before the hash was: the file as it is now, if still there
            digest = file_digest(path)
        except (OSError, MemlabError):
            return path
    return f"sha256 {digest[:12]}" if isinstance(digest, str) and digest else path


def _backend_text(spec: str, identity: Any) -> str:
    """The backend spec, plus the model file's hash when the identity records one."""
    if not isinstance(identity, dict):
        return spec
    digest = identity.get("model_sha256") or identity.get("profile_sha256")
    host = identity.get("host")
    detail = str(digest)[:8] if digest else str(host or "")
    return f"{spec} ({detail})" if detail else spec


def _model_text(identity: Any) -> str:
    """A backend identity's model in words: model id, model file or profile hash, host."""
    if not isinstance(identity, dict):
        return ""
    digest = identity.get("model_sha256") or identity.get("profile_sha256")
    parts = [
        f"model {identity['model']}" if identity.get("model") else "",
        f"sha256 {str(digest)[:12]}" if digest else "",
        f"host {identity['host']}" if identity.get("host") else "",
    ]
    return ", ".join(part for part in parts if part)


def _params_text(params: Any) -> str:
    if not isinstance(params, dict):
        return ""
    return ", ".join(f"{name} {params[name]}" for name in sorted(params))


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _answer_key(answers: pd.DataFrame) -> str:
    """``audited`` when an audit changed the answer of any question the answers were scored
    against, else ``original`` (an original key may record an audit beside its answers:
    ``audited`` rows whose answer did not change)."""
    if "audited" not in answers.columns:
        return ""
    changed = "answer_changed" in answers.columns and bool(answers["answer_changed"].eq(True).any())
    return "audited" if changed else "original"


def qa_facts(run: Run) -> QAFacts | None:
    """What ``run``'s memory QA answered and judged with (``None`` without memory QA); a
    fact the QA manifest lacks is "" (compared as unknown)."""
    manifest = run.qa_manifest
    if not manifest:
        return None
    spec, identity = _dict(manifest.get("spec")), _dict(manifest.get("identity"))
    answerer = str(spec.get("answer_backend") or "")
    prompt = _dict(identity.get("answer_prompt"))
    prompts = _dict(identity.get("judges"))
    judge = JudgeFacts(
        backend=str(spec.get("judge_backend") or answerer),
        model=_model_text(identity.get("judge_backend")),
        settings=_params_text(identity.get("judge_params")),
    )
    named = _list(spec.get("judges")) or list(prompts)
    conditions = _list(spec.get("conditions"))
    return QAFacts(
        answerer=answerer,
        answerer_model=_model_text(identity.get("answer_backend")),
        answer_prompt=str(prompt.get("name") or spec.get("answer_prompt") or ""),
        answer_prompt_sha256=str(prompt.get("sha256") or ""),
        answer_settings=_params_text(identity.get("answer_params")),
        judges={
            str(name): dataclasses.replace(judge, prompt_sha256=str(prompts.get(name) or ""))
            for name in named
        },
        conditions=tuple(str(c) for c in conditions),
        answer_key=_answer_key(run.qa_answers),
    )


def read_lane_facts(
    run: Run,
    lane_id: str,
    *,
    dataset: str | None = None,
    qa: QAFacts | None = None,
) -> LaneFacts:
    """The :class:`LaneFacts` of ``lane_id`` in ``run`` (``dataset`` and ``qa``: the run's
    dataset identity and :func:`qa_facts`, when the caller already read them)."""
    config = run.lanes[lane_id]
    try:
        info = run.lane_info(lane_id)
    except MemlabError:
        info = {}
    prompt: dict[str, Any] = info["prompt"] if isinstance(info.get("prompt"), dict) else {}
    sessions = run.sessions
    owners: frozenset[str] = frozenset()
    if not sessions.empty and "lane_id" in sessions.columns:
        mine = sessions.loc[sessions["lane_id"] == lane_id, "user_id"].astype(str)
        owners = frozenset(mine.to_numpy(dtype=object))  # not boxed one by one
    recorded = run.environment.get("matcher")
    matcher: dict[str, Any] = recorded if isinstance(recorded, dict) else {}
    identity: dict[str, Any] = info["identity"] if isinstance(info.get("identity"), dict) else {}
    settings = {
        name: value
        for name, value in config.model_dump(mode="json").items()
        if name not in _NOT_SETTINGS
    }
    return LaneFacts(
        run=run.name,
        lane=run.label(lane_id),
        dataset=dataset_identity(run) if dataset is None else dataset,
        owners=owners,
        matcher=str(matcher.get("name") or ""),
        matcher_version=str(matcher.get("version") or ""),
        judge=run.judge if run.qa_manifest else "",
        backend=_backend_text(config.backend, identity.get("backend")),
        simulated=is_simulated(config.backend),
        reads_prompts=reads_prompts(config.backend),
        prompt=str(prompt.get("name") or config.prompt),
        prompt_sha256=str(prompt.get("sha256") or ""),
        settings=settings,
        qa=qa_facts(run) if qa is None else qa,
    )
