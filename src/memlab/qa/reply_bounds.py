"""The bound on a QA reply's length, checked where replies enter a QA step.

A server that ignores ``max_tokens`` can send megabytes per answer (an HTTP reply may hold up
to :data:`~memlab.core.files.MAX_REPLY_BYTES`); scoring such an answer (token F1, BLEU-1)
and sending it to every judge costs time and memory in proportion to it. A reply longer than
:data:`MAX_REPLY_CHARS` characters is therefore **recorded as a failed call**, never cut:
a cut answer would be scored as if the model had said it. The answer row gets the error
(``answer`` and scores empty, no judge asked), the call counts as failed (the QA step exits 1
unless ``--allow-incomplete``), and the reason names the length and the bound.

The bound is far above any reply the QA settings can ask for: ``max_tokens`` is at most
:data:`MAX_REPLY_TOKENS`, and no tokenizer's tokens average 8 characters.
"""

from __future__ import annotations

from memlab.core.llm import Backend, BackendError, Completion, CompletionRequest

__all__ = [
    "MAX_REPLY_CHARS",
    "MAX_REPLY_TOKENS",
    "BoundedReplies",
    "ReplyTooLongError",
    "reply_problem",
]

MAX_REPLY_TOKENS = 8192
"""The most tokens a QA setting may ask an answer or a verdict to take (``max_tokens``,
``judge_max_tokens``)."""
MAX_REPLY_CHARS = 8 * MAX_REPLY_TOKENS
"""The longest QA reply (answer or verdict) that is read, in characters."""


class ReplyTooLongError(BackendError):
    """A QA reply longer than :data:`MAX_REPLY_CHARS` characters (a failed call).

    Attributes:
        backend: The backend's name.
        chars: The reply's length in characters.
    """

    def __init__(self, backend: str, chars: int) -> None:
        self.backend = backend
        self.chars = chars
        super().__init__(_too_long(backend, chars))


def _too_long(backend: str, chars: int) -> str:
    return (
        f"{backend} replied with {chars} characters, more than the {MAX_REPLY_CHARS} a QA "
        "reply may have (the server ignores max_tokens?); the reply is not scored"
    )


def reply_problem(backend: str, text: str | None) -> str | None:
    """Why ``text`` from ``backend`` is refused as a QA reply (None when it is not)."""
    if text is None or len(text) <= MAX_REPLY_CHARS:
        return None
    return _too_long(backend, len(text))


class BoundedReplies:
    """``backend`` with every reply checked against :data:`MAX_REPLY_CHARS` (same name and
    model, so the same request keys and identity)."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.name = backend.name

    @property
    def model(self) -> str:
        """The wrapped backend's model."""
        return self.backend.model

    def complete(self, request: CompletionRequest) -> Completion:
        """The wrapped backend's completion.

        Raises:
            ReplyTooLongError: The reply is longer than :data:`MAX_REPLY_CHARS` characters.
            BackendError: The wrapped backend failed.
        """
        done = self.backend.complete(request)
        if reply_problem(self.name, done.text) is not None:
            raise ReplyTooLongError(self.name, len(done.text))
        return done
