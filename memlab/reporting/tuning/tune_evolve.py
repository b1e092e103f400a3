"""Evolving the update prompt from failure records with GEPA (reflective prompt evolution).

GEPA (``pip install 'memlab[tune]'``, imported only when a grid asks for ``tune.evolve``)
keeps a pool of candidate prompts. Each step it replays a candidate on a few train owners,
shows a reflection model the failures of that replay and the prompt, and takes the rewritten
prompt into the pool when it scores better on the same owners; the pool's candidates are
scored on the validation owners. :class:`TuneAdapter` is memlab's side of GEPA's adapter
protocol:

- ``evaluate``: the candidate prompt replayed on a batch of owners as an ordinary cached lane
  (the function :func:`memlab.reporting.tuning.tune.tune` passes in: the same replay and objective
  as its other candidates); one score per owner, higher is better;
- ``make_reflective_dataset``: per owner, the failure records of that replay
  (:mod:`memlab.reporting.tuning.tune_feedback`) as the feedback text.

The reflection model is any memlab backend (:func:`reflector`); a ``sim:PROFILE`` spec is the
simulated reflector (:class:`memlab.simulation.reflector.SimulatedReflector`), a test
instrument. Its calls go through the search's response cache and count in the search's cost
and budgets (:class:`memlab.reporting.tuning.tune_reflect.Reflection`). GEPA samples with its
own random generator seeded with the search's seed, so the same replies give the same
evolution. The evolved prompts become tune candidates, proven held out like listed ones.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memlab.backends.registry import is_simulated, resolve_backend
from memlab.core.pipeline.llm import Backend
from memlab.core.prompt_template import PromptVariant
from memlab.core.prompts import resolve_prompt, template_diff
from memlab.errors import MemlabError
from memlab.matching.base import FactMatcher
from memlab.postrun.rescoring import replays
from memlab.reporting.tuning.tune_feedback import OwnerFeedback, owner_feedback
from memlab.reporting.tuning.tune_reflect import ReflectionRefused
from memlab.reporting.tuning.tune_spec import Evolve
from memlab.runs.run import Run
from memlab.simulation.profile import load_profile
from memlab.simulation.reflector import SimulatedReflector

__all__ = [
    "COMPONENT",
    "Evaluate",
    "EvolveError",
    "EvolvedPrompt",
    "TuneAdapter",
    "as_template",
    "evolution_lines",
    "evolution_record",
    "evolve",
    "prompt_label",
    "reflector",
    "write_prompts",
]

logger = logging.getLogger(__name__)

COMPONENT = "update_prompt"
"""The one text GEPA evolves: the update prompt's template."""

Evaluate = Callable[[PromptVariant, Sequence[str]], tuple[Run, dict[str, float]]]
"""Replay a prompt on owners: the run and each owner's score (higher is better)."""


@dataclass(frozen=True)
class EvolvedPrompt:
    """A prompt the evolution kept: its label, variant, parent's label and validation score."""

    label: str
    variant: PromptVariant
    parent: str | None
    validation: float


class EvolveError(MemlabError, ValueError):
    """Evolution cannot start: the library is missing or the reflector cannot be built."""


def prompt_label(variant_or_text: PromptVariant | str) -> str:
    """The label of an evolved prompt: ``evolved-`` and its template's short hash."""
    if isinstance(variant_or_text, PromptVariant):
        return f"evolved-{variant_or_text.sha256[:8]}"
    return prompt_label(resolve_prompt(variant_or_text, name="evolved"))


class TuneAdapter:
    """memlab's side of GEPA's adapter protocol (see the module docstring).

    Attributes:
        feedback: The feedback of every owner of every evaluation with traces, in order.
    """

    propose_new_texts = None  # GEPA's own proposer asks the reflection model

    def __init__(
        self, evaluate: Evaluate, matcher: FactMatcher, metric: str, newline: bool = True
    ) -> None:
        self._evaluate = evaluate
        self._newline = newline
        self._matcher = matcher
        self._metric = metric
        self.feedback: list[OwnerFeedback] = []

    def evaluate(
        self, batch: list[str], candidate: dict[str, str], capture_traces: bool = False
    ) -> Any:
        from gepa.core.adapter import EvaluationBatch

        try:
            text = as_template(candidate[COMPONENT], self._newline)
            variant = resolve_prompt(text, name=prompt_label(text))
        except MemlabError as exc:  # a rewrite that is no template: the worst score
            problem = f"not a valid update prompt: {exc}"
            return EvaluationBatch(
                outputs=[problem] * len(batch),
                scores=[-1.0] * len(batch),
                trajectories=[OwnerFeedback(o, problem) for o in batch] if capture_traces else None,
            )
        run, scores = self._evaluate(variant, batch)
        traces = None
        if capture_traces:
            found = {r.owner.user_id: r for r in replays(run)}
            traces = [owner_feedback(run, found[o], self._matcher) for o in batch]
            self.feedback.extend(traces)
        return EvaluationBatch(
            outputs=[f"{self._metric} {scores[o]:.3f}" for o in batch],
            scores=[scores[o] for o in batch],
            trajectories=traces,
        )

    def make_reflective_dataset(
        self, candidate: dict[str, str], eval_batch: Any, components_to_update: list[str]
    ) -> Mapping[str, Sequence[Mapping[str, Any]]]:
        del candidate
        rows = [
            {
                "Inputs": {"owner": trace.user_id},
                "Generated Outputs": output,
                "Feedback": trace.text(),
            }
            for trace, output in zip(eval_batch.trajectories or [], eval_batch.outputs, strict=True)
        ]
        return {name: rows for name in components_to_update}


def as_template(text: str, newline: bool) -> str:
    """A rewritten prompt's text, ending in a line break when the start's does (GEPA strips
    the reply it extracts; the diff should show the edit, not a lost line break)."""
    return text.rstrip("\n") + "\n" if newline else text


def reflector(spec: str) -> Backend:
    """The reflection backend of ``spec``: the registry's backend, or, for a ``sim:PROFILE``
    spec, the simulated reflector of that profile (a test instrument).

    Raises:
        EvolveError: The backend cannot be built.
    """
    try:
        if is_simulated(spec):
            return SimulatedReflector(load_profile(spec.split(":", 1)[1]))
        return resolve_backend(spec)
    except MemlabError as exc:
        raise EvolveError(f"tune.evolve.reflect_backend {spec!r}: {exc}") from None


class _Log:
    """GEPA's progress lines go to this module's logger (GEPA prints them by default)."""

    def log(self, message: str) -> None:
        logger.info("%s", message)


def _gepa(path: Path) -> Any:
    try:
        import gepa
    except ImportError:
        raise EvolveError(
            f"{path}: prompt evolution needs GEPA: pip install 'memlab[tune]'"
        ) from None
    return gepa


def evolve(
    start: PromptVariant,
    train: Sequence[str],
    validation: Sequence[str],
    adapter: TuneAdapter,
    options: Evolve,
    where: Path,
    *,
    reflect: Callable[[str], str],
    seed: int = 0,
    start_label: str | None = None,
) -> list[EvolvedPrompt]:
    """Evolve ``start`` on the ``train`` owners, scored on ``validation``; the prompts kept,
    the start excluded. ``reflect`` answers GEPA's reflection requests (a
    :class:`~memlab.reporting.tuning.tune_reflect.Reflection`); GEPA's random generator is
    seeded with ``seed``. GEPA's state lies in ``where`` (a rerun resumes it).

    Raises:
        EvolveError: GEPA is not installed.
        CostLimitError, TimeLimitError, CallLimitError: A budget refused a reflection call
            (rerun to resume).
    """
    gepa = _gepa(where)
    where.mkdir(parents=True, exist_ok=True)
    try:
        result = gepa.optimize(
            seed_candidate={COMPONENT: start.template},
            trainset=list(train),
            valset=list(validation or train),
            adapter=adapter,
            reflection_lm=reflect,
            reflection_minibatch_size=min(options.minibatch, len(train)),
            max_metric_calls=options.max_metric_calls,
            skip_perfect_score=False,
            run_dir=str(where),
            seed=seed,
            raise_on_exception=True,
            logger=_Log(),
        )
    except ReflectionRefused as refused:  # GEPA's state stays at the step's start
        raise refused.error from None
    labels = [start_label or start.name]
    newline = start.template.endswith("\n")
    texts = [as_template(c[COMPONENT], newline) for c in result.candidates]
    labels += [prompt_label(text) for text in texts[1:]]
    out = []
    for index in range(1, len(texts)):
        parents = [p for p in result.parents[index] if p is not None]
        out.append(
            EvolvedPrompt(
                labels[index],
                resolve_prompt(texts[index], name=labels[index]),
                labels[parents[0]] if parents else None,
                float(result.val_aggregate_scores[index]),
            )
        )
    logger.info("evolution kept %d prompt(s) in %d owner replays", len(out),
                result.total_metric_calls or 0)  # fmt: skip
    return out


def evolution_record(
    kept: Sequence[EvolvedPrompt], prompts: Mapping[str, PromptVariant], spec: str
) -> dict[str, Any]:
    """What ``tune.json`` keeps of an evolution: the reflector, and per candidate prompt its
    template's hash, its file (evolved ones, in ``evolve/prompts/``), its parent and its
    validation score during evolution."""
    parents = {p.label: p for p in kept}
    return {
        "reflector": spec,
        "simulated_reflector": is_simulated(spec),
        "prompts": {
            label: {
                "sha256": variant.sha256,
                "file": f"evolve/prompts/{label}.txt" if label in parents else None,
                "parent": parents[label].parent if label in parents else None,
                "evolved": label in parents,
                "validation": parents[label].validation if label in parents else None,
            }
            for label, variant in prompts.items()
        },
    }


def evolution_lines(
    kept: Sequence[EvolvedPrompt], prompts: Mapping[str, PromptVariant], spec: str | None
) -> list[str]:
    """The evolution as text: the reflector, then each kept prompt with its parent and its
    diff from it."""
    if spec is None:
        return []
    mark = " [simulated reflector: a test instrument]" if is_simulated(spec) else ""
    out = ["", f"evolved prompts (reflector {spec}{mark}): {len(kept)} kept"]
    for prompt in kept:
        out.append(f"  {prompt.label} <- {prompt.parent} "
                   f"(validation score during evolution {prompt.validation:.3f})")  # fmt: skip
        parent = prompts.get(prompt.parent or "")
        if parent is not None:
            out += [f"    {line}" for line in template_diff(parent, prompt.variant).splitlines()]
    return out


def write_prompts(kept: Sequence[EvolvedPrompt], folder: Path) -> None:
    """Each kept prompt's template as ``folder/LABEL.txt``."""
    folder.mkdir(parents=True, exist_ok=True)
    for prompt in kept:
        (folder / f"{prompt.label}.txt").write_text(prompt.variant.template, encoding="utf-8")
