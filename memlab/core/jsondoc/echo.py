"""Echoes: text a model copied from the prompt template itself into a memory update.

A small model often answers with the template's own example (``"Prefers dark mode in every
editor"``) or repeats its instructions as a summary. Such text says nothing about the user, so
an echo is a failure category of its own: the updater counts it per reply (the merge
bookkeeping's ``echoed``), and scoring never counts an echoed fact as a stored fact. The memory
itself is left as the merge made it, so the pipeline under test, and every later prompt, stay
what they would be without the measurement.

The definition (:class:`EchoCheck`), in one place:

* **The template's own text** is the template with its placeholders removed: the literal pieces
  between ``{current_memory}`` and ``{conversation}`` (examples, instructions, the reply
  skeleton). The values substituted for the placeholders, the conversation being summarised and
  the memory the prompt was given, are never part of it.
* Texts are compared as **normalised words**: case-folded runs of letters and digits, so case,
  whitespace and punctuation do not matter.
* A proposed fact or summary **echoes** the template when its runs of :data:`ECHO_MIN_WORDS`
  consecutive words that also occur in one piece of the template's own text cover at least
  :data:`ECHO_MIN_SHARE` of its words, and none of those runs occurs in the conversation being
  summarised: text the user also said (a user may really prefer dark mode) is grounded, not
  copied. A text shorter than :data:`ECHO_MIN_WORDS` words is never an echo (too short to tell
  copying from coincidence); nor is one sharing fewer consecutive words with the template, or
  one mostly its own (``"The user is working on a Rust compiler"`` shares five words with
  an instruction, not the rest). The memory the prompt showed does not ground a text: an echo
  stored earlier and proposed again is still an echo.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

from memlab.core.jsondoc.contract import updated_sections

__all__ = [
    "ECHO_MIN_SHARE",
    "ECHO_MIN_WORDS",
    "EchoCheck",
    "echo_windows",
    "find_echoes",
    "template_windows",
]

ECHO_MIN_WORDS = 5
"""Consecutive words a text must share with the template's own text to be an echo."""
ECHO_MIN_SHARE = 0.8
"""The share of a text's words its runs shared with the template must cover to be an echo."""

_WORD_RE = re.compile(r"\w+")


def _words(text: str) -> list[str]:
    return _WORD_RE.findall(text.casefold())


def echo_windows(text: str) -> set[tuple[str, ...]]:
    """Every run of :data:`ECHO_MIN_WORDS` consecutive normalised words of ``text``."""
    words = _words(text)
    n = ECHO_MIN_WORDS
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


@lru_cache(maxsize=64)
def template_windows(template: str, placeholders: tuple[str, ...]) -> frozenset[tuple[str, ...]]:
    """The word runs of the template's own text: each literal piece between its placeholders
    (a run never spans a placeholder, so no substituted value contributes to one)."""
    marker = "|".join(re.escape("{" + name + "}") for name in placeholders)
    pieces = re.split(marker, template) if marker else [template]
    return frozenset(window for piece in pieces for window in echo_windows(piece))


class EchoCheck:
    """Whether proposed texts echo one template, for one update (see the module docstring).

    Args:
        template: The template text, with its placeholders.
        placeholders: The placeholder names substituted when it was rendered.
        grounds: The texts that ground a proposal (the conversation being summarised); their
            word runs are only computed when some text shares a run with the template.
    """

    def __init__(
        self, template: str, placeholders: tuple[str, ...], grounds: Iterable[str]
    ) -> None:
        self._template = template_windows(template, placeholders)
        self._grounds = tuple(grounds)
        self._ground_windows: set[tuple[str, ...]] | None = None

    def is_echo(self, text: object) -> bool:
        """True when ``text`` (a string; anything else is never an echo) echoes the template."""
        if not isinstance(text, str):
            return False
        words = _words(text)
        n = ECHO_MIN_WORDS
        covered: set[int] = set()
        shared = []
        for i in range(len(words) - n + 1):
            window = tuple(words[i : i + n])
            if window in self._template:
                shared.append(window)
                covered.update(range(i, i + n))
        if not shared or len(covered) < ECHO_MIN_SHARE * len(words):
            return False
        if self._ground_windows is None:
            self._ground_windows = set().union(*(echo_windows(g) for g in self._grounds))
        return not any(w in self._ground_windows for w in shared)


def find_echoes(update: Mapping[str, Any], check: EchoCheck) -> list[dict[str, Any]]:
    """The echoes of a parsed update, in order: each echoing new fact as proposed, then each
    section that would be rewritten with an echoing summary as ``{"content": summary,
    "section": "user.workContext"}``. ``update`` is not changed."""
    echoed: list[dict[str, Any]] = []
    facts = update.get("newFacts")
    if isinstance(facts, list):
        echoed.extend(
            dict(fact)
            for fact in facts
            if isinstance(fact, Mapping) and check.is_echo(fact.get("content"))
        )
    echoed.extend(
        {"content": summary, "section": f"{group}.{name}"}
        for group, name, summary in _echoed_sections(update, check)
    )
    return echoed


def _echoed_sections(update: Mapping[str, Any], check: EchoCheck) -> list[tuple[str, str, str]]:
    return [found for found in updated_sections(update) if check.is_echo(found[2])]
