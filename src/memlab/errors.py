"""The root of every error memlab raises on purpose.

Catch :class:`MemlabError` to handle any problem memlab reports about its inputs, its
backends or its files; the command line does exactly that and prints one line with exit 2.
Subclasses keep a builtin base as well (``ValueError``, ``RuntimeError``, ...) so code written
against those keeps working.
"""

from __future__ import annotations

__all__ = ["MemlabError"]


class MemlabError(Exception):
    """Base class of memlab's errors; the message says what is wrong and how to fix it."""
