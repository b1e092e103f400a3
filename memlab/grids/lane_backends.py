"""The backends of a sweep's lanes: built once per spec, shared, wrapped in the response cache.

The driver builds them through :class:`LaneBackends`; Dask workers build their own with the
same factory (:mod:`memlab.sweeps.remote`), which is why :func:`registry_backend` is a
module-level function (a ``functools.partial`` of it pickles).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from memlab.backends.caching.cache import CachedBackend, CacheMode
from memlab.backends.costs.spend import SpendGuard, SpendLimit
from memlab.backends.local.llama_batch import BatchOptions
from memlab.backends.registry import backend_options, cacheable, resolve_backend
from memlab.backends.remote.rate_limit import RateLimited, RateLimiters
from memlab.core.pipeline.llm import Backend

__all__ = ["BackendFactory", "LaneBackends", "registry_backend"]

BackendFactory = Callable[[str], Backend]
"""Builds the backend for a lane's backend spec (e.g. ``"local:smollm2"``)."""


class LaneBackends:
    """One backend per spec, built on first use and shared by all lanes (thread-safe).

    With a ``cache_dir`` every backend is wrapped in the response cache; with a ``spend``
    limit, every backend's calls beneath the cache count against it
    (:class:`~memlab.backends.costs.spend.SpendGuard`). Backends paced by a rate limiter share
    one per endpoint and model from ``rates`` (default: a pool of its own, with no configured
    limits, that learns the servers' limits from their replies).
    """

    def __init__(
        self,
        factory: BackendFactory,
        cache_dir: Path | None,
        cache_mode: CacheMode,
        spend: SpendLimit | None = None,
        rates: RateLimiters | None = None,
    ) -> None:
        self._factory = factory
        self._cache_dir = cache_dir
        self._cache_mode = cache_mode
        self._spend = spend
        self._rates = rates if rates is not None else RateLimiters()
        self._built: dict[str, Backend] = {}
        self._lock = threading.Lock()

    @property
    def factory(self) -> BackendFactory:
        """What builds a backend from a spec (remote workers build their own with it)."""
        return self._factory

    @property
    def rates(self) -> RateLimiters:
        """The pace of the rate-limited backends (their limits go to remote workers)."""
        return self._rates

    @property
    def cache_dir(self) -> Path | None:
        """The response cache directory, or ``None``."""
        return self._cache_dir

    @property
    def cache_mode(self) -> CacheMode:
        """How the response cache is used."""
        return self._cache_mode

    def caches(self, spec: str) -> bool:
        """Whether replies of ``spec`` go through the response cache."""
        return (
            self._cache_dir is not None
            and self._cache_mode is not CacheMode.OFF
            and cacheable(spec)
        )

    def get(self, spec: str) -> Backend:
        """The (cached) backend for ``spec``."""
        with self._lock:
            if spec not in self._built:
                backend = self._factory(spec)
                if isinstance(backend, RateLimited):
                    backend.rate_limiter = self._rates.get(*backend.rate_limit_key(), spec)
                if self._spend is not None:
                    backend = SpendGuard(backend, spec, self._spend)
                if self._cache_dir is not None and self.caches(spec):
                    backend = CachedBackend(backend, self._cache_dir, mode=self._cache_mode)
                self._built[spec] = backend
            return self._built[spec]


def registry_backend(spec: str, dataset: Path, batch: BatchOptions | None = None) -> Backend:
    """The default backend factory of a sweep: the registry, giving backends that answer
    from the dataset (``sim:``) its path and the local model the sweep's ``local_batch``.
    Module-level so that a ``functools.partial`` of it pickles (remote workers build their
    backends with it)."""
    return resolve_backend(spec, **backend_options(spec, dataset, batch))
