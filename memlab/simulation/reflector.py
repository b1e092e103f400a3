"""A simulated reflection model: a deterministic stand-in that rewrites an update prompt from
the failure feedback it is shown (a test instrument, labelled as simulated wherever it is used).

It answers a reflection request (the current prompt inside the first pair of triple
backticks, the feedback after it) with a new prompt inside triple backticks. It reads the
feedback for three kinds of failure, by the phrases memory tuning's feedback uses: missed
facts (``missed gold fact``), stored facts that state no gold fact (``stored wrongly``) and
replies that failed the JSON contract (``failed reply``). For each prompt effect its profile
declares (``when_contains``) whose rates address a named failure (a higher ``propose_rate``
for missed facts, a lower ``invent_rate`` for wrongly stored ones, lower ``failures`` for
failed replies) and which the prompt lacks, it adds the effect's phrase as a line at the top
of the prompt. With no such effect it adds a plain instruction naming the failure. So what it
finds is what the profile declares, never a guess of its own.

It is also a backend (``complete``), so a search sends it requests as it sends any reflection
model's, through the response cache; its token counts are the simulated model's (a quarter of
the characters).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

from memlab.core.pipeline.llm import Completion, CompletionRequest
from memlab.simulation.profile_model import PromptEffect, SimProfile

__all__ = ["FAILURE_PHRASES", "SimulatedReflector"]

logger = logging.getLogger(__name__)

FAILURE_PHRASES: dict[str, str] = {
    "missed": "missed gold fact",
    "wrongly_stored": "stored wrongly",
    "failed_reply": "failed reply",
}
"""The phrase of the feedback that names each kind of failure."""

_PLAIN_EDITS: dict[str, str] = {
    "missed": "Propose every fact the conversation reveals about the user.",
    "wrongly_stored": "Do not store anything the conversation does not state.",
    "failed_reply": "Reply with the JSON object alone: no code fences, no prose around it.",
}

_BLOCK = re.compile(r"```[^\n]*\n(.*?)\n?```", re.DOTALL)


def _addresses(effect: PromptEffect, profile: SimProfile) -> set[str]:
    """The failures an effect's declared rates reduce, compared with the profile's own."""
    changes: Mapping[str, Any] = effect.rates.changes()
    out = set()
    if "propose_rate" in changes and float(changes["propose_rate"]) > profile.propose_rate:
        out.add("missed")
    if "invent_rate" in changes and float(changes["invent_rate"]) < profile.invent_rate:
        out.add("wrongly_stored")
    failures = changes.get("failures")
    if isinstance(failures, Mapping) and sum(failures.values()) < sum(profile.failures.values()):
        out.add("failed_reply")
    return out


class SimulatedReflector:
    """A reflection model (a callable from request text to reply text) that edits the prompt
    by the failures its feedback names and the prompt effects ``profile`` declares.

    Attributes:
        profile: Whose declared prompt effects it may add.
        requests: Every request it was sent, in order (what the feedback held).
    """

    simulated = True
    name = "sim"

    def __init__(self, profile: SimProfile) -> None:
        self.profile = profile
        self.requests: list[str] = []

    @property
    def model(self) -> str:
        """``simulated-reflector-<profile name>`` (its cache entries apart from the model's)."""
        return f"simulated-reflector-{self.profile.name}"

    def complete(self, request: CompletionRequest) -> Completion:
        """The rewrite of ``request``'s messages as a completion (the backend protocol)."""
        prompt = "\n".join(str(m.get("content", "")) for m in request.messages)
        text = self(prompt)
        return Completion(
            text=text,
            prompt_tokens=max(1, len(prompt) // 4),
            completion_tokens=len(text) // 4,
            finish_reason="stop",
            model=self.model,
            backend=self.name,
        )

    def __call__(self, prompt: str | list[dict[str, Any]]) -> str:
        text = prompt if isinstance(prompt, str) else "\n".join(str(m["content"]) for m in prompt)
        self.requests.append(text)
        found = _BLOCK.search(text)
        current = found.group(1) if found else ""
        feedback = text[found.end() :] if found else text
        named = {k for k, phrase in FAILURE_PHRASES.items() if phrase in feedback.casefold()}
        edits = [
            f"Keep {e.when_contains}."
            for e in self.profile.prompt_effects
            if e.when_contains is not None
            and not e.applies(current)
            and _addresses(e, self.profile) & named
        ]
        if not edits:
            edits = [_PLAIN_EDITS[k] for k in sorted(named) if _PLAIN_EDITS[k] not in current]
        logger.info("simulated reflector: failures %s, edits %s", sorted(named), edits)
        return "```\n" + "\n".join([*edits, current]) + "\n```"
