"""Procedure questions: which labelled steps a reply names, in which order, and how well.

A procedure question asks the agent to carry out a labelled procedure in a later session.
Its reply is scored by the steps it names in order:

- **named steps** (the matcher): the reply is cut into segments (lines, and sentences or
  ``;``-separated clauses within a line); a segment *names* a gold step when it holds at
  least :data:`STEP_MATCH_SHARE` of the step's content words (case-folded words of two or
  more letters or any digits, :data:`STOPWORDS` left out). Each segment names the gold step
  it covers best (ties: the earlier step); the reply's named sequence is those steps in the
  order of their segments.
- **step-order accuracy**: the longest common subsequence of the named sequence and the gold
  order, divided by the number of gold steps. Naming every step in order scores 1; naming
  them all out of order scores the longest run in order; naming none, or a reply that is
  missing, scores 0.

In memory QA (:mod:`memlab.postrun.qa_step`) each procedure question's answer row gets
:func:`reply_scores`; a reply *recalls* the procedure when it names at least one of its steps.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

__all__ = [
    "STEP_MATCH_SHARE",
    "STOPWORDS",
    "content_words",
    "lcs_length",
    "named_steps",
    "reply_scores",
    "step_order_accuracy",
]

STEP_MATCH_SHARE = 2 / 3
"""Share of a step's content words a segment must hold to name it."""

STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "to",
        "of",
        "in",
        "on",
        "at",
        "for",
        "and",
        "or",
        "then",
        "with",
        "by",
        "from",
        "into",
        "it",
        "its",
        "is",
        "be",
        "your",
        "my",
        "you",
        "i",
        "this",
        "that",
        "these",
        "those",
        "as",
        "up",
        "out",
        "do",
    ]
)
"""Words that name no step."""

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_SEGMENT = re.compile(r"[\n;]+|(?<=[.!?])\s+")


def content_words(text: str) -> frozenset[str]:
    """The words of ``text`` that say something (case-folded, stopwords dropped)."""
    words = (w.casefold() for w in _WORD.findall(text))
    return frozenset(w for w in words if w not in STOPWORDS and (len(w) > 1 or w.isdigit()))


def named_steps(reply: str, gold: Sequence[str]) -> list[int]:
    """The indices of the gold steps ``reply`` names, in the order it names them."""
    steps = [content_words(step) for step in gold]
    named: list[int] = []
    for segment in _SEGMENT.split(reply):
        words = content_words(segment)
        if not words:
            continue
        best, best_share = -1, 0.0
        for index, step in enumerate(steps):
            if not step:
                continue
            share = len(step & words) / len(step)
            if share >= STEP_MATCH_SHARE and share > best_share:
                best, best_share = index, share
        if best >= 0:
            named.append(best)
    return named


def lcs_length(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common subsequence of ``a`` and ``b``."""
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b):
            current.append(previous[j] + 1 if x == y else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1]


def step_order_accuracy(reply: str | None, gold: Sequence[str]) -> float:
    """LCS(named steps, gold order) / number of gold steps; 0 for no reply."""
    if not gold:
        raise ValueError("a procedure has at least one step")
    if reply is None:
        return 0.0
    return lcs_length(named_steps(reply, gold), range(len(gold))) / len(gold)


def reply_scores(reply: str | None, gold: Sequence[str]) -> dict[str, Any]:
    """A procedure question's answer-row fields: ``steps_named`` (:func:`named_steps`; empty
    for no reply) and ``step_accuracy`` (:func:`step_order_accuracy`)."""
    return {
        "steps_named": named_steps(reply, gold) if reply is not None else [],
        "step_accuracy": step_order_accuracy(reply, gold),
    }
