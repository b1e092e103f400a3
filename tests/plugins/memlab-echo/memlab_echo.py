"""An example memlab plugin: the ``echo`` backend (a test instrument, not a model).

``echo:NAME`` answers every memory-update prompt with a valid contract reply that stores each
line the user wrote in the conversation block as a fact (confidence 0.9). It declares its
capabilities once, in its ``BackendPlugin``: it answers in free text and JSON mode only (a grid
asking for ``json_schema`` is rejected before anything runs), and its model ``echo-NAME``
costs 1 USD per million prompt tokens and 2 per million completion tokens.
"""

from __future__ import annotations

import json
import re
from typing import Any

from memlab.backends.registry import BACKENDS, BackendPlugin
from memlab.core.jsondoc.contract import minimal_update
from memlab.core.pipeline.llm import Completion, CompletionRequest, OutputMode

__all__ = ["ECHO", "EchoBackend", "register"]

_USER_LINE = re.compile(r"^User: (.+)$", re.MULTILINE)


class EchoBackend:
    """Stores what the user said, verbatim, one fact per line."""

    name = "echo"

    def __init__(self, argument: str = "", **options: Any) -> None:
        self._model = f"echo-{argument or 'plain'}"

    @property
    def model(self) -> str:
        return self._model

    def complete(self, request: CompletionRequest) -> Completion:
        prompt = "\n".join(str(m.get("content", "")) for m in request.messages)
        update = minimal_update()
        for line in dict.fromkeys(match.strip() for match in _USER_LINE.findall(prompt)):
            update["newFacts"].append({"content": line, "category": "context", "confidence": 0.9})
        text = json.dumps(update)
        return Completion(
            text=text,
            prompt_tokens=len(prompt) // 4,
            completion_tokens=len(text) // 4,
            finish_reason="stop",
            model=self._model,
            backend=self.name,
        )


ECHO = BackendPlugin(
    EchoBackend,
    "stores each user line as a fact (an example plugin, tests/plugins/memlab-echo)",
    "echo:demo",
    output_modes=frozenset({OutputMode.FREE, OutputMode.JSON_OBJECT}),
    prices={"echo-": (1.0, 2.0)},
    packages=("memlab-echo",),
)


def register() -> None:
    """Called once per process by memlab when it loads its plugins."""
    BACKENDS.register("echo", ECHO)
