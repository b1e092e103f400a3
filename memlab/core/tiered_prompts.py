"""Prompts and reply contracts of the tiered memory's LLM calls.

The tiered memory (:mod:`memlab.memory.tiers.tiered`) makes three kinds of call besides none of
DeerFlow's update:

- ``summary``: the messages leaving the working memory are folded into the session summary,
  which comes back with its key points (the candidate long-term facts). Template
  placeholders ``{previous_summary}`` and ``{conversation}``.
- ``importance``: the candidate facts, numbered, are rated 0..1 and given a category; only
  those rated above the lane's threshold become long-term memories. Placeholder
  ``{candidates}``.
- ``compression``: old long-term memories are merged into one summary. Placeholder
  ``{memories}``.

Each is a prompt template like the update prompt (:mod:`memlab.core.prompts`: text files,
each placeholder once, content-addressed) sent as one user message, and each reply is checked
by the same parse ladder against its own JSON contract (``schemas/tiered_*.schema.json``),
so every call's outcome lands in the same failure taxonomy.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

from memlab.core.jsondoc.contract import ReplyContract, schema_contract
from memlab.core.prompt_template import PromptTemplate
from memlab.core.prompts import builtin_templates, registered_template

__all__ = [
    "CALL_CONTRACTS",
    "TIERED_CALLS",
    "TIERED_PROMPTS",
    "CompressionPrompt",
    "ImportancePrompt",
    "SummaryPrompt",
    "TieredCall",
    "compression_prompt",
    "importance_prompt",
    "number_candidates",
    "summary_prompt",
    "tiered_prompt",
]

TieredCall = Literal["summary", "importance", "compression"]
TIERED_CALLS: tuple[TieredCall, ...] = ("summary", "importance", "compression")
"""The tiered memory's kinds of LLM call (the ``call`` column of its call records)."""

CALL_CONTRACTS: Mapping[TieredCall, ReplyContract] = {
    "summary": schema_contract("tiered_summary", "schemas/tiered_summary.schema.json"),
    "importance": schema_contract("tiered_importance", "schemas/tiered_importance.schema.json"),
    "compression": schema_contract("tiered_compression", "schemas/tiered_compression.schema.json"),
}
"""The reply contract of each kind of call."""


@dataclass(frozen=True)
class SummaryPrompt(PromptTemplate):
    """The session-summary prompt: ``{previous_summary}`` and ``{conversation}``."""

    placeholders: ClassVar[tuple[str, ...]] = ("previous_summary", "conversation")

    def render(self, previous_summary: str, conversation: str) -> str:
        """The prompt folding ``conversation`` into ``previous_summary``."""
        return self.fill({"previous_summary": previous_summary, "conversation": conversation})


@dataclass(frozen=True)
class ImportancePrompt(PromptTemplate):
    """The importance prompt: ``{candidates}`` (numbered, one per line)."""

    placeholders: ClassVar[tuple[str, ...]] = ("candidates",)

    def render(self, candidates: Sequence[str]) -> str:
        """The prompt rating ``candidates`` (numbered from 1)."""
        return self.fill({"candidates": number_candidates(candidates)})


@dataclass(frozen=True)
class CompressionPrompt(PromptTemplate):
    """The compression prompt: ``{memories}`` (one per line)."""

    placeholders: ClassVar[tuple[str, ...]] = ("memories",)

    def render(self, memories: Sequence[str]) -> str:
        """The prompt merging ``memories`` into one summary."""
        return self.fill({"memories": "\n".join(f"- {m}" for m in memories)})


def number_candidates(candidates: Sequence[str]) -> str:
    """``1. first`` ... one candidate per line (the importance prompt's numbering)."""
    return "\n".join(f"{i}. {text}" for i, text in enumerate(candidates, start=1))


_BUILTIN = "default"
_SUMMARY = builtin_templates(
    "tiered_summary_prompt",
    SummaryPrompt,
    {_BUILTIN: ("prompts/tiered/summary.txt", "Session summary and key points (seed 004).")},
)
_IMPORTANCE = builtin_templates(
    "tiered_importance_prompt",
    ImportancePrompt,
    {_BUILTIN: ("prompts/tiered/importance.txt", "Importance 0..1 of candidate facts.")},
)
_COMPRESSION = builtin_templates(
    "tiered_compression_prompt",
    CompressionPrompt,
    {_BUILTIN: ("prompts/tiered/compression.txt", "Old memories merged into one summary.")},
)

TIERED_PROMPTS: Mapping[TieredCall, type[PromptTemplate]] = {
    "summary": SummaryPrompt,
    "importance": ImportancePrompt,
    "compression": CompressionPrompt,
}
"""The template class of each kind of call."""


def summary_prompt(name: str = _BUILTIN) -> SummaryPrompt:
    """The registered session-summary template ``name`` (built-ins and plugins')."""
    return registered_template(_SUMMARY, SummaryPrompt, name)


def importance_prompt(name: str = _BUILTIN) -> ImportancePrompt:
    """The registered importance template ``name`` (built-ins and plugins')."""
    return registered_template(_IMPORTANCE, ImportancePrompt, name)


def compression_prompt(name: str = _BUILTIN) -> CompressionPrompt:
    """The registered compression template ``name`` (built-ins and plugins')."""
    return registered_template(_COMPRESSION, CompressionPrompt, name)


def tiered_prompt(call: TieredCall, name: str = _BUILTIN) -> PromptTemplate:
    """The registered template ``name`` of kind ``call``.

    Raises:
        UnknownPromptError: No template of that kind has the name.
    """
    getters: dict[TieredCall, Callable[[str], PromptTemplate]] = {
        "summary": summary_prompt,
        "importance": importance_prompt,
        "compression": compression_prompt,
    }
    return getters[call](name)
