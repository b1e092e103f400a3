"""Reading files within limits, and staying inside the directories memlab owns.

Every data path (datasets, grids, prompt files, profiles, cache entries, run files, reply
files) reads through this module, so the same rules hold everywhere:

- **Only regular files.** A FIFO, a device (``/dev/zero``), a socket or a directory is refused
  before a byte is read; files are opened non-blocking, so opening a FIFO never waits for a
  writer.
- **Bounded size.** :func:`read_bytes` refuses a file larger than its ``max_bytes`` (and one
  that grows past it while read); streams opened with :func:`open_regular` are read with
  :func:`iter_lines`, which bounds every line.
- **Containment.** Under a directory memlab owns (a run directory, a response cache),
  ``inside=ROOT`` checks that the path stays inside ``ROOT`` with no symbolic link on the way
  (:func:`contained`) and opens the file with ``O_NOFOLLOW``: a link planted in a run or cache
  directory is never followed out of it, for reading, writing or deleting.

Refusals raise :class:`FileReadError`, an ``OSError``, so callers that already handle I/O
errors handle these too; a missing file stays a plain ``FileNotFoundError``.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from io import BufferedReader
from pathlib import Path

from memlab.errors import MemlabError, one_line

__all__ = [
    "MAX_CACHE_ENTRY_BYTES",
    "MAX_DATASET_BYTES",
    "MAX_LINE_BYTES",
    "MAX_REPLY_BYTES",
    "MAX_RUN_FILE_BYTES",
    "MAX_TABLE_BYTES",
    "MAX_TEXT_BYTES",
    "FileReadError",
    "RealDir",
    "contained",
    "io_reason",
    "is_plain_file",
    "iter_lines",
    "open_regular",
    "read_bytes",
    "read_text",
]

MiB = 1024 * 1024
MAX_TEXT_BYTES = 4 * MiB
"""Prompt files, grids, profiles, configs and other hand-written text."""
MAX_REPLY_BYTES = 16 * MiB
"""One HTTP reply of a model server (the body of a chat completion)."""
MAX_CACHE_ENTRY_BYTES = 64 * MiB
"""One response cache entry (the request's messages and the reply)."""
MAX_RUN_FILE_BYTES = 64 * MiB
"""One JSON file of a run directory: an owner record, the manifest, a lane description."""
MAX_LINE_BYTES = 64 * MiB
"""One line of a JSON-lines file (a dataset owner, a table row)."""
MAX_TABLE_BYTES = 1024 * MiB
"""A JSON-lines table of a run directory (read row by row)."""
MAX_DATASET_BYTES = 1024 * MiB
"""A dataset file (read owner by owner)."""


class FileReadError(MemlabError, OSError):
    """A file cannot be read as memlab needs it: not a regular file, too large, reached
    through a symbolic link or ``..`` out of the directory it must stay in, or not UTF-8.

    Attributes:
        path: The file.
        what: What the file is (``"cache entry"``, ``"owner record"``, ...).
        reason: Why it is refused.
    """

    def __init__(
        self, path: str | os.PathLike[str], what: str, reason: str, action: str = "read"
    ) -> None:
        self.path = os.fspath(path)
        self.what = what
        self.reason = reason
        super().__init__(f"{one_line(self.path, 300)}: cannot {action} {what}: {reason}")


def io_reason(exc: OSError) -> str:
    """Why an I/O operation failed, in words (a refusal's reason, the system's message, or
    the error's name)."""
    return getattr(exc, "reason", None) or exc.strerror or str(exc) or type(exc).__name__


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


class RealDir(str):
    """A directory path its owner resolved (``os.path.realpath``) once: :func:`contained`
    takes it as it is. Resolving costs a system call per component of the path, for every
    file a cached replay reads; a cache resolves its directory when it is opened.

    Attributes:
        given: The path as given, made absolute (paths under it are inside too).
    """

    given: str

    @classmethod
    def of(cls, path: str | os.PathLike[str]) -> RealDir:
        """``path`` resolved now."""
        real = cls(os.path.realpath(path))
        real.given = os.path.abspath(path)
        return real


def contained(
    path: str | os.PathLike[str],
    root: str | os.PathLike[str],
    what: str = "file",
    action: str = "use",
) -> Path:
    """``path`` as a path under ``root`` (resolved), checked to stay inside it.

    The path is normalised lexically and must not leave ``root``; every component between
    ``root`` and ``path`` that exists must not be a symbolic link (``root`` itself may be one:
    where a user keeps a directory is the user's choice). The returned path is the one to
    open, write or delete. A :class:`RealDir` root is not resolved again.

    Raises:
        FileReadError: The path leaves ``root`` or passes through a symbolic link (the
            message says ``cannot <action> <what>``).
    """
    return Path(_contained(path, root, what, action))


def _contained(
    path: str | os.PathLike[str], root: str | os.PathLike[str], what: str, action: str
) -> str:
    """:func:`contained` as a string (building a ``Path`` costs more than the check, for
    every cache entry a replay reads)."""
    # String operations: a cached replay checks two paths per cache entry it reads.
    try:
        if isinstance(root, RealDir):
            base, given = str(root), root.given
        else:
            base, given = os.path.realpath(root), os.path.abspath(root)
        target = os.path.abspath(path)
        # Relative to the root as given, or as resolved (a caller may pass either form).
        relative = _below(target, given)
        if relative is None:
            relative = _below(target, base)
    except ValueError:  # a NUL in the path
        raise FileReadError(path, what, "the path contains a NUL character", action) from None
    if relative is None:
        raise FileReadError(path, what, f"it lies outside {base}", action)
    if not relative:
        return base
    current = base
    for part in relative.split(os.sep):
        current = os.path.join(current, part)
        try:
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            break  # nothing below a missing component exists
        except OSError as exc:
            raise FileReadError(path, what, io_reason(exc), action) from None
        if stat.S_ISLNK(mode):
            raise FileReadError(
                path,
                what,
                f"{current} is a symbolic link; memlab does not follow links inside {base}",
                action,
            )
    return os.path.join(base, relative)


def _below(target: str, anchor: str) -> str | None:
    """``target`` relative to ``anchor`` ("" when equal), or ``None`` when it is not inside
    (both absolute and normalised)."""
    if target == anchor:
        return ""
    prefix = anchor if anchor.endswith(os.sep) else anchor + os.sep
    return target[len(prefix) :] if target.startswith(prefix) else None


def is_plain_file(path: str | os.PathLike[str]) -> bool:
    """True for a regular file that is not a symbolic link (``lstat``; no exception)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except (OSError, ValueError):
        return False


def open_regular(
    path: str | os.PathLike[str],
    *,
    what: str,
    max_bytes: int | None = None,
    inside: str | os.PathLike[str] | None = None,
) -> BufferedReader:
    """Open a regular file for reading in binary mode (see the module docstring).

    Args:
        path: The file.
        what: What it is, for messages.
        max_bytes: Refuse a larger file.
        inside: A directory memlab owns that the file must stay in (no links followed).

    Raises:
        FileReadError: Not a regular file, too large, or outside ``inside``.
        OSError: The file is missing or cannot be opened (``FileNotFoundError``, ...).
    """
    fd, _size = _open_checked(path, what, max_bytes, inside)
    try:
        handle: BufferedReader = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    return handle


def _open_checked(
    path: str | os.PathLike[str],
    what: str,
    max_bytes: int | None,
    inside: str | os.PathLike[str] | None,
) -> tuple[int, int]:
    """(blocking file descriptor, size) of a regular file, checked as :func:`open_regular`
    says; the caller closes the descriptor."""
    target = _contained(path, inside, what, "read") if inside is not None else path
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if inside is not None:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(target, flags)
    except ValueError:  # a NUL in the path
        raise FileReadError(path, what, "the path contains a NUL character") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP and inside is not None:
            raise FileReadError(
                path, what, "it is a symbolic link; memlab does not follow links it did not make"
            ) from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise FileReadError(path, what, f"it is {_kind(info.st_mode)}, not a regular file")
        if max_bytes is not None and info.st_size > max_bytes:
            raise FileReadError(
                path,
                what,
                f"it is {info.st_size} bytes; memlab reads at most {max_bytes} bytes "
                "(is this the right file?)",
            )
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, info.st_size


def read_bytes(
    path: str | os.PathLike[str],
    *,
    what: str,
    max_bytes: int,
    inside: str | os.PathLike[str] | None = None,
) -> bytes:
    """The content of a regular file of at most ``max_bytes`` bytes (see :func:`open_regular`).

    Raises:
        FileReadError: Not a regular file, larger than ``max_bytes`` (also when it grows while
            read), or outside ``inside``.
        OSError: The file is missing or cannot be opened.
    """
    # Straight from the descriptor (no buffered reader: a replay reads a file per update).
    fd, size = _open_checked(path, what, max_bytes, inside)
    try:
        # Ask for the file's size plus one byte, not for max_bytes + 1: a read allocates what
        # it is asked for (64 MiB per cache entry of a replay). A short read (a file that
        # shrank, or a file system that returns less) and a file that grew meanwhile are
        # read on, up to the bound.
        chunks: list[bytes] = []
        wanted = min(size, max_bytes) + 1
        total = 0
        while total <= max_bytes:
            chunk = os.read(fd, wanted - total if total < wanted else max_bytes + 1 - total)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > max_bytes:
        raise FileReadError(path, what, f"it grew past {max_bytes} bytes while it was read")
    return data


def read_text(
    path: str | os.PathLike[str],
    *,
    what: str,
    max_bytes: int = MAX_TEXT_BYTES,
    inside: str | os.PathLike[str] | None = None,
) -> str:
    """A UTF-8 text file of at most ``max_bytes`` bytes (see :func:`read_bytes`).

    Raises:
        FileReadError: As :func:`read_bytes`, or the content is not UTF-8.
        OSError: The file is missing or cannot be opened.
    """
    data = read_bytes(path, what=what, max_bytes=max_bytes, inside=inside)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileReadError(
            path,
            what,
            f"it is not UTF-8 text (invalid byte at offset {exc.start}); save it as UTF-8",
        ) from None


def iter_lines(
    handle: BufferedReader,
    *,
    path: str | os.PathLike[str],
    what: str,
    max_line_bytes: int = MAX_LINE_BYTES,
    max_total_bytes: int | None = None,
) -> Iterator[bytes]:
    """The lines of an open binary file, each at most ``max_line_bytes`` long.

    Raises:
        FileReadError: A line is longer, or the lines add up to more than
            ``max_total_bytes``.
    """
    total = 0
    number = 0
    while True:
        line = handle.readline(max_line_bytes + 1)
        if not line:
            return
        number += 1
        if len(line) > max_line_bytes:
            raise FileReadError(path, what, f"line {number} is longer than {max_line_bytes} bytes")
        total += len(line)
        if max_total_bytes is not None and total > max_total_bytes:
            raise FileReadError(path, what, f"it is larger than {max_total_bytes} bytes")
        yield line
