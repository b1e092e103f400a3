"""Echoes: text a model copied from the prompt template itself into a memory update.

A small model often answers with the template's own example (``"Prefers dark mode in every
editor"``) or repeats its instructions as a summary. Such text says nothing about the user, so
an echo is a failure category of its own: counted, and never stored.

The definition (:class:`EchoCheck`), in one place:

* **The template's own text** is the template with its placeholders removed: the literal pieces
  between ``{current_memory}`` and ``{conversation}`` (examples, instructions, the reply
  skeleton). The values substituted for the placeholders, the conversation being summarised and
  the memory the prompt was given, are never part of it.
* Texts are compared as **normalised words**: case-folded runs of letters and digits, so case,
  whitespace and punctuation do not matter.
* A proposed fact or summary **echoes** the template when some run of :data:`ECHO_MIN_WORDS`
  consecutive words of it also occurs in one piece of the template's own text, and none of the
  runs it shares with the template occurs in the conversation or in the current memory: text
  the user also said (a user may really prefer dark mode) or that memory already held is
  grounded, not copied. A text shorter than :data:`ECHO_MIN_WORDS` words is never an echo (too
  short to tell copying from coincidence); one sharing fewer consecutive words is not either.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache
from typing import Any

from memlab.core.contract import MemoryUpdateDict
from memlab.core.document import HISTORY_SECTIONS, USER_SECTIONS
from memlab.core.jsontext import dumps_indented

__all__ = ["ECHO_MIN_WORDS", "EchoCheck", "drop_echoes", "echo_windows", "template_windows"]

ECHO_MIN_WORDS = 5
"""Consecutive words a text must share with the template's own text to be an echo."""

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
        sources: The values substituted (the conversation, the memory document); a callable
            returning them is called once, and only when some text shares a run with the
            template, so most updates never render them.
    """

    def __init__(
        self,
        template: str,
        placeholders: tuple[str, ...],
        sources: Iterable[str] | Callable[[], Iterable[str]],
    ) -> None:
        self._template = template_windows(template, placeholders)
        self._sources = sources
        self._source_windows: set[tuple[str, ...]] | None = None

    def _grounded(self) -> set[tuple[str, ...]]:
        if self._source_windows is None:
            sources = self._sources() if callable(self._sources) else self._sources
            self._source_windows = set().union(*(echo_windows(s) for s in sources))
        return self._source_windows

    def is_echo(self, text: object) -> bool:
        """True when ``text`` (a string; anything else is never an echo) echoes the template."""
        if not isinstance(text, str):
            return False
        shared = [w for w in echo_windows(text) if w in self._template]
        if not shared:
            return False
        grounded = self._grounded()
        return not any(w in grounded for w in shared)

    @classmethod
    def for_update(
        cls,
        template: str,
        placeholders: tuple[str, ...],
        conversation: str,
        memory: Mapping[str, Any],
    ) -> EchoCheck:
        """The check for a memory update prompt: the sources are the conversation and the
        memory document as the prompt showed it (indented JSON), rendered only when needed."""
        return cls(template, placeholders, lambda: (conversation, dumps_indented(memory, indent=2)))


def drop_echoes(
    update: MemoryUpdateDict, check: EchoCheck
) -> tuple[MemoryUpdateDict, list[dict[str, Any]]]:
    """``update`` without its echoes, and the echoes dropped (``update`` is not changed).

    An echoed new fact is left out of ``newFacts`` (and listed as proposed); a section whose
    summary echoes is set to ``shouldUpdate: false`` (and listed as ``{"content": summary,
    "section": "user.workContext"}``), so the section keeps its old summary. Only sections that
    would be written are checked. The update itself is returned when nothing echoes.
    """
    echoed: list[dict[str, Any]] = []
    facts = update.get("newFacts")
    kept_facts = None
    if isinstance(facts, list) and facts:
        kept_facts = []
        for fact in facts:
            if isinstance(fact, Mapping) and check.is_echo(fact.get("content")):
                echoed.append(dict(fact))
            else:
                kept_facts.append(fact)
    sections = _echoed_sections(update, check)
    if not echoed and not sections:
        return update, []
    result: dict[str, Any] = dict(update)
    if kept_facts is not None and len(kept_facts) != len(facts or []):
        result["newFacts"] = kept_facts
    for group, name, summary in sections:
        result[group] = {**result[group], name: {**result[group][name], "shouldUpdate": False}}
        echoed.append({"content": summary, "section": f"{group}.{name}"})
    return result, echoed  # type: ignore[return-value]  # the same keys, fewer echoes


def _echoed_sections(update: MemoryUpdateDict, check: EchoCheck) -> list[tuple[str, str, str]]:
    found = []
    for group, names in (("user", USER_SECTIONS), ("history", HISTORY_SECTIONS)):
        proposed = update.get(group)
        if not isinstance(proposed, Mapping):
            continue
        for name in names:
            section = proposed.get(name)
            if not isinstance(section, Mapping) or section.get("shouldUpdate") is not True:
                continue
            summary = section.get("summary")
            if isinstance(summary, str) and check.is_echo(summary):
                found.append((group, name, summary))
    return found
