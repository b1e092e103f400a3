"""The bound on a QA reply's length, checked where replies enter a QA step.

A server that ignores ``max_tokens`` can send megabytes per answer (an HTTP reply may hold up
to :data:`~memlab.core.base.files.MAX_REPLY_BYTES`); scoring such an answer (token F1, BLEU-1)
and sending it to every judge costs time and memory in proportion to it. A reply longer than
:data:`MAX_REPLY_CHARS` characters is therefore **recorded as a failed call**, never cut:
a cut answer would be scored as if the model had said it. The answer row gets the error
(``answer`` and scores empty, no judge asked), the call counts as failed (the QA step exits 1
unless ``--allow-incomplete``), and the reason names the length and the bound.

The bound is far above any reply the QA settings can ask for: ``max_tokens`` is at most
:data:`MAX_REPLY_TOKENS`, and no tokenizer's tokens average 8 characters.
"""

from __future__ import annotations

__all__ = ["MAX_REPLY_CHARS", "MAX_REPLY_TOKENS", "reply_problem"]

MAX_REPLY_TOKENS = 8192
"""The most tokens a QA setting may ask an answer or a verdict to take (``max_tokens``,
``judge_max_tokens``)."""
MAX_REPLY_CHARS = 8 * MAX_REPLY_TOKENS
"""The longest QA reply (answer or verdict) that is read, in characters."""


def reply_problem(backend: str, text: str | None) -> str | None:
    """Why ``text`` from ``backend`` is refused as a QA reply (None when it is not): every
    QA call checks its reply here (:func:`memlab.qa.answering.call`)."""
    if text is None or len(text) <= MAX_REPLY_CHARS:
        return None
    return (
        f"{backend} replied with {len(text)} characters, more than the {MAX_REPLY_CHARS} a "
        "QA reply may have (the server ignores max_tokens?); the reply is not scored"
    )
