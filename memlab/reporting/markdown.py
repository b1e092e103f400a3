"""Markdown text from untrusted values: one escape for everything a report writes.

Reports quote dataset text, model replies, run names, config values and the user's title.
:func:`md_escape` makes any such value inert inline Markdown: no links or images
(``[x](javascript:...)``, ``![](http://tracker)``), no autolinks (``<...>`` or bare URLs),
no raw HTML, no emphasis,
code spans or table breaks, no headings, and no line breaks. :func:`md_code_block` puts
multi-line text in a fenced block that the text cannot close.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["md_code_block", "md_escape", "md_table_head", "md_table_row"]

# Characters that start inline markup (links and images, emphasis, code, strike-through,
# table cells, autolinks and HTML, entities, math) are backslash-escaped; CommonMark renders
# ``\\x`` as ``x`` for every ASCII punctuation character. Parentheses, ``!`` and ``>`` are left
# alone: without ``[`` and ``<`` they start nothing except at the start of a line.
_SPECIAL = re.compile(r"([\\`*\[\]<|~&$])")
# "_" only emphasises at a word edge, so snake_case names stay readable in the raw file.
_EDGE_UNDERSCORE = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
# GitHub also links bare URLs ("http://...", "www...."); an escaped ":" or "." stops that.
_BARE_URL = re.compile(r"(?i)(:(?=//)|(?<![\w.])www(?=\.))")
_FENCE = "```"


def md_escape(text: object, limit: int | None = None) -> str:
    """``text`` as inert one-line Markdown (see the module docstring).

    Args:
        text: Any value; it is converted with ``str``.
        limit: Cut the text to this many characters first (an ellipsis marks the cut).
    """
    value = str(text)
    if limit is not None and len(value) > limit:
        value = value[: max(0, limit - 1)] + "…"
    value = " ".join(value.split())  # no line breaks: a line could start a block
    value = _SPECIAL.sub(r"\\\1", value)
    value = _EDGE_UNDERSCORE.sub(r"\\_", value)
    value = _BARE_URL.sub(lambda m: "\\:" if m[0] == ":" else "www\\", value)
    return _escape_line_start(value)


# A block marker if the value starts a line: a heading or quote, a list item ("- x", "1. x"),
# a thematic break or setext underline ("---", "===").
_LINE_START = re.compile(r"^(?:[#>]|[-+](?=\s|$)|\d{1,9}(?=[.)](?:\s|$))|[-=]+$)")


def _escape_line_start(value: str) -> str:
    """Escape a block marker at the start (the value may begin a line of the document)."""
    match = _LINE_START.match(value)
    if match is None:
        return value
    if match.group(0)[:1].isdigit():  # "1. x": escape the "." after the number
        end = match.end()
        return value[:end] + "\\" + value[end:]
    return "\\" + value


def md_code_block(text: str, indent: str = "", info: str = "") -> list[str]:
    """Lines of a fenced code block holding ``text`` literally (each line prefixed ``indent``).

    The fence is longer than any run of backticks in ``text``, so the text cannot end it;
    ``info`` is the block's language (``diff``, ``json``), a fixed word chosen by the caller.
    """
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(len(_FENCE), longest + 1)
    lines = [indent + line for line in text.splitlines()]
    return [indent + fence + info, *lines, indent + fence]


def md_table_row(cells: Sequence[str]) -> str:
    """A Markdown table row of ``cells``, which must already be escaped."""
    return "| " + " | ".join(cells) + " |"


def md_table_head(header: Sequence[str]) -> list[str]:
    """The header row of a Markdown table (cells already escaped) and its separator row."""
    return [md_table_row(header), "|" + "---|" * len(header)]
