"""Text from outside made writable once, where it enters: nothing later fails to encode it.

A Python string can hold code points UTF-8 cannot encode: surrogates (U+D800 to U+DFFF),
which ``json.loads`` gives for a ``\\ud800`` escape without its pair. Such a string passes
every step until a writer encodes it (a cache entry, a run record, a store file) and fails
there, far from where it came in. Text from outside (model replies, datasets, prompt files,
error messages of servers) therefore passes :func:`safe_text` or :func:`safe_json` where it
enters: every surrogate becomes U+FFFD (the replacement character) and is counted, so the
text is kept, the writers never fail, and a result can say how many characters were replaced.

Text that holds no surrogate comes back unchanged (the same object), so normal text, and every
key and hash computed from it, stays byte for byte what it was.
"""

from __future__ import annotations

import logging
import re
from typing import Any

__all__ = ["REPLACEMENT", "safe_json", "safe_text"]

logger = logging.getLogger(__name__)

REPLACEMENT = "\ufffd"
"""What a character UTF-8 cannot encode becomes."""

_SURROGATE = re.compile("[\ud800-\udfff]")
# A JSON escape of a surrogate that is not half of a high-low pair: json.loads would turn it
# into a lone surrogate. An escape is real when the backslash before the "u" is not itself
# escaped (an even number of backslashes before it); a high escape followed by a low one is
# one character, kept.
_LONE_ESCAPE = re.compile(
    r"(?<!\\)((?:\\\\)*)\\u(?:"
    r"([dD][89abAB][0-9a-fA-F]{2})(\\u[dD][c-fC-F][0-9a-fA-F]{2})?"
    r"|[dD][c-fC-F][0-9a-fA-F]{2})"
)
# Searched only in text holding a backslash (a one-character search is a memchr).
_MAYBE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _has_surrogate(text: str) -> bool:
    if text.isascii():
        return False
    try:  # the encoder finds one several times faster than a search for the range does
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _may_decode_to_surrogates(text: str) -> bool:
    if _has_surrogate(text):
        return True
    return "\\" in text and _MAYBE_ESCAPE.search(text) is not None


def _escape_fix(match: re.Match[str], found: list[int]) -> str:
    if match.group(3) is not None:  # a high-low pair: one real character
        return match.group(0)
    found[0] += 1
    return match.group(1) + "\\ufffd"


def safe_text(text: str, *, json_escapes: bool = False) -> tuple[str, int]:
    """``text`` with every character UTF-8 cannot encode replaced by U+FFFD, and how many.

    Args:
        text: Text from outside.
        json_escapes: Also replace the JSON escapes of lone surrogates (``\\ud800`` not
            followed by ``\\udc00``-``\\udfff``) by ``\\ufffd``, for text that is decoded as
            JSON later (model replies): what any decoder makes of it is then writable too.

    Returns:
        ``(text, replaced)``: ``text`` itself when nothing was replaced.
    """
    replaced = 0
    if _has_surrogate(text):
        text, replaced = _SURROGATE.subn(REPLACEMENT, text)
    if json_escapes and "\\" in text and _MAYBE_ESCAPE.search(text) is not None:
        found = [0]
        fixed = _LONE_ESCAPE.sub(lambda m: _escape_fix(m, found), text)
        if found[0]:
            text, replaced = fixed, replaced + found[0]
    return text, replaced


def safe_json(
    value: Any, *, decoded_from: str | None = None, where: str | None = None
) -> tuple[Any, int]:
    """A decoded JSON value with :func:`safe_text` applied to every string (keys too), and
    the number of characters replaced; ``value`` itself when nothing was.

    ``decoded_from``: the JSON text ``value`` was decoded from; when it holds neither a
    surrogate nor the escape of one, no string of ``value`` can, and the walk is skipped.
    ``where``: the input's name (a file, a file and line): when characters were replaced, a
    warning names it and says how many. Containers are rebuilt only along the paths that
    changed; the walk is iterative, so any depth the JSON reader accepted is safe.
    """
    if decoded_from is not None and not _may_decode_to_surrogates(decoded_from):
        return value, 0
    safe, replaced = _safe_value(value)
    if replaced and where is not None:
        logger.warning(
            "%s: %d character(s) UTF-8 cannot encode (lone surrogates, such as a '\\ud800' "
            "escape without its pair) replaced by U+FFFD; fix the text at its source",
            where,
            replaced,
        )
    return safe, replaced


def _safe_value(value: Any) -> tuple[Any, int]:
    kind = type(value)
    if kind is str:
        return safe_text(value)
    if kind is not dict and kind is not list:
        return value, 0
    total = 0
    # Post-order walk: a container's children are made safe before the container itself.
    stack: list[tuple[Any, bool]] = [(value, False)]
    done: dict[int, Any] = {}
    while stack:
        node, expanded = stack.pop()
        children = list(node.values()) if type(node) is dict else node
        if not expanded:
            stack.append((node, True))
            stack.extend((c, False) for c in children if type(c) is dict or type(c) is list)
            continue
        changed = False
        items: list[Any] = []
        for child in children:
            if type(child) is str:
                new, count = safe_text(child)
                total += count
            elif type(child) is dict or type(child) is list:
                new = done.get(id(child), child)
            else:
                new = child
            changed = changed or new is not child
            items.append(new)
        if type(node) is dict:
            keys = []
            for key in node:
                new_key, count = safe_text(key) if type(key) is str else (key, 0)
                total += count
                changed = changed or count > 0
                keys.append(new_key)
            rebuilt: Any = dict(zip(keys, items, strict=True)) if changed else node
        else:
            rebuilt = items if changed else node
        done[id(node)] = rebuilt
    return done.get(id(value), value), total
