"""Maintenance of a response cache directory: what it holds, and removing what is not needed.

:func:`cache_stats` counts the entries and bytes of a directory written by
:class:`~memlab.backends.caching.cache.CachedBackend`, by backend and model, and lists the corrupt
and temporary files. :func:`prune_cache` removes the entries that match given criteria (unused since
a time, recorded before a time, of a model or backend), the corrupt ones, and temporary files left
by interrupted writes. Neither touches an entry's content; the layout of the directory is defined in
:mod:`memlab.backends.caching.cache`.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

# The entry file layout (names, decoding) is defined once, in the cache module.
from memlab.backends.caching.cache import decode_entry, iter_entry_files, read_entry_file
from memlab.core.base.files import FileReadError, contained, io_reason

__all__ = ["CacheStats", "PruneResult", "cache_stats", "prune_cache"]

_STALE_TEMP_SECONDS = 3600.0


@dataclass
class _Entry:
    path: Path
    size: int
    mtime: float
    backend: str
    model: str
    created_at: datetime | None


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _scan(cache_dir: Path) -> tuple[list[_Entry], list[Path], list[Path]]:
    """Return (entries, corrupt or set-aside entry files, temp files) under ``cache_dir``.

    Only files named as memlab names them, in its shard directories, are listed (see
    :func:`memlab.backends.caching.cache.iter_entry_files`); an entry counts as sound only when it
    holds its own key, so prune can tell the entries it wrote from anything else.
    """
    entries: list[_Entry] = []
    corrupt: list[Path] = []
    temps: list[Path] = []
    for kind, path in iter_entry_files(cache_dir):
        if kind == "temp":
            temps.append(path)
        elif kind == "aside":
            corrupt.append(path)
        else:
            entry = _read_entry(path, cache_dir)
            if entry is None:
                corrupt.append(path)
            else:
                entries.append(entry)
    return entries, corrupt, temps


def _read_entry(path: Path, cache_dir: Path) -> _Entry | None:
    """The entry's summary, or ``None`` when it is not a sound entry for its file name."""
    try:
        stat = path.lstat()
        raw = read_entry_file(path, cache_dir)
    except OSError:  # no permission, a file replaced while listed
        return None
    _problem, completion = decode_entry(raw, path.name[: -len(".json")])
    if completion is None:
        return None
    data = json.loads(raw)  # decoded once already: cannot fail now
    summary = data.get("request")
    summary = summary if isinstance(summary, dict) else {}
    return _Entry(
        path=path,
        size=stat.st_size,
        mtime=stat.st_mtime,
        backend=str(summary.get("backend", "?")),
        model=str(summary.get("model", "?")),
        created_at=_parse_time(data.get("created_at")),
    )


@dataclass
class CacheStats:
    """Summary of a cache directory (see :func:`cache_stats`)."""

    entries: int = 0
    bytes: int = 0
    by_backend: dict[str, int] = field(default_factory=dict)
    by_model: dict[str, int] = field(default_factory=dict)
    oldest: datetime | None = None
    newest: datetime | None = None
    corrupt_files: list[str] = field(default_factory=list)
    """Entries that cannot be served and entries moved aside as corrupt."""
    temp_files: int = 0

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serialisable dict (datetimes as ISO-8601 with ``Z``)."""

        def iso(value: datetime | None) -> str | None:
            return value.strftime("%Y-%m-%dT%H:%M:%SZ") if value else None

        return {
            "entries": self.entries,
            "bytes": self.bytes,
            "by_backend": dict(sorted(self.by_backend.items())),
            "by_model": dict(sorted(self.by_model.items())),
            "oldest": iso(self.oldest),
            "newest": iso(self.newest),
            "corrupt_files": self.corrupt_files,
            "temp_files": self.temp_files,
        }


def cache_stats(cache_dir: str | os.PathLike[str]) -> CacheStats:
    """Count entries and bytes of a cache directory, by backend and by ``backend:model``."""
    entries, corrupt, temps = _scan(Path(cache_dir))
    created = [e.created_at for e in entries if e.created_at is not None]
    return CacheStats(
        entries=len(entries),
        bytes=sum(e.size for e in entries),
        by_backend=dict(Counter(e.backend for e in entries)),
        by_model=dict(Counter(f"{e.backend}:{e.model}" for e in entries)),
        oldest=min(created) if created else None,
        newest=max(created) if created else None,
        corrupt_files=[str(p) for p in corrupt],
        temp_files=len(temps),
    )


@dataclass
class PruneResult:
    """What :func:`prune_cache` removed (or would remove with ``dry_run``)."""

    removed: list[str] = field(default_factory=list)
    removed_bytes: int = 0
    kept: int = 0
    temp_files_removed: int = 0
    dry_run: bool = False
    failed: list[tuple[str, str]] = field(default_factory=list)
    """``(path, reason)`` of every file that could not be removed (a read-only directory)."""


def _size(path: Path) -> int:
    try:
        return path.lstat().st_size
    except OSError:
        return 0


def _mtime(path: Path, default: float) -> float:
    try:
        return path.lstat().st_mtime
    except OSError:
        return default


def prune_cache(
    cache_dir: str | os.PathLike[str],
    *,
    unused_since: datetime | None = None,
    created_before: datetime | None = None,
    model: str | None = None,
    backend: str | None = None,
    remove_all: bool = False,
    include_corrupt: bool = True,
    dry_run: bool = False,
) -> PruneResult:
    """Remove cache entries matching every given criterion.

    Criteria (combined with AND):

    * ``unused_since``: not read or written since this time (file modification time; hits
      refresh it). Typical use: note the time, replay every notebook/run you care about,
      then prune ``unused_since`` that time to drop entries nothing uses any more. A fresh
      ``git clone`` sets all times to the checkout time, so run the replay first.
    * ``created_before``: recorded before this time (``created_at`` in the entry).
    * ``model`` / ``backend``: only entries of this model id / backend name.

    At least one criterion, or ``remove_all=True``, is required. Entry files that cannot be
    served and entries moved aside as corrupt are removed too (``include_corrupt``), and
    temporary files left by interrupted writes are removed once older than an hour.

    Only files memlab writes are ever removed: a sound entry is recognised by its own key
    field, a corrupt or set-aside one and a temporary file by the name memlab gives it, in a
    real shard directory of the cache (a symbolic link is never followed); any other file is
    left alone. Files that cannot be removed (a read-only directory) are listed in
    ``failed`` and not counted as removed.

    Raises:
        ValueError: No criterion was given and ``remove_all`` is false.
    """
    if not remove_all and all(c is None for c in (unused_since, created_before, model, backend)):
        raise ValueError(
            "prune_cache needs a criterion (unused_since, created_before, model, backend) "
            "or remove_all=True."
        )
    for when in (unused_since, created_before):
        if when is not None and when.tzinfo is None:
            raise ValueError("prune_cache times must be timezone-aware (UTC).")
    root = Path(cache_dir)
    entries, corrupt, temps = _scan(root)
    result = PruneResult(dry_run=dry_run)
    doomed: list[tuple[Path, int]] = []
    for entry in entries:
        if _matches(entry, unused_since, created_before, model, backend):
            doomed.append((entry.path, entry.size))
        else:
            result.kept += 1
    if include_corrupt:
        doomed.extend((p, _size(p)) for p in corrupt)
    now = time.time()
    stale_temps = [t for t in temps if now - _mtime(t, now) > _STALE_TEMP_SECONDS]
    if dry_run:
        result.removed = [str(path) for path, _ in doomed]
        result.removed_bytes = sum(size for _, size in doomed)
        result.temp_files_removed = len(stale_temps)
        return result
    for path, size in doomed:
        if _remove(root, path, result.failed):
            result.removed.append(str(path))
            result.removed_bytes += size
    result.temp_files_removed = sum(_remove(root, t, result.failed) for t in stale_temps)
    for shard in sorted({p.parent for p, _ in doomed} | {t.parent for t in stale_temps}):
        with contextlib.suppress(OSError):
            shard.rmdir()  # only succeeds when empty
    return result


def _matches(
    entry: _Entry,
    unused_since: datetime | None,
    created_before: datetime | None,
    model: str | None,
    backend: str | None,
) -> bool:
    """Whether ``entry`` meets every criterion given (``None`` is no criterion)."""
    if unused_since is not None and not entry.mtime < unused_since.timestamp():
        return False
    if created_before is not None and not (
        entry.created_at is not None and entry.created_at < created_before
    ):
        return False
    if model is not None and entry.model != model:
        return False
    return backend is None or entry.backend == backend


def _remove(root: Path, path: Path, failed: list[tuple[str, str]]) -> bool:
    """Delete one listed file, after checking again that it is a file inside ``root``."""
    try:
        target = contained(path, root, "cache file")
        if not target.is_file() or target.is_symlink():
            raise FileReadError(path, "cache file", "it is no longer a regular file")
        target.unlink()
    except FileNotFoundError:
        return False  # removed by someone else meanwhile
    except OSError as exc:
        failed.append((str(path), io_reason(exc)))
        return False
    return True
