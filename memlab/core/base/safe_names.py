"""Names from data (owner ids, run names) that become file or directory names.

Every such name goes through :func:`safe_component`, which returns it unchanged when it is
already a safe single path component and otherwise raises :class:`UnsafeNameError` saying
why; :func:`encode_component` instead maps any name to a safe one (readable part plus a hash
suffix), for callers that must accept every name. :func:`ensure_inside` checks a resolved path
before anything is written or removed there.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from memlab.errors import MemlabError

__all__ = [
    "MAX_COMPONENT_CHARS",
    "UnsafeNameError",
    "encode_component",
    "ensure_inside",
    "safe_component",
    "unsafe_reason",
]

MAX_COMPONENT_CHARS = 120
"""Longest accepted name; file systems allow 255 bytes and a suffix such as ``.json`` is added."""

_SAFE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+=-]*")


class UnsafeNameError(MemlabError, ValueError):
    """A name cannot be used as a file or directory name.

    Attributes:
        name: The rejected name.
        what: What the name is (``"user_id"``, ``"run name"``, ...).
        reason: Why it is unsafe.
    """

    def __init__(self, name: str, what: str, reason: str) -> None:
        self.name = name
        self.what = what
        self.reason = reason
        shown = name if len(name) <= 60 else name[:57] + "..."
        super().__init__(
            f"{what} {shown!r} cannot be used as a file name: {reason}; use letters, digits "
            f"and . _ - @ + = only, starting with a letter or digit, at most "
            f"{MAX_COMPONENT_CHARS} characters"
        )


def unsafe_reason(name: str) -> str | None:
    """Why ``name`` is not a safe single path component, or ``None`` when it is."""
    if not isinstance(name, str) or not name:
        return "it is empty"
    if "\x00" in name:
        return "it contains a NUL character"
    if "/" in name or "\\" in name:
        return "it contains a path separator"
    if name.startswith("."):  # also "." and ".."
        return "it starts with '.'"
    if len(name) > MAX_COMPONENT_CHARS:
        return f"it has {len(name)} characters"
    if not _SAFE.fullmatch(name):
        return "it contains characters other than letters, digits and . _ - @ + ="
    return None


def safe_component(name: str, what: str) -> str:
    """Return ``name`` when it is a safe single path component, else raise.

    Raises:
        UnsafeNameError: Naming ``what`` and the reason.
    """
    reason = unsafe_reason(name)
    if reason is not None:
        raise UnsafeNameError(str(name), what, reason)
    return name


def encode_component(name: str) -> str:
    """Map any name to a safe component: kept as is when safe, else a readable part + hash."""
    if unsafe_reason(name) is None:
        return name
    readable = re.sub(r"[^A-Za-z0-9._@+=-]+", "_", name).strip("._-")[:60] or "name"
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"{readable}-{digest}"


def ensure_inside(path: str | os.PathLike[str], root: str | os.PathLike[str], what: str) -> Path:
    """Return ``path`` resolved, after checking that it lies inside ``root`` (also resolved).

    Raises:
        UnsafeNameError: When ``path`` resolves outside ``root`` (a symlink or ``..``).
    """
    resolved = Path(path).resolve()
    base = Path(root).resolve()
    if resolved != base and base not in resolved.parents:
        raise UnsafeNameError(os.fspath(path), what, f"it resolves outside {base}")
    return resolved
