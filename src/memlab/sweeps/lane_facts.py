"""What a run records about one of its lanes, as :class:`~memlab.scoring.comparability.LaneFacts`.

Read from the run directory: the dataset (``grid.yaml``: its path and content hash), the
owners the lane's session rows cover, the matcher (``environment.json``), the QA judge, the
backend identity and prompt hash (``lanes/<lane_id>/config.json``) and the lane's settings.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

import pandas as pd

from memlab.backends.identity import file_digest
from memlab.backends.registry import is_simulated
from memlab.core.yamlio import read_yaml
from memlab.errors import MemlabError
from memlab.scoring.comparability import LaneFacts
from memlab.sweeps.grid import LaneConfig

__all__ = ["dataset_identity", "read_lane_facts"]

_NOT_SETTINGS = frozenset({"prompt", "backend"})


class Run(Protocol):
    """What is read of a run (:class:`memlab.sweeps.run.Run` is one)."""

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
    def judge(self) -> str: ...
    def label(self, lane_id: str) -> str: ...
    def lane_info(self, lane_id: str) -> dict[str, Any]: ...


def dataset_identity(run: Run) -> str:
    """The dataset's content hash as ``grid.yaml`` records it, else its path ("" when the
    run has no ``grid.yaml``: a run built in memory)."""
    try:
        data = read_yaml(run.path / "grid.yaml", inside=run.path).data
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


def read_lane_facts(run: Run, lane_id: str, *, dataset: str | None = None) -> LaneFacts:
    """The :class:`LaneFacts` of ``lane_id`` in ``run`` (``dataset``: its identity, when the
    caller already read it)."""
    config = run.lanes[lane_id]
    try:
        info = run.lane_info(lane_id)
    except MemlabError:
        info = {}
    prompt: dict[str, Any] = info["prompt"] if isinstance(info.get("prompt"), dict) else {}
    sessions = run.sessions
    owners: frozenset[str] = frozenset()
    if not sessions.empty and "lane_id" in sessions.columns:
        owners = frozenset(sessions.loc[sessions["lane_id"] == lane_id, "user_id"].astype(str))
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
        prompt=str(prompt.get("name") or config.prompt),
        prompt_sha256=str(prompt.get("sha256") or ""),
        settings=settings,
    )
