"""LLM backends: OpenAI-compatible and local llama.cpp implementations of the pipeline's one
small interface (:mod:`memlab.core.pipeline.llm`), a scripted test double, a response cache and the
registry resolving specs like ``local:smollm2`` (built-ins and plugins, each declaring its
capabilities). The simulated model (``sim:``) lives in :mod:`memlab.simulation`.

The heavy optional modules (``openai_compat``, ``llama_local``) import their SDKs lazily.

Names are imported on first use (see :mod:`memlab._lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memlab._lazy import lazy_face

if TYPE_CHECKING:
    from memlab.backends.caching.cache import CachedBackend as CachedBackend
    from memlab.backends.caching.cache import CacheMode as CacheMode
    from memlab.backends.caching.cache import request_key as request_key
    from memlab.backends.caching.cache_admin import cache_stats as cache_stats
    from memlab.backends.caching.cache_admin import prune_cache as prune_cache
    from memlab.backends.decoding.grammar import bounded_reply_tokens as bounded_reply_tokens
    from memlab.backends.local.llama_local import LocalLlamaBackend as LocalLlamaBackend
    from memlab.backends.registry import BACKENDS as BACKENDS
    from memlab.backends.registry import BackendPlugin as BackendPlugin
    from memlab.backends.registry import UnknownBackendError as UnknownBackendError
    from memlab.backends.registry import available_backends as available_backends
    from memlab.backends.registry import backend_plugin as backend_plugin
    from memlab.backends.registry import dialect_for as dialect_for
    from memlab.backends.registry import is_simulated as is_simulated
    from memlab.backends.registry import register_backend as register_backend
    from memlab.backends.registry import resolve_backend as resolve_backend
    from memlab.backends.scripted import ScriptedBackend as ScriptedBackend
    from memlab.core.pipeline.llm import GenerationParams as GenerationParams
    from memlab.core.pipeline.llm import OutputMode as OutputMode
else:  # at run time: each name is imported on first use
    __getattr__, __dir__ = lazy_face(__name__)
