"""The ``qa:`` key of a grid: who answers the dataset's questions, and who grades the answers.

Example (in a grid file; every lane's memory is asked the dataset's questions, the answers
graded by two judge prompts)::

    qa:
      answer_backend: "local:smollm2"      # the agent: the same for every lane
      answer_prompt: default               # or a prompt file's name (answer_prompts: [...])
      judges: [lenient, strict]            # every lane scored under every judge
      judge_backend: "openai:gpt-4o-mini"  # default: the answer backend
      conditions: [memory, none, full_context, gold_memory]

``memlab qa RUN`` takes the same settings (from the run's grid, or from its options).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from memlab.backends.registry import is_simulated
from memlab.core.pipeline.llm import GenerationParams
from memlab.core.prompt_template import PromptError
from memlab.errors import MemlabError
from memlab.qa.answering import AnswerSettings
from memlab.qa.conditions import (
    CONDITIONS,
    MEMORY_CONDITION,
    UnknownConditionError,
    qa_condition,
)
from memlab.qa.qa_prompts import AnswerPrompt, JudgePrompt, answer_prompts, judge_prompts
from memlab.qa.reply_bounds import MAX_REPLY_TOKENS

__all__ = ["QAError", "QASpec", "ResolvedPrompts", "resolve_prompts"]


class QAError(MemlabError, ValueError):
    """A QA setting is invalid, or a run cannot be asked its questions."""


NonEmpty = Annotated[str, Field(min_length=1)]


class QASpec(BaseModel):
    """What memory QA runs with (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    answer_backend: NonEmpty
    """The backend spec of the agent that answers (``local:smollm2``, ``sim:careful``, ...)."""
    answer_prompt: NonEmpty = "default"
    """The answer prompt: a built-in name or a name from ``answer_prompts`` files."""
    judges: list[NonEmpty] = Field(default_factory=lambda: ["strict", "lenient"], min_length=1)
    """Judge prompts: every answer is graded by each (built-in: ``lenient``, ``strict``)."""
    judge_backend: NonEmpty | None = None
    """The backend spec of the judges (default: the answer backend)."""
    conditions: list[NonEmpty] = Field(default_factory=lambda: list(CONDITIONS), min_length=1)
    """What the answer prompt receives: ``memory`` (always asked), ``none``,
    ``full_context``, ``gold_memory``, or a condition a plugin registers
    (:data:`memlab.qa.conditions.QA_CONDITIONS`)."""
    answer_prompts: list[NonEmpty] = Field(default_factory=list)
    """Answer prompt files or directories (relative to the grid file)."""
    judge_prompts: list[NonEmpty] = Field(default_factory=list)
    """Judge prompt files or directories (relative to the grid file)."""
    # Numbers are strict, as in every grid setting: a YAML ``true`` is not 1.
    max_tokens: int = Field(64, ge=1, le=MAX_REPLY_TOKENS, strict=True)
    """Longest answer, in tokens."""
    judge_max_tokens: int = Field(32, ge=1, le=MAX_REPLY_TOKENS, strict=True)
    """Longest judge reply, in tokens (a verdict is one short JSON object)."""
    temperature: float = Field(0.0, ge=0.0, le=2.0, strict=True)
    seed: int = Field(0, strict=True)

    @field_validator("judges", "conditions")
    @classmethod
    def _distinct(cls, values: list[Any]) -> list[Any]:
        repeated = sorted({str(v) for v in values if values.count(v) > 1})
        if repeated:
            raise ValueError(f"named more than once: {', '.join(repeated)}")
        return values

    @field_validator("conditions")
    @classmethod
    def _memory_first(cls, values: list[str]) -> list[str]:
        # The lane's own memory is what QA measures; the others are its baselines.
        return [MEMORY_CONDITION, *(v for v in values if v != MEMORY_CONDITION)]

    def check_conditions(self) -> None:
        """Every condition is registered. Checked when QA is about to run (and when a grid is
        resolved), not when a spec is read: a run asked a plugin's condition stays readable
        where the plugin is not installed.

        Raises:
            QAError: Naming the first unknown condition and the known ones.
        """
        for name in self.conditions:
            try:
                qa_condition(name)
            except UnknownConditionError as exc:
                raise QAError(f"qa.conditions: {exc}") from None

    @property
    def grader(self) -> str:
        """The judges' backend spec."""
        return self.judge_backend or self.answer_backend

    def answer_params(self) -> GenerationParams:
        """Sampling parameters of the answers."""
        return GenerationParams(
            temperature=self.temperature, max_tokens=self.max_tokens, seed=self.seed
        )

    def answer_settings(self, prompt: AnswerPrompt) -> AnswerSettings:
        """The answerer's settings: ``prompt``, :meth:`answer_params`, and requests that name
        their owner and session when the answerer is the simulated model (which answers from
        the dataset's truth: two owners with the same text get each their own answers)."""
        return AnswerSettings(
            prompt, self.answer_params(), tell_subject=is_simulated(self.answer_backend)
        )

    def judge_params(self) -> GenerationParams:
        """Sampling parameters of the judges (always greedy: a verdict is not a sample)."""
        return GenerationParams(temperature=0.0, max_tokens=self.judge_max_tokens, seed=self.seed)


class ResolvedPrompts(BaseModel):
    """The answer prompt and the judge prompts a spec names, loaded."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    answer: AnswerPrompt
    judges: list[JudgePrompt]

    def identity(self) -> dict[str, Any]:
        """The prompts by name and content hash (what the answers depend on)."""
        return {
            "answer_prompt": {"name": self.answer.name, "sha256": self.answer.sha256},
            "judges": {j.name: j.sha256 for j in self.judges},
        }


def resolve_prompts(spec: QASpec, base_dir: Path | None = None) -> ResolvedPrompts:
    """Load the spec's prompt files (relative to ``base_dir``) and look its prompts up (and
    its conditions: :meth:`QASpec.check_conditions`), before any question is asked.

    Raises:
        QAError: A missing or invalid prompt file, or an unknown prompt or condition name (the
            message lists the known ones).
    """
    spec.check_conditions()
    answers, judges = answer_prompts(), judge_prompts()
    _load(answers, spec.answer_prompts, base_dir, "answer_prompts")
    _load(judges, spec.judge_prompts, base_dir, "judge_prompts")
    try:
        return ResolvedPrompts(
            answer=answers.get(spec.answer_prompt),
            judges=[judges.get(name) for name in spec.judges],
        )
    except PromptError as exc:
        raise QAError(f"qa: {exc}") from None


def _load(registry: Any, paths: Sequence[str], base_dir: Path | None, key: str) -> None:
    for index, entry in enumerate(paths):
        path = Path(entry)
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        if not path.exists():
            raise QAError(f"qa.{key}[{index}]: prompt file {str(path)!r} does not exist")
        try:
            registry.load_path(path)
        except PromptError as exc:  # its message starts with the file (and line and field)
            raise QAError(str(exc)) from None
