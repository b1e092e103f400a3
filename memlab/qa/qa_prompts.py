"""Prompts of memory QA: the agent's answer prompt and the judges' grading prompts.

Both are prompt templates like the update prompts (:mod:`memlab.core.prompts`): text files,
each placeholder exactly once, substituted in one pass, identified by the hash of their text,
loaded from ``.txt``/``.yaml``/``.json`` files into a registry of their kind.

- :class:`AnswerPrompt`: ``{memory}`` (the memory as the agent sees it, e.g. through
  :func:`~memlab.core.pipeline.injection.format_memory_for_injection`) and ``{question}``. Built in:
  ``default`` (a short answer, the newer of two values, "I don't know" when the memory does
  not answer).
- :class:`JudgePrompt`: ``{question}``, ``{gold_answer}`` and ``{answer}``; the judge replies
  ``{"label": "CORRECT"}`` or ``{"label": "WRONG"}``. Built in: ``lenient`` (in the style of
  mem0's LoCoMo judge: the same topic is enough) and ``strict`` (the same fact or value).

Each prompt is sent as a single user message (:meth:`AnswerPrompt.messages`,
:meth:`JudgePrompt.messages`), so a rendered prompt can be read back with
:meth:`~memlab.core.prompt_template.PromptTemplate.parse` (the simulated judge does).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from memlab.core.prompt_template import PromptTemplate
from memlab.core.prompts import TemplateRegistry, builtin_templates

__all__ = [
    "ABSTAIN_REFERENCE",
    "ANSWER_PLACEHOLDERS",
    "ANSWER_PROMPTS",
    "BUILTIN_ANSWER_PROMPTS",
    "BUILTIN_JUDGE_PROMPTS",
    "JUDGE_PLACEHOLDERS",
    "JUDGE_PROMPTS",
    "AnswerPrompt",
    "JudgePrompt",
    "answer_prompts",
    "judge_prompts",
]

ANSWER_PLACEHOLDERS: tuple[str, ...] = ("memory", "question")
JUDGE_PLACEHOLDERS: tuple[str, ...] = ("question", "gold_answer", "answer")

ABSTAIN_REFERENCE = "Not known: the conversations never say."
"""The reference answer a judge sees for a question whose right response is to abstain."""

BUILTIN_ANSWER_PROMPTS: dict[str, tuple[str, str]] = {
    "default": (
        "prompts/answer/default.txt",
        "A short answer from memory; the newer of two values; I don't know when memory is silent.",
    ),
}
BUILTIN_JUDGE_PROMPTS: dict[str, tuple[str, str]] = {
    "lenient": (
        "prompts/judge/lenient.txt",
        "Correct when about the same thing as the reference (in the style of mem0's judge).",
    ),
    "strict": (
        "prompts/judge/strict.txt",
        "Correct only when it states the same fact or value as the reference.",
    ),
}


@dataclass(frozen=True)
class AnswerPrompt(PromptTemplate):
    """The agent's prompt: one ``{memory}`` and one ``{question}``."""

    placeholders: ClassVar[tuple[str, ...]] = ANSWER_PLACEHOLDERS

    def render(self, memory: str, question: str) -> str:
        """The prompt text for ``question`` with ``memory`` (already rendered as text)."""
        return self.fill({"memory": memory, "question": question})

    def messages(self, memory: str, question: str) -> list[dict[str, str]]:
        """The chat messages to send: the rendered prompt as one user message."""
        return [{"role": "user", "content": self.render(memory, question)}]


@dataclass(frozen=True)
class JudgePrompt(PromptTemplate):
    """A judge's prompt: one ``{question}``, one ``{gold_answer}`` and one ``{answer}``."""

    placeholders: ClassVar[tuple[str, ...]] = JUDGE_PLACEHOLDERS

    def render(self, question: str, gold_answer: str, answer: str) -> str:
        """The prompt text grading ``answer`` against ``gold_answer``."""
        return self.fill({"question": question, "gold_answer": gold_answer, "answer": answer})

    def messages(self, question: str, gold_answer: str, answer: str) -> list[dict[str, str]]:
        """The chat messages to send: the rendered prompt as one user message."""
        return [{"role": "user", "content": self.render(question, gold_answer, answer)}]


ANSWER_PROMPTS = builtin_templates("answer_prompt", AnswerPrompt, BUILTIN_ANSWER_PROMPTS)
"""Answer prompts every registry of them starts with (built-ins, then plugins')."""
JUDGE_PROMPTS = builtin_templates("judge_prompt", JudgePrompt, BUILTIN_JUDGE_PROMPTS)
"""QA judge prompts every registry of them starts with (built-ins, then plugins')."""


def answer_prompts(*, builtins: bool = True) -> TemplateRegistry[AnswerPrompt]:
    """A new registry of answer prompts (with the registered ones unless ``builtins=False``)."""
    return TemplateRegistry(AnswerPrompt, ANSWER_PROMPTS if builtins else None)


def judge_prompts(*, builtins: bool = True) -> TemplateRegistry[JudgePrompt]:
    """A new registry of judge prompts (with the registered ones unless ``builtins=False``)."""
    return TemplateRegistry(JudgePrompt, JUDGE_PROMPTS if builtins else None)
