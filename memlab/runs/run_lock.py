"""One writer per run directory at a time: the run's inter-process lock.

Every step that writes into a run directory (a sweep, including a fork's new run; memory QA;
the consolidation curve; rescoring; a labelling sheet drawn into the run) holds the run's
lock while it writes. A second writer does not wait and does not overwrite: it stops at once
with :class:`RunLockedError`, one line naming the holder (process id, host, command and since
when), which the command line prints with exit 2.

The lock is an OS file lock (``flock``; on Windows a byte-range lock) on ``.<run>.lock``
beside the run directory, outside it: a sweep that starts the run afresh deletes the
directory, and the lock must outlive that. The OS releases it when its process ends, however
it ends, so a killed writer leaves no stale lock; the file keeps the last holder's description
and is rewritten by the next one. Within one process the lock is re-entrant on the thread that
holds it (a sweep with a ``qa:`` key runs the QA step under its own lock).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from memlab.core.jsondoc.document import utc_iso
from memlab.errors import MemlabError, one_line

__all__ = ["RunLockedError", "lock_path", "run_lock", "writes_run"]

_P = ParamSpec("_P")
_R = TypeVar("_R")

_held: dict[str, tuple[int, int]] = {}  # lock file -> (holding thread, depth), this process
_held_guard = threading.Lock()


class RunLockedError(MemlabError, RuntimeError):
    """Another writer holds the run's lock.

    Attributes:
        run_path: The run directory.
        lock_file: The lock file.
        holder: The holder as it described itself (pid, host, command, since), or "".
    """

    def __init__(self, run_path: Path, lock_file: Path, holder: str) -> None:
        self.run_path = run_path
        self.lock_file = lock_file
        self.holder = holder
        who = holder or "another memlab process (it did not say which)"
        super().__init__(
            f"{run_path}: another writer is using this run: {who}; wait for it to finish and "
            f"run the command again (the lock, {lock_file.name}, is released when it exits)"
        )


def lock_path(run_path: str | os.PathLike[str]) -> Path:
    """The lock file of the run at ``run_path``: ``.<name>.lock`` beside the directory."""
    path = Path(os.path.abspath(run_path))  # not resolved: a run is named as given
    return path.with_name(f".{path.name}.lock")


@contextlib.contextmanager
def run_lock(run_path: str | os.PathLike[str], command: str) -> Iterator[None]:
    """Hold the run's lock for ``command`` (a word such as ``"qa"``, recorded for others).

    Raises:
        RunLockedError: Another process (or another thread of this one) holds it.
        OSError: The lock file cannot be created (a read-only folder).
    """
    run = Path(run_path)
    target = lock_path(run)
    key = str(target)
    me = threading.get_ident()
    with _held_guard:
        owner, depth = _held.get(key, (me, 0))
        if depth and owner != me:
            raise RunLockedError(run, target, f"another thread of this process (pid {os.getpid()})")
        if depth:
            _held[key] = (me, depth + 1)
    if depth:  # already held by this thread: re-entered
        try:
            yield
        finally:
            _release_depth(key)
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(target, flags, 0o644)
    try:
        if not _try_lock(fd):
            raise RunLockedError(run, target, _holder(fd))
        _describe(fd, command)
        with _held_guard:
            _held[key] = (me, 1)
        try:
            yield
        finally:
            with _held_guard:
                del _held[key]
            _unlock(fd)
    finally:
        os.close(fd)


def writes_run(command: str) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """Decorate a function whose first argument is a run (or its directory) and that writes
    into it: it runs holding the run's lock (:func:`run_lock`) for ``command``."""

    def decorate(func: Callable[_P, _R]) -> Callable[_P, _R]:
        @functools.wraps(func)
        def locked(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            run: Any = args[0] if args else kwargs.get("run", kwargs.get("run_path"))
            path = run if isinstance(run, str | os.PathLike) else run.path
            with run_lock(path, command):
                return func(*args, **kwargs)

        return locked

    return decorate


def _release_depth(key: str) -> None:
    with _held_guard:
        owner, depth = _held[key]
        _held[key] = (owner, depth - 1)


# The holder's description starts at byte 1 (byte 0 is a line break): on Windows the lock
# covers byte 0 only, and a locked byte cannot be read by others.
_TEXT_AT = 1


def _describe(fd: int, command: str) -> None:
    holder = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "command": f"memlab {command}",
        "since": utc_iso(datetime.now(UTC)),
    }
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, b"\n" + json.dumps(holder).encode("utf-8"))


def _holder(fd: int) -> str:
    """The holder's description as one line ("" when unreadable or not written yet)."""
    try:
        os.lseek(fd, _TEXT_AT, os.SEEK_SET)
        data = json.loads(os.read(fd, 4096).decode("utf-8"))
    except (OSError, ValueError):
        return ""
    if not isinstance(data, dict):
        return ""
    return one_line(
        f"{data.get('command', 'memlab')} (pid {data.get('pid', '?')} on "
        f"{data.get('host', '?')}, since {data.get('since', '?')})",
        300,
    )


if sys.platform == "win32":
    import msvcrt

    def _try_lock(fd: int) -> bool:
        os.lseek(fd, 0, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

    def _unlock(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        with contextlib.suppress(OSError):
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)
