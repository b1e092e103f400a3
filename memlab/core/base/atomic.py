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
import threading
from pathlib import Path

__all__ = ["atomic_write_bytes", "atomic_write_text", "default_file_mode", "fsync_directory"]

logger = logging.getLogger(__name__)

_umask_lock = threading.Lock()


def _current_umask() -> int:
    # Linux shows the umask in /proc without changing it; elsewhere os.umask must set it to
    # read it, which briefly affects files other threads create (hence the lock).
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _umask_lock:
        umask = os.umask(0o077)
        os.umask(umask)
    return umask


def default_file_mode() -> int:
    """Permissions of a new file: 0666 minus the process's current umask.

    ``mkstemp`` creates 0600 files; files memlab writes (memory stores, reports, run files)
    get the permissions a plain ``open(path, "w")`` would give them.
    """
    return 0o666 & ~_current_umask()


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
    path: str | Path,
    data: bytes,
    *,
    temp_prefix: str | None = None,
    temp_suffix: str = ".tmp",
    durable: bool = True,
) -> None:
    """Atomically replace ``path`` with ``data`` (creating parent directories).

    ``temp_prefix``/``temp_suffix`` name the temporary file, so directory scanners can skip
    files of an interrupted write (default prefix: ``.<name>.``). ``durable=False`` skips the
    fsyncs: the write is still atomic for other processes and survives the writer being
    killed, but not a power loss (for files that can be rebuilt, such as a sweep's records).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    prefix = temp_prefix if temp_prefix is not None else f".{path.name}."
    fd, tmp_name = tempfile.mkstemp(prefix=prefix, suffix=temp_suffix, dir=path.parent)
    try:
        try:
            mode = os.stat(path).st_mode & 0o7777  # keep an existing file's permissions
        except FileNotFoundError:
            mode = default_file_mode()
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise
    if durable:
        fsync_directory(path.parent)


def atomic_write_text(
    path: str | Path,
    text: str,
    *,
    temp_prefix: str | None = None,
    temp_suffix: str = ".tmp",
    durable: bool = True,
) -> None:
    """Atomically replace ``path`` with UTF-8 ``text`` (see :func:`atomic_write_bytes`)."""
    atomic_write_bytes(
        path,
        text.encode("utf-8"),
        temp_prefix=temp_prefix,
        temp_suffix=temp_suffix,
        durable=durable,
    )
