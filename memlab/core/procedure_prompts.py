"""Prompt and reply contract of the procedural memory's LLM call.

The procedural memory (:mod:`memlab.memory.procedural`) makes one kind of call besides the
fact memory it wraps: ``procedures``, sent when a session's conversation is over, which
learns the procedures the session settled (a name, ordered steps, triggers). Its template is
a prompt file like the update prompt (:mod:`memlab.core.prompts`: each placeholder once,
content-addressed; placeholder ``{conversation}``), and its reply is checked by the same
parse ladder against its own JSON contract (``schemas/procedures.schema.json``, bounded:
at most 8 procedures of at most 20 steps and 8 triggers), so its outcomes land in the same
failure taxonomy as every other call's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from memlab.core.jsondoc.contract import ReplyContract, schema_contract
from memlab.core.prompt_template import PromptTemplate
from memlab.core.prompts import builtin_templates, registered_template

__all__ = ["PROCEDURES_CALL", "PROCEDURES_CONTRACT", "ProceduresPrompt", "procedures_prompt"]

PROCEDURES_CALL = "procedures"
"""The ``call`` kind of the procedural memory's call records."""

PROCEDURES_CONTRACT: ReplyContract = schema_contract("procedures", "schemas/procedures.schema.json")
"""The reply contract of the ``procedures`` call."""


@dataclass(frozen=True)
class ProceduresPrompt(PromptTemplate):
    """The procedure-learning prompt: ``{conversation}``."""

    placeholders: ClassVar[tuple[str, ...]] = ("conversation",)

    def render(self, conversation: str) -> str:
        """The prompt learning the procedures of ``conversation``."""
        return self.fill({"conversation": conversation})


_BUILTIN = "default"
_PROCEDURES = builtin_templates(
    "procedures_prompt",
    ProceduresPrompt,
    {_BUILTIN: ("prompts/procedural/learn.txt", "Procedures a session settled (seed 004).")},
)


def procedures_prompt(name: str = _BUILTIN) -> ProceduresPrompt:
    """The registered procedure-learning template ``name`` (built-ins and plugins')."""
    return registered_template(_PROCEDURES, ProceduresPrompt, name)
