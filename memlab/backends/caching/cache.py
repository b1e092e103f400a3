"""Response cache wrapping any backend, stored as files that can be committed.

Every request has a canonical key: the SHA-256 of a canonical JSON document (sorted keys, no
whitespace, UTF-8) holding the backend name, the model id, the messages, the sampling
parameters, the output mode and, in ``json_schema`` mode, the schema (other modes ignore the
schema, so it does not split their entries). Entries live at::

    <cache_dir>/<first 2 hex digits>/<sha256>.json

as pretty-printed JSON with sorted keys: a request summary (backend, model, mode, params,
messages, schema digest) and the completion, so a cache directory diffs well under version
control and the notebooks and CI can replay it offline in ``read_only`` mode.

Writes go to a temporary file in the same directory followed by ``os.replace``, so concurrent
writers and interrupted runs never leave a half-written entry under a real key. API keys never
reach an entry: backends do not put credentials in requests, and every entry passes through
:func:`memlab.core.base.redact.redact` (credential headers, secret environment variables such as
``OPENAI_API_KEY``, any ``secret_values`` given) before it is written.

Entries are checked before they are served: an entry is used only when it decodes, has this
format and holds the key of the request. Anything else is corrupt: in read-write mode the file
is moved aside to ``<key>.json.corrupt-<UTC time>`` (never overwritten), counted in
``counters.corrupt`` and logged, and the request goes to the backend; in read-only mode it is a
:class:`CacheCorruptError`. (An entry that ends exactly with the request summary this request
would be stored with, the prompt included, is decoded up to that summary only: what it yields
(the completion, or why the entry is corrupt) is what decoding the whole file gives; see
:mod:`memlab.backends.caching._cache_text`.)
A cache directory or entry that cannot be read or written at all
(a file where the directory should be, a directory in place of an entry, no permission) is a
:class:`CacheError` with a message saying what to fix.

A cache hit updates the entry file's modification time (not its content), which is what
``prune_cache(unused_since=...)`` uses; see :func:`memlab.backends.caching.cache_admin.prune_cache`
(which, with :func:`~memlab.backends.caching.cache_admin.cache_stats`, maintains a cache directory).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from memlab.backends.caching import _cache_text
from memlab.backends.caching._cache_text import (
    CACHE_FORMAT,
    canonical,
    entry_text,
    key_document,
    request_summary,
    request_texts,
)
from memlab.core.base.atomic import atomic_write_text
from memlab.core.base.files import (
    MAX_CACHE_ENTRY_BYTES,
    FileReadError,
    RealDir,
    contained,
    io_reason,
    read_bytes,
)
from memlab.core.base.jsontext import loads_json
from memlab.core.base.redact import redact, secret_values
from memlab.core.pipeline.llm import (
    Backend,
    BackendError,
    Completion,
    CompletionRequest,
    OutputMode,
)

__all__ = [
    "CACHE_FORMAT",
    "CacheCorruptError",
    "CacheCounters",
    "CacheError",
    "CacheMissError",
    "CacheMode",
    "CachedBackend",
    "decode_entry",
    "entry_path",
    "iter_entry_files",
    "read_entries",
    "read_entry_file",
    "request_key",
]

logger = logging.getLogger(__name__)

_TEMP_PREFIX = ".tmp-"
_SET_ASIDE = ".corrupt-"  # infix of entries moved aside
# The only names memlab writes in a cache directory; nothing else is read, counted or removed.
_SHARD_NAME = re.compile(r"[0-9a-f]{2}")
_ENTRY_NAME = re.compile(r"[0-9a-f]{64}\.json")
_ASIDE_NAME = re.compile(r"[0-9a-f]{64}\.json\.corrupt-\d{8}T\d{12}Z")
_TEMP_NAME = re.compile(r"\.tmp-[A-Za-z0-9_]+\.json")


class CacheMode(StrEnum):
    """How :class:`CachedBackend` uses its directory."""

    READ_WRITE = "read_write"
    """Serve hits; call the backend on a miss and store the reply."""
    READ_ONLY = "read_only"
    """Serve hits; a miss raises :class:`CacheMissError` (offline replay, CI)."""
    OFF = "off"
    """Always call the backend; neither read nor write."""


class CacheError(BackendError):
    """The cache directory or one of its entries cannot be used; the message says why.

    A :class:`~memlab.core.pipeline.llm.BackendError`, so a replay records the failed call (and
    the run reports it) instead of losing it in a worker thread.
    """


class CacheMissError(CacheError):
    """A request was not in the cache while the cache is read-only."""

    @classmethod
    def for_request(
        cls, backend: str, model: str, request: CompletionRequest, key: str, cache_dir: Path
    ) -> CacheMissError:
        """The error for a read-only miss of ``request``, saying how to record it."""
        last = str(request.messages[-1].get("content", "")) if request.messages else ""
        preview = " ".join(last[:400].split())[:80]
        return cls(
            f"Response cache miss in read-only mode: backend={backend!r} "
            f"model={model!r} mode={OutputMode(request.mode).value!r} key={key} "
            f"(last message starts {preview!r}) in {cache_dir}. Re-record it by "
            "running once with cache mode 'read_write' (needs the model), or check that "
            "the prompt, parameters and dataset are the ones the cache was recorded with."
        )


class CacheCorruptError(CacheError):
    """A cache entry is corrupt while the cache is read-only (it is left as it is)."""


def _utc_now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _touch(path: str | Path) -> None:
    """Set an entry's modification time to now (never through a symbolic link)."""
    with contextlib.suppress(OSError, NotImplementedError):
        os.utime(path, follow_symlinks=False)


def request_key(backend_name: str, model: str, request: CompletionRequest) -> str:
    """Return the canonical SHA-256 hex key of ``request`` sent to ``backend_name``/``model``.

    Args:
        backend_name: Backend name (``"openai"``, ``"local"``, ...).
        model: Model id that will answer (``request.model`` or the backend's default).
        request: The request.
    """
    return hashlib.sha256(canonical(key_document(backend_name, model, request))).hexdigest()


def entry_path(cache_dir: str | os.PathLike[str], key: str) -> Path:
    """Return the file holding the entry for ``key``."""
    return Path(_entry_name(os.fspath(cache_dir), key))


def _entry_name(cache_dir: str, key: str) -> str:
    """:func:`entry_path` as a string (building a ``Path`` costs more than reading a small
    entry, once per cache hit)."""
    return os.path.join(cache_dir, key[:2], f"{key}.json")


@dataclass
class CacheCounters:
    """Per-instance counters of a :class:`CachedBackend`."""

    hits: int = 0
    misses: int = 0
    backend_calls: int = 0
    corrupt: int = 0
    """Corrupt entries found (moved aside in read-write mode)."""


class CachedBackend:
    """Wrap ``backend`` with the file response cache.

    Args:
        backend: Any :class:`~memlab.core.pipeline.llm.Backend`.
        cache_dir: Directory of the cache (created on first write).
        mode: :class:`CacheMode` or its value (``"read_write"``, ``"read_only"``, ``"off"``).
        secret_values: Extra strings never to be written (``OPENAI_API_KEY`` always is).

    Attributes:
        counters: Hits, misses and real backend calls made through this instance.

    Hits return the stored :class:`Completion` with ``cached=True`` and ``latency_s=0.0``.
    """

    def __init__(
        self,
        backend: Backend,
        cache_dir: str | os.PathLike[str],
        mode: CacheMode | str = CacheMode.READ_WRITE,
        *,
        secret_values: Iterable[str] = (),
    ) -> None:
        self.backend = backend
        self.cache_dir = Path(cache_dir)
        self._dir_text = str(self.cache_dir)  # for _entry_name()
        self._real_dir = RealDir.of(self.cache_dir)  # resolved once, for every entry read
        self.mode = CacheMode(mode)
        self.name = backend.name
        self.counters = CacheCounters()
        self._secret_values = [s for s in secret_values if s]
        self._lock = threading.Lock()
        in_use = self.mode is not CacheMode.OFF
        if in_use and self.cache_dir.exists() and not self.cache_dir.is_dir():
            raise CacheError(
                f"cache directory {self.cache_dir} is a file, not a directory; pass a directory "
                "(it is created on the first write)"
            )

    @property
    def model(self) -> str:
        """The wrapped backend's default model."""
        return self.backend.model

    def __repr__(self) -> str:
        return f"CachedBackend({self.backend!r}, {str(self.cache_dir)!r}, {self.mode.value!r})"

    def key_for(self, request: CompletionRequest) -> str:
        """Return the cache key of ``request`` for the wrapped backend."""
        return request_key(self.backend.name, request.model or self.backend.model, request)

    def complete(self, request: CompletionRequest) -> Completion:
        """Serve ``request`` from the cache or the wrapped backend (see :class:`CacheMode`).

        Raises:
            CacheMissError: Read-only mode and the request is not cached.
            CacheCorruptError: Read-only mode and the entry is corrupt.
            CacheError: The entry cannot be read or written (I/O).
        """
        if self.mode is CacheMode.OFF:
            self._count("backend_calls")
            return self.backend.complete(request)
        model = request.model or self.backend.model
        # The key's text and the entry's expected end, the prompt encoded once for both.
        texts = request_texts(self.backend.name, model, request)
        if texts is None:
            key, tail = request_key(self.backend.name, model, request), None
        else:
            key, tail = hashlib.sha256(texts[0]).hexdigest(), texts[1]
        name = _entry_name(self._dir_text, key)
        cached = self._load(name, key, tail)
        if cached is not None:
            self._count("hits")
            _touch(name)  # marks the entry as used for prune --unused-since
            return cached
        self._count("misses")
        if self.mode is CacheMode.READ_ONLY:
            raise CacheMissError.for_request(self.backend.name, model, request, key, self.cache_dir)
        self._count("backend_calls")
        completion = self.backend.complete(request)
        self._store(Path(name), key, model, request, completion)
        return completion

    def serve(
        self, kind: str, request: Mapping[str, Any], fetch: Callable[[], Completion]
    ) -> Completion:
        """A request of another kind than a chat completion (e.g. ``embeddings``), served
        from the cache or by ``fetch``, in the cache's mode.

        Its key is the SHA-256 of ``{"format", "kind", **request}`` (a chat request's key
        document has no ``kind``, so the two never share a key); its entry has the same
        layout, with ``request`` plus its kind as the summary and ``fetch``'s reply as the
        completion, so listing, pruning and snapshots treat it as any entry.

        Raises:
            CacheMissError: Read-only mode and the request is not cached.
            CacheCorruptError: Read-only mode and the entry is corrupt.
            CacheError: The entry cannot be read or written (I/O).
        """
        if self.mode is CacheMode.OFF:
            self._count("backend_calls")
            return fetch()
        summary = {"kind": kind, **request}
        key = hashlib.sha256(canonical({"format": _cache_text.CACHE_FORMAT, **summary})).hexdigest()
        name = _entry_name(self._dir_text, key)
        cached = self._load(name, key)
        if cached is not None:
            self._count("hits")
            _touch(name)
            return cached
        self._count("misses")
        if self.mode is CacheMode.READ_ONLY:
            raise CacheMissError(
                f"Response cache miss in read-only mode: {kind} request key={key} in "
                f"{self.cache_dir}. Re-record it by running once with cache mode 'read_write'."
            )
        self._count("backend_calls")
        completion = fetch()
        self._write(Path(name), key, summary, completion)
        return completion

    def put(self, request: CompletionRequest, completion: Completion) -> None:
        """Store ``completion``, which another process got for ``request``, unless it is cached.

        A sweep's remote workers cannot write the cache directory: their new replies come
        back to the driver, which stores them here. A sound entry already there is kept (the
        first reply recorded wins, as with concurrent writers); a corrupt one is moved aside.
        """
        if self.mode is not CacheMode.READ_WRITE:
            return
        model = request.model or self.backend.model
        key = request_key(self.backend.name, model, request)
        path = entry_path(self.cache_dir, key)
        if self._load(path, key) is None:
            self._store(path, key, model, request, completion)

    def mark_used(self, key: str) -> None:
        """Record that another process served ``key`` from this cache (for ``prune``)."""
        with contextlib.suppress(CacheError):
            _touch(self._inside(entry_path(self.cache_dir, key)))

    def _count(self, name: str) -> None:
        with self._lock:
            setattr(self.counters, name, getattr(self.counters, name) + 1)

    def _inside(self, path: Path) -> Path:
        """``path`` checked to lie in a real shard directory of the cache (no symbolic link
        on the way; the entry itself is opened without following links)."""
        try:
            return contained(path.parent, self._real_dir, "cache entry") / path.name
        except FileReadError as exc:
            raise CacheError(
                f"{exc.reason}: refusing to use {path}; remove the link from the cache "
                "directory (memlab writes real directories and files only)"
            ) from None

    def _load(self, name: str | Path, key: str, tail: str | None = None) -> Completion | None:
        """The entry for ``key`` (in the file ``name``), or ``None`` when there is none (or
        it was set aside). ``name`` is made a ``Path`` only when something is wrong."""
        try:
            # Checks that the entry lies in a real shard directory of the cache (no link on
            # the way) before it opens it, so the path is checked once per hit.
            raw = read_bytes(
                name, what="cache entry", max_bytes=MAX_CACHE_ENTRY_BYTES, inside=self._real_dir
            )
        except FileNotFoundError:
            return None
        except FileReadError as exc:  # a link, a FIFO, a device or a huge file in its place
            path = self._inside(Path(name))  # a link on the way: a CacheError saying what to fix
            if not path.is_dir() or path.is_symlink():
                self._set_aside(path, exc.reason)
                return None
            raise CacheError(
                f"cache entry {path} cannot be read (it is a directory); remove it"
            ) from None
        except OSError as exc:  # a directory in its place, no permission, a file as parent
            raise CacheError(
                f"cache entry {Path(name)} cannot be read ({io_reason(exc)}); remove or fix "
                f"it, or check that {self.cache_dir} is a cache directory"
            ) from None
        problem, completion = decode_entry(raw, key, tail)
        if completion is None:
            self._set_aside(self._inside(Path(name)), problem)
        return completion

    def _set_aside(self, path: Path, problem: str) -> None:
        self._count("corrupt")
        if self.mode is CacheMode.READ_ONLY:
            raise CacheCorruptError(
                f"cache entry {path} is corrupt ({problem}); read-only mode leaves it as it is: "
                "delete it and re-record with cache mode 'read_write'"
            )
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        aside = path.with_name(f"{path.name}{_SET_ASIDE}{stamp}")
        try:
            os.replace(path, aside)
        except FileNotFoundError:
            return  # another worker moved it aside first
        except OSError as exc:
            raise CacheError(
                f"cache entry {path} is corrupt ({problem}) and cannot be moved aside "
                f"({io_reason(exc)}); remove it by hand"
            ) from None
        logger.warning("cache entry %s is corrupt (%s); moved aside to %s", path, problem, aside)

    def _store(
        self,
        path: Path,
        key: str,
        model: str,
        request: CompletionRequest,
        completion: Completion,
    ) -> None:
        self._write(path, key, request_summary(self.backend.name, model, request), completion)

    def _write(
        self, path: Path, key: str, summary: Mapping[str, Any], completion: Completion
    ) -> None:
        stored = completion.to_dict()
        stored.pop("cached", None)
        entry = {
            "format": _cache_text.CACHE_FORMAT,  # read where it is defined (tests change it)
            "key": key,
            "created_at": _utc_now_iso(),
            "request": dict(summary),
            "completion": stored,
        }
        entry = redact(entry, secret_values(self._secret_values))
        text = entry_text(entry)
        path = self._inside(path)
        try:
            atomic_write_text(path, text, temp_prefix=_TEMP_PREFIX, temp_suffix=".json")
        except OSError as exc:
            raise CacheError(
                f"cannot write cache entry {path} ({io_reason(exc)}); check that "
                f"{self.cache_dir} is a writable directory"
            ) from None


def _decode_head(text: str, tail: str) -> Any:
    """The entry ``text`` decoded without its request summary when it ends with ``tail``
    (else ``None``, and the whole text is decoded). ``tail`` is valid JSON that cannot
    start inside a string (it begins with a comma and a line break), so the entry is valid
    JSON exactly when its head, closed with a brace, is a non-empty object."""
    if not text.endswith(tail):
        return None
    try:
        head = loads_json(text[: len(text) - len(tail)] + "\n}")
    except ValueError:
        return None  # the full decode says what is wrong
    return head if type(head) is dict and head else None


def decode_entry(raw: bytes, key: str, tail: str | None = None) -> tuple[str, Completion | None]:
    """(problem, completion): the stored completion when the entry is sound and for ``key``.

    ``tail``: the request summary's text the entry should end with (see
    :func:`~memlab.backends.caching._cache_text.request_texts`); when it does, only the rest is
    decoded."""
    try:
        text = raw.decode("utf-8")
        data = _decode_head(text, tail) if tail is not None else None
        if data is None:
            data = loads_json(text)
    except UnicodeDecodeError as exc:
        return f"not UTF-8: invalid byte at offset {exc.start}", None
    except ValueError as exc:  # invalid JSON or too deep
        return f"not valid JSON: {str(exc)[:200]}", None
    expected = _cache_text.CACHE_FORMAT
    if not isinstance(data, dict) or data.get("format") != expected:
        return f"not a cache entry of format {expected}", None
    if data.get("key") != key:
        return "it holds the entry of another request (its key differs from its file name)", None
    stored = data.get("completion")
    try:
        if not isinstance(stored, dict) or not isinstance(stored.get("text"), str):
            raise TypeError("no completion text")
        if not isinstance(stored.get("finish_reason"), str | None):
            raise TypeError("finish_reason is not a string")
        completion = Completion(
            text=stored["text"],
            prompt_tokens=int(stored.get("prompt_tokens", 0)),
            completion_tokens=int(stored.get("completion_tokens", 0)),
            latency_s=0.0,
            finish_reason=stored.get("finish_reason"),
            model=str(stored.get("model", "")),
            backend=str(stored.get("backend", "")),
            cached=True,
            # Replaced when the reply came in; an older entry's text is made safe here.
            replaced_chars=int(stored.get("replaced_chars", 0)),
            cached_prompt_tokens=int(stored.get("cached_prompt_tokens", 0)),
        )
    except (ValueError, TypeError, OverflowError) as exc:
        return f"bad completion: {str(exc)[:200]}", None
    return "", completion


# --- a whole directory (remote workers, cache_admin) -----------------------------------


def iter_entry_files(cache_dir: Path) -> Iterator[tuple[str, Path]]:
    """``(kind, path)`` of every file memlab may have written in ``cache_dir``: ``"entry"``,
    ``"aside"`` (moved aside as corrupt) or ``"temp"`` (an interrupted write).

    Only real shard directories (two hex digits, not symbolic links) are entered and only
    regular files with the names memlab gives are listed; anything else in the directory is
    someone else's and left alone.
    """
    if not cache_dir.exists():
        return
    if not cache_dir.is_dir():
        raise CacheError(f"cache directory {cache_dir} is a file, not a directory")
    try:
        with os.scandir(cache_dir) as shards:
            names = sorted(
                s.name
                for s in shards
                if _SHARD_NAME.fullmatch(s.name) and s.is_dir(follow_symlinks=False)
            )
        for shard in names:
            with os.scandir(cache_dir / shard) as files:
                found = sorted((f.name for f in files if f.is_file(follow_symlinks=False)), key=str)
            for name in found:
                kind = _file_kind(shard, name)
                if kind is not None:
                    yield kind, cache_dir / shard / name
    except OSError as exc:
        raise CacheError(f"cannot list cache directory {cache_dir}: {io_reason(exc)}") from None


def _file_kind(shard: str, name: str) -> str | None:
    if _TEMP_NAME.fullmatch(name):
        return "temp"
    if not name.startswith(shard):
        return None  # an entry always lives in the shard of its key's first two digits
    if _ENTRY_NAME.fullmatch(name):
        return "entry"
    if _ASIDE_NAME.fullmatch(name):
        return "aside"
    return None


def read_entry_file(path: Path, cache_dir: Path) -> bytes:
    """The bytes of an entry file listed by :func:`iter_entry_files` (bounded, no links).

    Raises:
        OSError: It cannot be read (:class:`~memlab.core.base.files.FileReadError` for a file
            memlab refuses to read).
    """
    return read_bytes(path, what="cache entry", max_bytes=MAX_CACHE_ENTRY_BYTES, inside=cache_dir)


def read_entries(cache_dir: str | os.PathLike[str]) -> dict[str, Completion | str]:
    """Every entry of ``cache_dir`` by key: its completion, or why it cannot be served.

    For processes that cannot read the directory themselves (a sweep's remote workers, see
    :class:`~memlab.backends.caching.memory_cache.SnapshotCache`). Temporary and set-aside files are
    skipped.

    Raises:
        CacheError: ``cache_dir`` is a file or cannot be listed.
    """
    root = Path(cache_dir)
    entries: dict[str, Completion | str] = {}
    for kind, path in iter_entry_files(root):
        if kind != "entry":
            continue
        key = path.name[: -len(".json")]
        try:
            raw = read_entry_file(path, root)
        except OSError as exc:
            entries[key] = f"cannot be read ({io_reason(exc)})"
            continue
        problem, completion = decode_entry(raw, key)
        entries[key] = completion if completion is not None else problem
    return entries
