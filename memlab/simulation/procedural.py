"""The simulated model's answers to the procedural memory's ``procedures`` call, with their
provenance.

Recognised by the built-in template (:mod:`memlab.core.procedure_prompts`). The folded
conversation is matched to the session whose whole conversation it is; each procedure the
session is labelled with is learned with the profile's ``procedural.learn_rate``, keeping
each step with ``step_keep_rate`` (verbatim, in order) and the labelled triggers
(:class:`~memlab.simulation.profile_model.SimProceduralProfile`). The decision records, for every
procedure in the reply, the gold procedure it came from and the indices of the steps kept:
the provenance tests recompute procedure recall and step-order accuracy from. Replies are
broken with the profile's failure rates, as every other reply. Every draw is a hash of the
seeds and what it is about.

The answerer's side (:func:`answer_procedure`, which :class:`~memlab.simulation.qa.SimQA`
calls for a question of kind ``procedure``): a gold step of the procedure asked for is *shown*
when its labelled text is in the answer prompt verbatim (as the learner above keeps it),
outside the question; each shown step is named with ``answer_step_rate``, in the order the
prompt shows them, one per line (``1) step``); a reply that names none is the abstention.
:class:`ProcedureAnswer` is the provenance: step-order accuracy recomputes from it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from memlab.core.jsondoc.parsing import FailureCategory
from memlab.core.procedure_prompts import procedures_prompt
from memlab.simulation.profile_model import SimProfile, uniform
from memlab.simulation.replies import Breakage, broken_reply

__all__ = [
    "LearnedFrom",
    "ProcedureAnswer",
    "ProceduresDecision",
    "SimProcedural",
    "answer_procedure",
]


@dataclass(frozen=True)
class LearnedFrom:
    """Where one procedure of a reply came from.

    Attributes:
        user_id: The owner.
        procedure: The gold procedure's id.
        kept: Indices of the gold steps the reply keeps, in order.
    """

    user_id: str
    procedure: str
    kept: tuple[int, ...]


@dataclass(frozen=True)
class ProceduresDecision:
    """What the simulated model decided for one ``procedures`` call.

    Attributes:
        reply: The contract object behind the reply (before any failure is applied).
        failure: The injected reply failure, or None.
        sources: One per procedure of the reply, in order.
        session: ``(user_id, session index)`` of the matched session (None: none matched).
    """

    reply: dict[str, Any]
    failure: FailureCategory | None
    sources: tuple[LearnedFrom, ...] = ()
    session: tuple[str, int] | None = None


class SimProcedural:
    """Answers the ``procedures`` call (see the module docstring).

    Args:
        profile: The simulated model's profile.
        sessions: ``(user_id, session index, labelled procedures, paragraphs)`` of every
            session.
        seed: The backend's seed.
    """

    def __init__(
        self,
        profile: SimProfile,
        sessions: Iterable[tuple[str, int, Sequence[Any], Sequence[str]]],
        seed: int,
    ) -> None:
        self.profile = profile
        self.seed = seed
        self._by_text: dict[str, list[tuple[str, int, Sequence[Any]]]] = {}
        for user_id, index, procedures, blocks in sessions:
            text = "\n\n".join(blocks)
            self._by_text.setdefault(text, []).append((user_id, index, procedures))
        self._template = procedures_prompt()

    def decide(self, prompt: str, request_seed: int | None) -> ProceduresDecision | None:
        """The decision for a ``procedures`` prompt; None for any other prompt."""
        values = self._template.parse(prompt)
        if values is None:
            return None
        conversation = values["conversation"]
        matches = self._by_text.get(conversation, [])
        failure = self.profile.pick_failure(
            uniform(self.seed, request_seed, "procedures", conversation, "failure")
        )
        if len(matches) != 1:  # no session, or two alike: nothing the model can tell apart
            return ProceduresDecision({"procedures": []}, failure)
        user_id, index, procedures = matches[0]
        rates = self.profile.procedural
        reply: list[dict[str, Any]] = []
        sources: list[LearnedFrom] = []
        for gold in procedures:
            if uniform(self.seed, request_seed, user_id, gold.id, "learn") >= rates.learn_rate:
                continue
            kept = tuple(
                i
                for i in range(len(gold.steps))
                if uniform(self.seed, request_seed, user_id, gold.id, i, "step")
                < rates.step_keep_rate
            )
            if not kept:
                continue
            steps = [gold.steps[i] for i in kept]
            reply.append({"name": gold.name, "steps": steps, "triggers": list(gold.triggers)})
            sources.append(LearnedFrom(user_id, gold.id, kept))
        return ProceduresDecision({"procedures": reply}, failure, tuple(sources), (user_id, index))

    def render(self, decision: ProceduresDecision) -> tuple[str, str]:
        """The reply text of a decision, broken as its failure says, and the finish reason."""
        reply = decision.reply
        breakage = Breakage(
            prose="Here are the procedures:\n{body}\nThat is all.",
            think="<think>Which steps did they settle?</think>\n{body}",
            no_json="The conversation settles a few steps.",
            wrong_shape={"tasks": reply["procedures"]},
            violation={"procedures": 42},
        )
        return broken_reply(reply, decision.failure, breakage)


@dataclass(frozen=True)
class ProcedureAnswer:
    """What the simulated answerer said to a ``procedure`` question, and why.

    Attributes:
        user_id, question_id: The question answered.
        procedure: The id of the gold procedure it asks for.
        shown: Indices of the gold steps the prompt shows, in the order it shows them.
        named: The shown steps the reply names, in that order.
        text: The reply: ``1) step`` per named step, one per line, or the abstention.
    """

    user_id: str
    question_id: str
    procedure: str
    shown: tuple[int, ...]
    named: tuple[int, ...]
    text: str


def answer_procedure(
    where: tuple[str, str, str],
    steps: Sequence[str],
    prompt: str,
    rate: float,
    draw: Callable[[int], float],
    abstention: str,
) -> ProcedureAnswer:
    """The answer to a procedure question (see the module docstring).

    Args:
        where: ``(user_id, question id, procedure id)``.
        steps: The gold procedure's steps.
        prompt: The answer prompt without the question's text.
        rate: ``answer_step_rate``.
        draw: A uniform draw in [0, 1) per step index.
        abstention: The reply that names nothing.
    """
    found = sorted((prompt.find(step), i) for i, step in enumerate(steps) if step in prompt)
    shown = tuple(i for _, i in found)
    named = tuple(i for i in shown if draw(i) < rate)
    lines = [f"{k}) {steps[i]}" for k, i in enumerate(named, 1)]
    text = "\n".join(lines) if lines else abstention
    user_id, question_id, procedure = where
    return ProcedureAnswer(user_id, question_id, procedure, shown, named, text)
