"""The response cache for a process that cannot see the cache directory.

A sweep on a Dask cluster replays owners in worker processes on other machines, while the
response cache lives on the driver's disk (see :mod:`memlab.sweeps.executors`). The driver reads
the cache once (:func:`~memlab.backends.caching.cache.read_entries`) and sends that snapshot to
every worker; a :class:`SnapshotCache` serves hits from it with the same keys and the same modes as
:class:`~memlab.backends.caching.cache.CachedBackend`, calls the backend on a miss in read-write
mode and keeps the new replies in :attr:`SnapshotCache.recorded`. They travel back with the task's
result and the driver stores them (:meth:`CachedBackend.put`), so only the driver writes the cache
directory.

A reply recorded by one worker during a sweep is not visible to the other workers until the
next sweep (they call the backend for it themselves); replays never depend on that, since the
same request always gets the first recorded reply once it is stored.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

from memlab.backends.caching.cache import (
    CacheCorruptError,
    CacheMissError,
    CacheMode,
    entry_path,
    request_key,
)
from memlab.core.pipeline.llm import Backend, Completion, CompletionRequest

__all__ = ["SnapshotCache"]


class SnapshotCache:
    """Wrap ``backend`` with a read-only snapshot of a cache directory, recording new replies.

    Args:
        backend: The backend to call on a miss (read-write mode).
        entries: The snapshot: completion, or why the entry cannot be served, by key.
        mode: The cache mode of the sweep (``OFF`` calls the backend and records nothing).
        cache_dir: The directory the snapshot was read from (named in error messages).

    Attributes:
        recorded: ``(request, completion)`` of every backend call, for the cache's owner.
        used: Keys served from the snapshot (their files' times are refreshed by the owner).
    """

    def __init__(
        self,
        backend: Backend,
        entries: Mapping[str, Completion | str],
        mode: CacheMode | str,
        cache_dir: Path,
    ) -> None:
        self.backend = backend
        self.name = backend.name
        self.mode = CacheMode(mode)
        self.cache_dir = cache_dir
        self.recorded: list[tuple[CompletionRequest, Completion]] = []
        self.used: list[str] = []
        self._entries = entries
        self._new: dict[str, Completion] = {}

    @property
    def model(self) -> str:
        """The wrapped backend's default model."""
        return self.backend.model

    def complete(self, request: CompletionRequest) -> Completion:
        """Serve ``request`` from the snapshot, this task's new replies or the backend.

        Raises:
            CacheMissError: Read-only mode and the request is not cached.
            CacheCorruptError: Read-only mode and the entry is corrupt.
        """
        if self.mode is CacheMode.OFF:
            return self.backend.complete(request)
        model = request.model or self.backend.model
        key = request_key(self.backend.name, model, request)
        entry = self._new.get(key) or self._entries.get(key)
        if isinstance(entry, Completion):
            if key not in self._new:
                self.used.append(key)
            return dataclasses.replace(entry, latency_s=0.0, cached=True)
        if self.mode is CacheMode.READ_ONLY:
            if entry is not None:
                raise CacheCorruptError(
                    f"cache entry {entry_path(self.cache_dir, key)} is corrupt ({entry}); "
                    "read-only mode leaves it as it is: delete it and re-record with cache "
                    "mode 'read_write'"
                )
            raise CacheMissError.for_request(self.backend.name, model, request, key, self.cache_dir)
        completion = self.backend.complete(request)
        self.recorded.append((request, completion))
        self._new[key] = completion
        return completion
