"""The pieces both QA steps share: the memory QA step (:mod:`memlab.postrun.qa_step`) and
the consolidation curve (:mod:`memlab.postrun.consolidation`).

- :class:`QAJob`: one lane's replay of one owner (one sample) and the answer tasks asked of it;
- :func:`run_owners`: the owners a run replayed, as it replayed them, and the questions
  left out (asked after a session the run did not replay);
- :func:`read_path`: a lane's injection settings as the agent's read path;
- :func:`answer_rows`: the answer rows of the jobs once their calls are answered and graded,
  each with its verdicts and its evidence's :data:`Fate` (a procedure question's, with the
  steps its reply names and its step-order accuracy).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from memlab.core.pipeline.llm import Backend
from memlab.datasets.loader import load_dataset
from memlab.datasets.models import Owner
from memlab.grids.lane import LaneConfig
from memlab.grids.owners import select_owners
from memlab.grids.qa_spec import QAError, QASpec, ResolvedPrompts
from memlab.memory.designs import memory_design
from memlab.postrun.qa_calls import QACalls, call_key
from memlab.qa.answering import (
    AnswerTask,
    CallResult,
    answer_row,
    judge_tasks,
    procedure_scores,
)
from memlab.qa.conditions import ReadPath
from memlab.runs.run import Run
from memlab.scoring.qa.injection_audit import policy_embedder, policy_injector

__all__ = ["Fate", "QAJob", "RunOwners", "answer_rows", "read_path", "run_owners"]

logger = logging.getLogger(__name__)


@dataclasses.dataclass
class QAJob:
    """One lane's replay of one owner (one sample) and the answers asked of it."""

    lane_id: str
    sample: int
    owner: Owner
    record: Mapping[str, Any]
    tasks: list[AnswerTask]


class RunOwners(NamedTuple):
    """The owners a run replayed (:func:`run_owners`) and how many of their questions were
    left out: asked after a session the run did not replay (grid ``max_sessions``)."""

    owners: list[Owner]
    left_out: int


def run_owners(run: Run, dataset: Path, *, questions: bool = True) -> RunOwners:
    """The owners the run replayed, as it replayed them (selection and session cut), each
    with the questions asked after a replayed session; the others are counted as left out
    (with ``questions``, a warning names ``max_sessions`` and the count).

    Raises:
        QAError: ``questions`` is true and none of them has a question.
    """
    chosen = set(run.owner_ids)
    everyone = load_dataset(dataset)
    full = {o.user_id: o for o in everyone}
    owners: list[Owner] = []
    left_out = 0
    for owner in select_owners(everyone, run.grid):
        if owner.user_id not in chosen:
            continue
        whole = full[owner.user_id]
        kept = [
            q for q in owner.questions if whole.session_index(q.after_session) < len(owner.sessions)
        ]
        cut = len(owner.questions) - len(kept)
        left_out += cut
        owners.append(owner.model_copy(update={"questions": kept}) if cut else owner)
    if questions and left_out:
        logger.warning(
            "%s: %d question(s) left out: asked after a session the run did not replay "
            "(max_sessions %s); sweep with a larger max_sessions to ask them",
            run.path,
            left_out,
            run.grid.max_sessions,
        )
    if questions and not any(o.questions for o in owners):
        raise QAError(
            f"{dataset}: the run's owners have no questions"
            + (f" after their first {run.grid.max_sessions} sessions" if left_out else "")
            + "; add questions to the dataset (docs/dataset-format.md, Questions)"
        )
    return RunOwners(owners, left_out)


def read_path(config: LaneConfig) -> ReadPath:
    """The lane's injection settings as the agent's read path (policies ranked by question),
    through its memory design's read path."""
    design = memory_design(config.memory)
    memory_config = config.memory_config()
    policy = config.injection_policy
    return ReadPath(
        max_tokens=config.max_injection_tokens,
        token_counting=config.token_counting,
        enabled=config.injection_enabled,
        inject=policy_injector(
            memory_config,
            policy,
            policy_embedder(policy),
            history_last=design.history_last_in(config.settings()),
            read=design.read,
        ),
    )


Fate = tuple[str | None, dict[str, str] | None]
"""An answer's fate and its evidence facts' fates (None for other conditions)."""


def answer_rows(
    jobs: Sequence[QAJob],
    calls: QACalls[list[list[Fate]]],
    backends: tuple[Backend, Backend],
    spec: QASpec,
    prompts: ResolvedPrompts,
) -> list[dict[str, Any]]:
    """The answer rows of every job, with their verdicts and their evidence's fate."""
    answerer, grader = backends
    fates = calls.alongside or [[(None, None)] * len(job.tasks) for job in jobs]
    rows: list[dict[str, Any]] = []
    for job, job_fates in zip(jobs, fates, strict=True):
        for task, (fate, detail) in zip(job.tasks, job_fates, strict=True):
            result = calls.answers[call_key(answerer, task.request)]
            verdicts: dict[str, dict[str, CallResult]] = {}
            if result.text is not None:
                judged = judge_tasks(
                    task.question, result.text, prompts.judges, spec.judge_params()
                )
                for j in judged:
                    verdicts.setdefault(j.judge, {})[j.key] = calls.verdicts[
                        call_key(grader, j.request)
                    ]
            row = answer_row(task, result, verdicts)
            row.update(fate=fate, evidence_fates=detail)
            row.update(procedure_scores(job.owner, task.question, result.text))
            rows.append({"lane_id": job.lane_id, "sample": job.sample, **row})
    return rows
