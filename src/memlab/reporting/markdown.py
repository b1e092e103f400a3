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

__all__ = ["md_code_block", "md_escape"]

# Characters that start inline markup (links, images, emphasis, code, strike-through, tables,
# autolinks/HTML, entities, headings, math) are backslash-escaped; CommonMark renders
# ``\\x`` as ``x`` for every ASCII punctuation character.
_SPECIAL = re.compile(r"([\\`*{}\[\]()<>#!|~&$])")
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
    return _BARE_URL.sub(lambda m: "\\:" if m[0] == ":" else "www\\", value)


def md_code_block(text: str, indent: str = "", info: str = "") -> list[str]:
    """Lines of a fenced code block holding ``text`` literally (each line prefixed ``indent``).

    The fence is longer than any run of backticks in ``text``, so the text cannot end it;
    ``info`` is the block's language (``diff``, ``json``), a fixed word chosen by the caller.
    """
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(len(_FENCE), longest + 1)
    lines = [indent + line for line in text.splitlines()]
    return [indent + fence + info, *lines, indent + fence]
