"""Where a search's settings go: lane settings, the tiered memory's knobs, the answer prompt.

A candidate's parameters (:func:`memlab.reporting.tuning.tune.tune`) name lane settings
(``max_facts``), tiered knobs as ``tiered.<option>`` (``tiered.importance_threshold``: the
lane's ``tiered:`` options, only on a ``memory: tiered`` lane) and ``answer_prompt`` (the grid's
``qa.answer_prompt``: a built-in name, or a prompt file beside the grid, added to
``qa.answer_prompts``; only with a ``qa:`` key and a QA objective). The update prompt
(``prompt``) is placed by the search itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memlab.grids.grid import Grid
from memlab.grids.lane import LaneConfig
from memlab.reporting.tuning.tune_spec import TuneSpec

__all__ = ["ANSWER_PROMPT", "TIERED", "answer_prompts", "check_space", "place", "start_value"]

TIERED = "tiered."
"""The prefix of a tiered knob in the search space."""
ANSWER_PROMPT = "answer_prompt"
"""The search space's key of candidate answer prompts."""


def start_value(lane: LaneConfig, name: str) -> Any:
    """The starting lane's value of the searched setting ``name``."""
    if name.startswith(TIERED):
        return getattr(lane.tiered, name.removeprefix(TIERED))
    return lane.settings()[name]


def check_space(grid: Grid, spec: TuneSpec) -> None:
    """Tiered knobs need a tiered lane; answer prompts a ``qa:`` key and a QA objective.

    Raises:
        GridError: Naming the file, line and key at fault.
    """
    lane = grid.lanes()[0]
    for name in spec.space:
        if name.startswith(TIERED) and lane.memory != "tiered":
            raise grid.error(
                f"tune.space.{name}",
                f"the lane's memory is {lane.memory}: only a memory: tiered lane has tiered "
                "knobs (set base.memory: tiered or drop the knob)",
            )
    if ANSWER_PROMPT not in spec.space:
        return
    key = f"tune.space.{ANSWER_PROMPT}"
    if grid.qa is None:
        raise grid.error(key, "answer prompts are searched by memory QA: add a qa: key")
    if not spec.objective.metric.startswith("qa_"):
        raise grid.error(
            key,
            f"the answer prompt cannot change {spec.objective.metric}: set tune.objective."
            "metric to a QA metric (qa_accuracy, qa_f1...)",
        )


def answer_prompts(grid: Grid, spec: TuneSpec) -> list[str]:
    """The candidate answer prompts as written, the grid's own first (deduplicated)."""
    found = spec.space.get(ANSWER_PROMPT)
    if not isinstance(found, list) or grid.qa is None:
        return []
    return list(dict.fromkeys([grid.qa.answer_prompt, *found]))


def place(
    grid: Grid, settings: dict[str, Any], params: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The lane settings and the grid's ``qa:`` key (as JSON) of a candidate: ``settings``
    (the base, with the searched lane settings already set) with its tiered knobs placed, and
    the grid's ``qa:`` with its answer prompt."""
    out = {k: v for k, v in settings.items() if not k.startswith(TIERED) and k != ANSWER_PROMPT}
    knobs = {k.removeprefix(TIERED): v for k, v in params.items() if k.startswith(TIERED)}
    if knobs:
        out["tiered"] = {**dict(settings.get("tiered") or {}), **knobs}
    qa = None if grid.qa is None else grid.qa.model_dump(mode="json", exclude_none=True)
    if qa is not None and ANSWER_PROMPT in params:
        label = str(params[ANSWER_PROMPT])
        beside = grid.base_dir / label
        if beside.is_file():  # a prompt file: loaded by the QA step, named after its stem
            qa["answer_prompts"] = [*qa.get("answer_prompts", []), str(beside.resolve())]
            label = Path(label).stem
        qa["answer_prompt"] = label
    return out, qa
