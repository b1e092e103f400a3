"""The root of every error memlab raises on purpose, and how its messages quote input.

Catch :class:`MemlabError` to handle any problem memlab reports about its inputs, its
backends or its files; the command line does exactly that and prints one line with exit 2.
Subclasses keep a builtin base as well (``ValueError``, ``RuntimeError``, ...) so code written
against those keeps working.

Messages quote user input only through :func:`excerpt` (a value) or :func:`one_line` (text), so
an error about a 50 MB file or a YAML alias bomb stays one short line.
"""

from __future__ import annotations

import reprlib

__all__ = ["MAX_MESSAGE_CHARS", "MemlabError", "excerpt", "one_line"]

MAX_MESSAGE_CHARS = 2000
"""Longest error message the command line prints."""


class MemlabError(Exception):
    """Base class of memlab's errors; the message says what is wrong and how to fix it."""


_REPR = reprlib.Repr()
_REPR.maxlevel = 3
_REPR.maxdict = 4
_REPR.maxlist = 4
_REPR.maxtuple = 4
_REPR.maxset = 4
_REPR.maxstring = 60
_REPR.maxother = 60
_REPR.maxlong = 40


def excerpt(value: object, limit: int = 80) -> str:
    """A short, one-line ``repr`` of ``value`` for error messages, however large it is.

    Containers show their first few items and nested levels are elided (``reprlib``), so the
    cost does not depend on the size of ``value``, including values built from YAML aliases
    that share one list many times.
    """
    try:
        text = _REPR.repr(value)
    except Exception:  # a broken __repr__ must not hide the error being reported
        text = f"<{type(value).__name__}>"
    return one_line(text, limit)


def one_line(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``text`` on one line (line breaks become `` | ``), cut to ``limit`` characters."""
    head = str(text)[: 2 * limit + 3]  # only the start can be shown
    flat = " | ".join(part.strip() for part in head.splitlines() if part.strip())
    if len(flat) > limit:
        flat = flat[: max(0, limit - 3)] + "..."
    return flat
