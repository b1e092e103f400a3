"""Crash-safe file writes: a reader sees the old file or the new one, never a mix.

Write to a unique temporary file in the target's directory, flush and fsync it, ``os.replace``
it over the target, then fsync the directory so the rename itself is durable. On any failure the
temporary file is removed and the target is untouched.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
from pathlib import Path

__all__ = ["atomic_write_bytes", "atomic_write_text", "fsync_directory"]

logger = logging.getLogger(__name__)


def _default_mode() -> int:
    # mkstemp creates 0600 files; a written report or run file should get the usual
    # permissions (0666 minus the umask), like a file opened with open(..., "w").
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


_DEFAULT_MODE = _default_mode()


def fsync_directory(directory: Path) -> None:
    """fsync a directory so a rename inside it survives a crash (no-op where unsupported)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as exc:
        logger.warning("could not fsync directory %s: %s", directory, exc)
    finally:
        os.close(fd)


def atomic_write_bytes(
    path: str | Path, data: bytes, *, temp_prefix: str | None = None, temp_suffix: str = ".tmp"
) -> None:
    """Atomically replace ``path`` with ``data`` (creating parent directories).

    ``temp_prefix``/``temp_suffix`` name the temporary file, so directory scanners can skip
    files of an interrupted write (default prefix: ``.<name>.``).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    prefix = temp_prefix if temp_prefix is not None else f".{path.name}."
    fd, tmp_name = tempfile.mkstemp(prefix=prefix, suffix=temp_suffix, dir=path.parent)
    try:
        try:
            mode = os.stat(path).st_mode & 0o7777  # keep an existing file's permissions
        except FileNotFoundError:
            mode = _DEFAULT_MODE
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise
    fsync_directory(path.parent)


def atomic_write_text(
    path: str | Path, text: str, *, temp_prefix: str | None = None, temp_suffix: str = ".tmp"
) -> None:
    """Atomically replace ``path`` with UTF-8 ``text`` (see :func:`atomic_write_bytes`)."""
    atomic_write_bytes(path, text.encode("utf-8"), temp_prefix=temp_prefix, temp_suffix=temp_suffix)
