"""Memory stores: a crash-safe, multi-process JSON file store and an in-memory store.

:class:`JsonFileStorage` guarantees:

* **atomic saves** - the document is written to a unique temporary file in the same directory,
  flushed and fsynced, ``os.replace``-d over the target, and the directory is fsynced. A reader
  (or a crash) sees the old document or the new one, never a mix. A failed save removes its
  temporary file and leaves the file and the cache unchanged.
* **no lost updates** - :meth:`JsonFileStorage.modify` holds an inter-process file lock
  (``<path>.lock``) around reload -> change -> save.
* **no silent data loss** - a corrupt file (invalid JSON, not an object, missing required keys)
  is renamed to ``<name>.corrupt-<UTC timestamp>`` and :class:`CorruptMemoryError` is raised;
  later loads start from an empty document while the preserved copy stays.
* **cheap loads** - documents are cached per path and re-read only when the file's
  modification time, size or inode changes. Callers always get deep copies.
"""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import os
import stat
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol, cast

import filelock

from memlab.core.base.atomic import default_file_mode, fsync_directory
from memlab.core.base.files import MAX_RUN_FILE_BYTES, io_reason, open_regular
from memlab.core.base.jsontext import JsonDepthError, dumps_indented, loads_json, scan_json
from memlab.core.jsondoc.document import (
    MemoryDocument,
    copy_document,
    create_empty_memory,
    document_problems,
    utc_iso,
    utc_now,
)
from memlab.errors import MemlabError

__all__ = [
    "CorruptMemoryError",
    "InMemoryStorage",
    "JsonFileStorage",
    "MemoryStorage",
    "StorageError",
    "clear_storage_cache",
]

logger = logging.getLogger(__name__)

Document = MemoryDocument


class StorageError(MemlabError):
    """A memory store could not be used as asked: the JSON memory document of the pipeline or
    the tiered memory database (the message says what is wrong and how to fix it).

    Attributes:
        path: The file concerned (``None`` when the problem is a value, not a file).
    """

    def __init__(self, message: str, *, path: Path | None = None) -> None:
        self.path = path
        super().__init__(message)


class CorruptMemoryError(StorageError):
    """The memory file was unreadable; it has been preserved under another name.

    Attributes:
        path: The memory file.
        preserved_path: Where the corrupt content now lives.
        detail: What is wrong (with the JSON error position when it is a syntax error).
    """

    def __init__(self, path: Path, preserved_path: Path, detail: str) -> None:
        self.preserved_path = preserved_path
        self.detail = detail
        super().__init__(
            f"memory file {path} is corrupt ({detail}); it was preserved as {preserved_path} and "
            "the next load starts from an empty memory. Inspect or repair the preserved copy and "
            f"move it back to {path} to restore it.",
            path=path,
        )


class MemoryStorage(Protocol):
    """Where a memory document lives."""

    def load(self) -> Document:
        """Return the document (possibly from a cache); a deep copy the caller may change."""
        ...

    def reload(self) -> Document:
        """Return the document read afresh, bypassing any cache."""
        ...

    def save(self, memory: Document, now: datetime | None = None) -> None:
        """Store a copy of ``memory`` with ``lastUpdated`` set to ``now``; never mutates it."""
        ...

    def modify(self, fn: Callable[[Document], Document]) -> Document:
        """Atomically load the fresh document, apply ``fn`` and save; return the saved copy.

        ``fn`` gets a private copy and returns the new document. When it returns that same
        copy, the store keeps it as it is (stamped, not copied), so ``fn`` must not keep
        references into it; any other object is copied.
        """
        ...


def _stamped(memory: Document, now: datetime | None, clock: Callable[[], datetime]) -> Document:
    if not isinstance(memory, dict):
        raise StorageError(f"a memory document must be a dict, got {type(memory).__name__}")
    try:
        document = copy_document(memory)
    except (TypeError, ValueError, RecursionError) as exc:
        raise StorageError(f"memory document is not JSON-serialisable: {exc}") from exc
    _plain, bad = scan_json(document)  # a copy holds plain JSON types only
    if bad is not None:
        raise StorageError(f"memory document holds {bad}, which JSON cannot represent")
    document["lastUpdated"] = utc_iso(now if now is not None else clock())
    return document


def _kept(
    result: Document, given: Document, now: datetime | None, clock: Callable[[], datetime]
) -> Document:
    """What ``modify`` stores: the private copy ``fn`` was given and returned, or a copy."""
    if result is given:
        return _adopted(result, now, clock)
    return _stamped(result, now, clock)  # fn built a new object that others may still hold


def _adopted(memory: Document, now: datetime | None, clock: Callable[[], datetime]) -> Document:
    """``memory`` itself, checked and stamped in place: for the store's own private copy.

    Anything but a plain JSON tree (tuples, subclasses, other objects, shared or
    self-containing containers) takes the copying path of :func:`_stamped`, which turns it
    into JSON or refuses it.
    """
    if not isinstance(memory, dict):
        raise StorageError(f"a memory document must be a dict, got {type(memory).__name__}")
    plain, bad = scan_json(memory)
    if not plain:
        return _stamped(memory, now, clock)
    if bad is not None:
        raise StorageError(f"memory document holds {bad}, which JSON cannot represent")
    memory["lastUpdated"] = utc_iso(now if now is not None else clock())
    return memory


def _checked_result(value: object) -> Document:
    if not isinstance(value, dict):
        raise TypeError(f"modify() callback must return the new document dict, got {value!r}")
    return cast(Document, value)  # its shape is checked where it is written


# (st_mtime_ns, st_size, st_ino) of the file a cached document was read from or written to.
_Signature = tuple[int, int, int]


@dataclass
class _CacheEntry:
    signature: _Signature
    document: Document


_cache: dict[Path, _CacheEntry] = {}
_cache_lock = threading.Lock()


def clear_storage_cache() -> None:
    """Forget every cached document (the next loads re-read their files)."""
    with _cache_lock:
        _cache.clear()


def _signature(st: os.stat_result) -> _Signature:
    return (st.st_mtime_ns, st.st_size, st.st_ino)


class JsonFileStorage:
    """A memory document in a JSON file (see the module docstring for the guarantees).

    Args:
        path: The memory file; its directory is created on the first save.
        lock_timeout: Seconds to wait for the inter-process lock before raising
            :class:`StorageError`.
        clock: Source of ``lastUpdated`` and of the corrupt-copy timestamp.
        durable: fsync the file and its directory on each save (the default). ``False`` keeps
            the atomic temp-file + ``os.replace`` (readers never see a torn file) but skips the
            fsyncs, for scratch stores such as a replay lane's that are rebuilt on every run.
        indent: JSON indentation of the file (2, readable); ``None`` writes compact JSON,
            about three times faster to serialise.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        lock_timeout: float = 30.0,
        clock: Callable[[], datetime] = utc_now,
        durable: bool = True,
        indent: int | None = 2,
    ) -> None:
        self.path = Path(path).absolute()
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self.lock_timeout = lock_timeout
        self._clock = clock
        self.durable = durable
        self.indent = indent
        self._lock = filelock.FileLock(self.lock_path, timeout=lock_timeout)

    def __repr__(self) -> str:
        return f"JsonFileStorage({str(self.path)!r})"

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the inter-process lock (reentrant within a thread)."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._lock.acquire()
        except filelock.Timeout as exc:
            raise StorageError(
                f"could not lock {self.lock_path} within {self.lock_timeout} s; another process "
                "is holding it. Retry, or raise lock_timeout.",
                path=self.lock_path,
            ) from exc
        except OSError as exc:
            raise StorageError(f"cannot lock {self.lock_path}: {exc}", path=self.lock_path) from exc
        try:
            yield
        finally:
            self._lock.release()

    # -- reading -------------------------------------------------------------------------------
    def load(self) -> Document:
        """Return the document, from the cache when the file has not changed.

        Raises:
            CorruptMemoryError: The file was corrupt (it has been preserved).
            StorageError: The file could not be read.
        """
        return self._read(use_cache=True)

    def reload(self) -> Document:
        """Return the document read from the file, refreshing the cache."""
        return self._read(use_cache=False)

    def _read(self, *, use_cache: bool) -> Document:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            self._forget()
            return create_empty_memory(self._clock())
        except OSError as exc:
            raise StorageError(
                f"cannot read memory file {self.path}: {exc}", path=self.path
            ) from exc
        if use_cache:
            with _cache_lock:
                entry = _cache.get(self.path)
                if entry is not None and entry.signature == _signature(st):
                    return copy_document(entry.document)
        try:
            # Only a regular file of bounded size (never a FIFO or a device) is read.
            with open_regular(
                self.path, what="memory file", max_bytes=MAX_RUN_FILE_BYTES
            ) as handle:
                # The signature of the inode actually read; a concurrent os.replace cannot
                # change it.
                signature = _signature(os.fstat(handle.fileno()))
                raw = handle.read(MAX_RUN_FILE_BYTES + 1)
        except FileNotFoundError:
            self._forget()
            return create_empty_memory(self._clock())
        except OSError as exc:
            raise StorageError(
                f"cannot read memory file {self.path}: {io_reason(exc)}", path=self.path
            ) from exc
        document, problem = self._decode(raw)
        if problem is not None:
            self._quarantine(signature, problem)
            # The file changed under us instead of being corrupt: read it again.
            return self._read(use_cache=False)
        assert document is not None
        with _cache_lock:
            _cache[self.path] = _CacheEntry(signature, document)
        return copy_document(document)

    @staticmethod
    def _decode(raw: bytes) -> tuple[Document | None, str | None]:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            return None, f"not UTF-8 text: invalid byte at offset {exc.start}"
        try:
            value = loads_json(text)
        except json.JSONDecodeError as exc:
            return None, f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        except JsonDepthError as exc:
            return None, str(exc)
        problems = document_problems(value)
        if problems:
            return None, "; ".join(problems)
        return value, None

    def _quarantine(self, signature: _Signature, detail: str) -> None:
        """Rename the corrupt file aside and raise, unless it was replaced meanwhile."""
        with self.locked():
            try:
                current = _signature(os.stat(self.path))
            except FileNotFoundError:
                return
            except OSError as exc:
                raise StorageError(
                    f"cannot inspect memory file {self.path}: {exc}", path=self.path
                ) from exc
            if current != signature:
                return
            stamp = self._clock().strftime("%Y%m%dT%H%M%SZ")
            preserved = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
            counter = 0
            while preserved.exists():
                counter += 1
                preserved = self.path.with_name(f"{self.path.name}.corrupt-{stamp}-{counter}")
            try:
                os.rename(self.path, preserved)
            except OSError as exc:
                raise StorageError(
                    f"memory file {self.path} is corrupt ({detail}) and could not be moved "
                    f"aside to {preserved}: {exc}. Move or repair it by hand.",
                    path=self.path,
                ) from exc
            fsync_directory(self.path.parent)
            self._forget()
        error = CorruptMemoryError(self.path, preserved, detail)
        logger.error("%s", error)
        raise error

    def _forget(self) -> None:
        with _cache_lock:
            _cache.pop(self.path, None)

    # -- writing -------------------------------------------------------------------------------
    def save(self, memory: Document, now: datetime | None = None) -> None:
        """Atomically write a copy of ``memory`` with ``lastUpdated`` set to ``now``.

        Raises:
            StorageError: The document could not be serialised or written; the file and the
                cache are unchanged.
        """
        with self.locked():
            self._write(_stamped(memory, now, self._clock))

    def modify(self, fn: Callable[[Document], Document], now: datetime | None = None) -> Document:
        """Under the file lock: reload, ``fn(document)``, save; return the saved document.

        ``fn`` receives a private copy and returns the new document: that same object,
        changed, is kept as it is (stamped, not copied), so ``fn`` must not keep references
        into it; any other object is copied. Exceptions from ``fn`` propagate and nothing is
        written.
        """
        with self.locked():
            current = self.reload()
            document = _kept(_checked_result(fn(current)), current, now, self._clock)
            self._write(document)
            return copy_document(document)

    def _write(self, document: Document) -> None:
        """Write ``document`` (owned by the store from now on) atomically and cache it."""
        try:
            # NaN and Infinity were refused by _stamped; dumps_indented is json.dumps(indent=...)
            # made faster.
            if self.indent is None:
                data = json.dumps(document, ensure_ascii=False, allow_nan=False)
            else:
                data = dumps_indented(document, self.indent)
        except (TypeError, ValueError, RecursionError) as exc:
            raise StorageError(
                f"memory document cannot be saved to {self.path}: not JSON-serialisable ({exc})",
                path=self.path,
            ) from exc
        directory = self.path.parent
        try:
            directory.mkdir(parents=True, exist_ok=True)
            fd, tmp_name = tempfile.mkstemp(
                prefix=f".{self.path.name}.", suffix=".tmp", dir=directory
            )
        except OSError as exc:
            raise StorageError(
                f"cannot create a temporary file in {directory}: {exc}", path=self.path
            ) from exc
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data.encode("utf-8"))
                handle.flush()
                if self.durable:
                    os.fsync(handle.fileno())
                os.fchmod(handle.fileno(), self._file_mode())
                # rename keeps inode and mtime, so this is the signature of the new file.
                signature = _signature(os.fstat(handle.fileno()))
            os.replace(tmp_name, self.path)
        except BaseException as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp_name)
            if isinstance(exc, Exception):
                raise StorageError(
                    f"cannot save memory file {self.path}: {exc}", path=self.path
                ) from exc
            raise
        if self.durable:
            fsync_directory(directory)
        with _cache_lock:
            _cache[self.path] = _CacheEntry(signature, document)

    def _file_mode(self) -> int:
        try:
            return stat.S_IMODE(os.stat(self.path).st_mode)  # keep an existing file's mode
        except OSError:
            return default_file_mode()  # a new file follows the umask


class InMemoryStorage:
    """A store that keeps the document in memory (for tests and the workbench).

    Args:
        initial: The starting document (copied); ``None`` starts empty.
        clock: Source of ``lastUpdated``.

    Until the first save, an empty store loads as a new empty memory stamped with the clock's
    current time, as :class:`JsonFileStorage` does before its file exists. (Replays rely on
    this: their prompts, and so their cache keys, are the same with either store.)

    Attributes:
        save_count: How many saves succeeded.
    """

    def __init__(
        self, initial: Document | None = None, *, clock: Callable[[], datetime] = utc_now
    ) -> None:
        self._clock = clock
        self._lock = threading.RLock()
        self._document = copy.deepcopy(initial) if initial is not None else None
        self.save_count = 0

    def load(self) -> Document:
        """Return a copy of the stored document."""
        with self._lock:
            if self._document is None:
                return create_empty_memory(self._clock())
            return copy_document(self._document)

    def view(self) -> Document:
        """The stored document itself, not a copy: for a reader that never changes it (a
        replay's snapshots). The store never changes a document it keeps; every save and
        modify keeps a new one, so a view stays as it was when taken."""
        with self._lock:
            if self._document is None:
                return create_empty_memory(self._clock())
            return self._document

    def reload(self) -> Document:
        """Same as :meth:`load` (nothing is cached)."""
        return self.load()

    def save(self, memory: Document, now: datetime | None = None) -> None:
        """Store a copy of ``memory`` with ``lastUpdated`` set; ``memory`` is not changed."""
        document = _stamped(memory, now, self._clock)
        with self._lock:
            self._document = document
            self.save_count += 1

    def modify(self, fn: Callable[[Document], Document], now: datetime | None = None) -> Document:
        """Apply ``fn`` to a copy of the document and keep its result; return a copy.

        As with :meth:`JsonFileStorage.modify`, the copy ``fn`` was given is kept as it is
        when ``fn`` returns it.
        """
        with self._lock:
            current = self.load()
            document = _kept(_checked_result(fn(current)), current, now, self._clock)
            self._document = document
            self.save_count += 1
            return copy_document(document)
