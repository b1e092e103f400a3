"""One prompt template: its placeholders, the checks it passes, how it is filled and read back.

A template is plain text with each of its placeholders exactly once (the update prompt's are
``{current_memory}`` and ``{conversation}``, :data:`PLACEHOLDERS`). :func:`validate_template`
lists every problem at once (a missing or repeated placeholder, doubled braces, an unknown
name), each with its line. Filling substitutes only the placeholders, in a single pass, so any
other braces are kept literally; :meth:`PromptTemplate.parse` reads the values back from a
filled text. :class:`PromptVariant` is the update prompt. The registries that hold templates
by name, and the files they are loaded from, are :mod:`memlab.core.prompts`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Any, ClassVar

from memlab.core.base.jsontext import dumps_indented
from memlab.errors import MemlabError

__all__ = [
    "PLACEHOLDERS",
    "PromptError",
    "PromptTemplate",
    "PromptVariant",
    "UnknownPromptError",
    "validate_template",
]

PLACEHOLDERS: tuple[str, ...] = ("current_memory", "conversation")

_IDENTIFIER_RE = re.compile(r"\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}")


class PromptError(MemlabError, ValueError):
    """A prompt template or prompt file is invalid.

    Attributes:
        line: For a template problem, the template's line it is on (1 when the problem is the
            whole template, e.g. a missing placeholder); ``None`` otherwise.
    """

    line: int | None = None


class UnknownPromptError(PromptError, LookupError):
    """No prompt variant is registered under the requested name."""


@cache
def _placeholder_re(placeholders: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile(r"\{(" + "|".join(map(re.escape, placeholders)) + r")\}")


@cache
def _doubled_re(placeholders: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile(r"\{\{\s*(" + "|".join(map(re.escape, placeholders)) + r")\s*\}\}")


def validate_template(
    template: str, source: str, placeholders: tuple[str, ...] = PLACEHOLDERS
) -> None:
    """Check that `template` has each placeholder exactly once and no look-alikes.

    Args:
        template: The template text.
        source: Where it came from (file path or variant name), used in the error message.
        placeholders: The names substituted (default: the update prompt's).

    Raises:
        PromptError: Listing every problem found.
    """
    problems: list[tuple[int, str]] = []  # (line in the template, what is wrong)
    for match in _doubled_re(placeholders).finditer(template):
        problems.append(
            (
                _line_of(template, match.start()),
                f"{match.group(0)!r} uses doubled braces; write {{{match.group(1)}}} "
                "(templates are not str.format strings)",
            )
        )
    for name in placeholders:
        count = template.count("{" + name + "}")
        if count == 0:
            problems.append((1, f"missing the placeholder {{{name}}}; add it exactly once"))
        elif count > 1:
            at = _line_of(template, template.rindex("{" + name + "}"))
            problems.append(
                (at, f"has the placeholder {{{name}}} {count} times; use it exactly once")
            )
    for match in _IDENTIFIER_RE.finditer(template):
        text, name = match.group(0), match.group(1)
        if name in placeholders and text == "{" + name + "}":
            continue
        at = _line_of(template, match.start())
        if name in placeholders:
            problems.append((at, f"{text!r} has spaces inside the braces; write {{{name}}}"))
        elif not _inside_doubled(template, match.start()):
            known = ", ".join("{" + p + "}" for p in placeholders)
            problems.append(
                (at, f"unknown placeholder {text!r} at line {at}; only {known} are substituted")
            )
    if problems:
        error = PromptError(
            f"{source}: invalid prompt template: " + "; ".join(text for _, text in problems)
        )
        error.line = min(line for line, _ in problems)
        raise error


def _inside_doubled(template: str, start: int) -> bool:
    # "{{current_memory}}" is already reported as doubled braces.
    return template.startswith("{{", start) or (start > 0 and template[start - 1] == "{")


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


@dataclass(frozen=True)
class PromptTemplate:
    """A named template with each of ``placeholders`` exactly once (see the subclasses).

    Attributes:
        name: Registry key (e.g. ``"default"``).
        template: The text, with each placeholder exactly once.
        description: One line for listings and reports.
        source: Where the template was loaded from (for error messages; not compared).
    """

    placeholders: ClassVar[tuple[str, ...]] = PLACEHOLDERS

    name: str
    template: str
    description: str = ""
    source: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            where = self.source or "<prompt>"
            raise PromptError(f"{where}: prompt name must be a non-empty string")
        if not isinstance(self.template, str):
            raise PromptError(f"{self.where}: template must be a string")
        validate_template(self.template, self.where, self.placeholders)

    @property
    def sha256(self) -> str:
        """Content hash of the template: what lanes, resumes and reports identify it by."""
        return hashlib.sha256(self.template.encode("utf-8")).hexdigest()

    @property
    def where(self) -> str:
        """The source file, or ``prompt '<name>'`` for variants built in code."""
        return self.source or f"prompt {self.name!r}"

    def fill(self, values: Mapping[str, str]) -> str:
        """The template with each placeholder replaced by its value, in one pass (text inside
        a value is never substituted again)."""
        return _placeholder_re(self.placeholders).sub(lambda m: values[m.group(1)], self.template)

    def parse(self, text: str) -> dict[str, str] | None:
        """The values :meth:`fill` was given to produce ``text``, or None when this template
        did not produce it (the literal text around the placeholders must match exactly)."""
        match = _parse_re(self.template, self.placeholders).fullmatch(text)
        return None if match is None else match.groupdict()


@lru_cache(maxsize=64)
def _parse_re(template: str, placeholders: tuple[str, ...]) -> re.Pattern[str]:
    pieces = _placeholder_re(placeholders).split(template)
    # split() alternates literal text and placeholder names: lit, name, lit, name, ..., lit.
    # A value ends at the first occurrence of the literal text after it.
    pattern = "".join(
        re.escape(piece) if k % 2 == 0 else f"(?P<{piece}>.*?)" for k, piece in enumerate(pieces)
    )
    return re.compile(pattern, re.DOTALL)


@dataclass(frozen=True)
class PromptVariant(PromptTemplate):
    """A named update prompt: one ``{current_memory}`` and one ``{conversation}``."""

    def render(self, current_memory: Mapping[str, Any], conversation: str) -> str:
        """Return the prompt with the memory document (as indented JSON) and conversation."""
        return self.fill(
            {
                # Same text as json.dumps(indent=2, ensure_ascii=False), which is slow.
                "current_memory": dumps_indented(current_memory, indent=2),
                "conversation": conversation,
            }
        )
