"""The simulated model's answers to the tiered memory's calls, with their provenance.

Recognised by the built-in tiered templates (:mod:`memlab.core.tiered_prompts`); each answer
follows the profile's ``tiered`` section
(:class:`~memlab.simulation.profile_model.SimTieredProfile`):

- ``summary``: when the folded conversation holds its session's last message, each gold fact
  of the session becomes a key point with ``summary_keep_rate``, in its verbatim wording
  (recorded as coming from that fact); otherwise there are no key points. The summary is the
  key points joined (never conversation text).
- ``importance``: a candidate the model knows as a gold fact's wording is rated from
  ``importance`` and takes the fact's category; any other from ``other_importance``.
- ``compression``: each memory is kept with ``compress_keep_rate``; the summary joins the
  kept ones and is recorded as coming from every gold fact they came from.

Every reply is broken with the profile's failure rates, as update replies are, in the way
each failure category describes. Every draw is a hash of the seeds and what it is about.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from memlab.core.jsondoc.parsing import FailureCategory
from memlab.core.tiered_prompts import compression_prompt, importance_prompt, summary_prompt
from memlab.simulation.profile_model import SimProfile, uniform
from memlab.simulation.replies import Breakage, broken_reply

__all__ = ["SimTiered", "TieredDecision"]

_NUMBERED = re.compile(r"^(\d+)\. (.*)$")


@dataclass(frozen=True)
class TieredDecision:
    """What the simulated model decided for one tiered call.

    Attributes:
        call: ``summary``, ``importance`` or ``compression``.
        reply: The contract object behind the reply (before any failure is applied).
        failure: The injected reply failure, or None.
        sources: For each key point, rated candidate or kept memory: the gold fact ids it
            states (empty: none known).
    """

    call: str
    reply: dict[str, Any]
    failure: FailureCategory | None
    sources: tuple[frozenset[str], ...] = ()


class _Session:
    """What the simulator needs of one session: its owner, gold facts, paragraphs."""

    def __init__(self, user_id: str, index: int, facts: Sequence[Any], blocks: Sequence[str]):
        self.user_id = user_id
        self.index = index
        self.facts = list(facts)
        self.blocks = tuple(blocks)


class SimTiered:
    """Answers the tiered calls (see the module docstring).

    Args:
        profile: The simulated model's profile.
        sessions: ``(user_id, session index, gold facts, paragraphs)`` of every session.
        seed: The backend's seed (with the profile's content when its draws are
            independent).
        record: Records that a wording came from a gold fact (the backend's provenance).
        origins: The gold facts (and ``invented``/``leak``) a wording came from.
    """

    def __init__(
        self,
        profile: SimProfile,
        sessions: Iterable[tuple[str, int, Sequence[Any], Sequence[str]]],
        seed: int | str,
        record: Callable[[str, str], None],
        origins: Callable[[str], frozenset[str]],
    ) -> None:
        self.profile = profile
        self.seed = seed
        self._record = record
        self._origins = origins
        self._last: dict[str, list[_Session]] = {}
        self._category: dict[str, str] = {}
        for user_id, index, facts, blocks in sessions:
            session = _Session(user_id, index, facts, blocks)
            if session.blocks:
                self._last.setdefault(session.blocks[-1], []).append(session)
            for fact in facts:
                self._category[fact.id] = str(fact.category)
        self._templates = (summary_prompt(), importance_prompt(), compression_prompt())

    def decide(self, prompt: str, request_seed: int | None) -> TieredDecision | None:
        """The decision for a tiered prompt; None for any other prompt."""
        summary, importance, compression = self._templates
        values = summary.parse(prompt)
        if values is not None:
            return self._summary(values["conversation"], request_seed)
        values = importance.parse(prompt)
        if values is not None:
            return self._importance(values["candidates"], request_seed)
        values = compression.parse(prompt)
        if values is not None:
            return self._compression(values["memories"], request_seed)
        return None

    def render(self, decision: TieredDecision) -> tuple[str, str]:
        """The reply text of a decision, broken as its failure says, and the finish reason
        (the wrong shape lacks the contract's first key, the violation makes it a number)."""
        reply = decision.reply
        first = next(iter(reply))
        breakage = Breakage(
            prose=_PROSE,
            think=_THINK,
            no_json=_NO_JSON,
            wrong_shape={k: v for k, v in reply.items() if k != first},
            violation={**reply, first: 42},
        )
        return broken_reply(reply, decision.failure, breakage)

    # ------------------------------------------------------------------ calls

    def _failure(self, call: str, key: str, request_seed: int | None) -> FailureCategory | None:
        return self.profile.pick_failure(uniform(self.seed, request_seed, call, key, "failure"))

    def _summary(self, conversation: str, request_seed: int | None) -> TieredDecision:
        rates = self.profile.tiered
        session = self._session_ending_in(conversation)
        points: list[str] = []
        sources: list[frozenset[str]] = []
        if session is not None:
            for fact in session.facts:
                draw = uniform(self.seed, request_seed, session.user_id, fact.id, "summary-keep")
                if draw < rates.summary_keep_rate:
                    self._record(fact.content, fact.id)
                    points.append(fact.content)
                    sources.append(frozenset({fact.id}))
        where = f"Session {session.index + 1}" if session is not None else "This session"
        text = "; ".join(points) if points else f"{where}: nothing durable."
        reply = {"summary": text, "keyPoints": points}
        failure = self._failure("summary", conversation, request_seed)
        return TieredDecision("summary", reply, failure, tuple(sources))

    def _session_ending_in(self, conversation: str) -> _Session | None:
        """The session whose last paragraphs end the folded conversation (the one matching
        most of them), or None when none does or two match alike."""
        candidates = [
            session
            for block, sessions in self._last.items()
            if conversation.endswith(block)
            for session in sessions
        ]
        scored = sorted(
            ((_trailing(session.blocks, conversation), session) for session in candidates),
            key=lambda pair: -pair[0],
        )
        if not scored or (len(scored) > 1 and scored[0][0] == scored[1][0]):
            return None
        return scored[0][1]

    def _importance(self, numbered: str, request_seed: int | None) -> TieredDecision:
        ratings: list[dict[str, Any]] = []
        sources: list[frozenset[str]] = []
        for line in numbered.splitlines():
            match = _NUMBERED.match(line)
            if match is None:
                continue
            index, text = int(match.group(1)), match.group(2)
            gold = frozenset(o for o in self._origins(text) if o in self._category)
            key = min(gold) if gold else text
            u = uniform(self.seed, request_seed, key, "importance")
            rating = self.profile.tiered.pick_rating(u, gold=bool(gold))
            category = self._category[min(gold)] if gold else "context"
            ratings.append({"index": index, "importance": rating, "category": category})
            sources.append(gold)
        failure = self._failure("importance", numbered, request_seed)
        return TieredDecision("importance", {"ratings": ratings}, failure, tuple(sources))

    def _compression(self, listed: str, request_seed: int | None) -> TieredDecision:
        kept: list[str] = []
        sources: set[str] = set()
        for line in listed.splitlines():
            text = line.removeprefix("- ")
            u = uniform(self.seed, request_seed, text, "compress-keep")
            if text and u < self.profile.tiered.compress_keep_rate:
                kept.append(text)
                sources.update(o for o in self._origins(text) if o in self._category)
        summary = "; ".join(kept) if kept else "Older memories: nothing kept."
        for origin in sorted(sources):
            self._record(summary, origin)
        failure = self._failure("compression", listed, request_seed)
        reply = {"summary": summary}
        return TieredDecision("compression", reply, failure, (frozenset(sources),))


def _trailing(blocks: Sequence[str], conversation: str) -> int:
    """How many of ``blocks``' last paragraphs end ``conversation``."""
    count = 0
    while count < len(blocks) and conversation.endswith("\n\n".join(blocks[-count - 1 :])):
        count += 1
    return count


_PROSE = "Here is the result:\n{body}\nI kept only what matters."
_THINK = "<think>Let me weigh what matters here.</think>\n{body}"
_NO_JSON = "I reviewed the messages and kept what matters."
