"""Read a judge's reply: ``{"label": "CORRECT"}`` or ``{"label": "WRONG"}``.

Judges are asked for one JSON object with a ``label``; replies that wrap it in prose or a code
fence, or give the bare word, are read too. A reply that names both labels, or neither, has no
verdict (None), and is reported as such rather than guessed.
"""

from __future__ import annotations

import re

__all__ = ["CORRECT", "WRONG", "parse_verdict"]

CORRECT = "CORRECT"
WRONG = "WRONG"

_LABEL = re.compile(r'"label"\s*:\s*"([A-Za-z]+)"')
_WORD = re.compile(r"\b(CORRECT|WRONG)\b", re.IGNORECASE)


def parse_verdict(reply: str) -> bool | None:
    """True for CORRECT, False for WRONG, None when the reply gives no single verdict."""
    labels = {m.group(1).upper() for m in _LABEL.finditer(reply)}
    if not labels:
        labels = {m.group(1).upper() for m in _WORD.finditer(reply)}
    if labels == {CORRECT}:
        return True
    if labels == {WRONG}:
        return False
    return None
