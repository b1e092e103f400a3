"""LLM backends: OpenAI-compatible and local llama.cpp implementations of the pipeline's one
small interface (:mod:`memlab.core.llm`), a scripted test double, a response cache and the
registry resolving specs like ``local:smollm2`` (built-ins and plugins, each declaring its
capabilities). The simulated model (``sim:``) lives in :mod:`memlab.simulation`.

The heavy optional modules (``openai_compat``, ``llama_local``) import their SDKs lazily.

Names are imported on first use (see :mod:`memlab._lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memlab._lazy import lazy_face

if TYPE_CHECKING:
    from memlab.backends.cache import (
        CACHE_FORMAT,
        CacheCorruptError,
        CacheCounters,
        CachedBackend,
        CacheMissError,
        CacheMode,
        entry_path,
        request_key,
    )
    from memlab.backends.cache_admin import CacheStats, PruneResult, cache_stats, prune_cache
    from memlab.backends.grammar import (
        GrammarDialect,
        bounded_reply_tokens,
        compile_grammar,
        longest_text_bytes,
        to_grammar_schema,
        worst_case_tokens,
    )
    from memlab.backends.llama_local import (
        BUNDLED_MODEL_FILE,
        BUNDLED_MODEL_ID,
        DEFAULT_N_CTX,
        LocalLlamaBackend,
        bundled_model_path,
        clear_model_cache,
        default_threads,
        load_model,
    )
    from memlab.backends.llama_server import (
        LlamaServer,
        free_port,
    )
    from memlab.backends.openai_compat import (
        DEFAULT_OPENAI_MODEL,
        OpenAICompatibleBackend,
        SchemaTransport,
        to_strict_schema,
    )
    from memlab.backends.registry import (
        BACKENDS,
        MINIMAL_CONTRACT_REPLY,
        BackendFactory,
        BackendPlugin,
        UnknownBackendError,
        available_backends,
        backend_plugin,
        default_backend_spec,
        dialect_for,
        is_simulated,
        register_backend,
        resolve_backend,
    )
    from memlab.backends.retry import (
        RetryableError,
        RetryExhaustedError,
        RetryPolicy,
        parse_retry_after,
    )
    from memlab.backends.scripted import (
        ScriptedBackend,
        ScriptExhaustedError,
    )
    from memlab.core.llm import (
        Backend,
        BackendError,
        Completion,
        CompletionRequest,
        GenerationParams,
        ModelRequestsBlockedError,
        OutputMode,
        allow_model_requests,
        block_model_requests,
        check_model_requests_allowed,
    )

_EXPORTS: dict[str, str] = {
    "CACHE_FORMAT": "memlab.backends.cache",
    "CacheCorruptError": "memlab.backends.cache",
    "CacheCounters": "memlab.backends.cache",
    "CachedBackend": "memlab.backends.cache",
    "CacheMissError": "memlab.backends.cache",
    "CacheMode": "memlab.backends.cache",
    "entry_path": "memlab.backends.cache",
    "request_key": "memlab.backends.cache",
    "CacheStats": "memlab.backends.cache_admin",
    "PruneResult": "memlab.backends.cache_admin",
    "cache_stats": "memlab.backends.cache_admin",
    "prune_cache": "memlab.backends.cache_admin",
    "GrammarDialect": "memlab.backends.grammar",
    "bounded_reply_tokens": "memlab.backends.grammar",
    "compile_grammar": "memlab.backends.grammar",
    "longest_text_bytes": "memlab.backends.grammar",
    "to_grammar_schema": "memlab.backends.grammar",
    "worst_case_tokens": "memlab.backends.grammar",
    "BUNDLED_MODEL_FILE": "memlab.backends.llama_local",
    "BUNDLED_MODEL_ID": "memlab.backends.llama_local",
    "DEFAULT_N_CTX": "memlab.backends.llama_local",
    "LocalLlamaBackend": "memlab.backends.llama_local",
    "bundled_model_path": "memlab.backends.llama_local",
    "clear_model_cache": "memlab.backends.llama_local",
    "default_threads": "memlab.backends.llama_local",
    "load_model": "memlab.backends.llama_local",
    "LlamaServer": "memlab.backends.llama_server",
    "free_port": "memlab.backends.llama_server",
    "DEFAULT_OPENAI_MODEL": "memlab.backends.openai_compat",
    "OpenAICompatibleBackend": "memlab.backends.openai_compat",
    "SchemaTransport": "memlab.backends.openai_compat",
    "to_strict_schema": "memlab.backends.openai_compat",
    "BACKENDS": "memlab.backends.registry",
    "MINIMAL_CONTRACT_REPLY": "memlab.backends.registry",
    "BackendFactory": "memlab.backends.registry",
    "BackendPlugin": "memlab.backends.registry",
    "UnknownBackendError": "memlab.backends.registry",
    "available_backends": "memlab.backends.registry",
    "backend_plugin": "memlab.backends.registry",
    "default_backend_spec": "memlab.backends.registry",
    "dialect_for": "memlab.backends.registry",
    "is_simulated": "memlab.backends.registry",
    "register_backend": "memlab.backends.registry",
    "resolve_backend": "memlab.backends.registry",
    "RetryableError": "memlab.backends.retry",
    "RetryExhaustedError": "memlab.backends.retry",
    "RetryPolicy": "memlab.backends.retry",
    "parse_retry_after": "memlab.backends.retry",
    "ScriptedBackend": "memlab.backends.scripted",
    "ScriptExhaustedError": "memlab.backends.scripted",
    "Backend": "memlab.core.llm",
    "BackendError": "memlab.core.llm",
    "Completion": "memlab.core.llm",
    "CompletionRequest": "memlab.core.llm",
    "GenerationParams": "memlab.core.llm",
    "ModelRequestsBlockedError": "memlab.core.llm",
    "OutputMode": "memlab.core.llm",
    "allow_model_requests": "memlab.core.llm",
    "block_model_requests": "memlab.core.llm",
    "check_model_requests_allowed": "memlab.core.llm",
}

__all__ = [
    "BACKENDS",
    "BUNDLED_MODEL_FILE",
    "BUNDLED_MODEL_ID",
    "CACHE_FORMAT",
    "DEFAULT_N_CTX",
    "DEFAULT_OPENAI_MODEL",
    "MINIMAL_CONTRACT_REPLY",
    "Backend",
    "BackendError",
    "BackendFactory",
    "BackendPlugin",
    "CacheCorruptError",
    "CacheCounters",
    "CacheMissError",
    "CacheMode",
    "CacheStats",
    "CachedBackend",
    "Completion",
    "CompletionRequest",
    "GenerationParams",
    "GrammarDialect",
    "LlamaServer",
    "LocalLlamaBackend",
    "ModelRequestsBlockedError",
    "OpenAICompatibleBackend",
    "OutputMode",
    "PruneResult",
    "RetryExhaustedError",
    "RetryPolicy",
    "RetryableError",
    "SchemaTransport",
    "ScriptExhaustedError",
    "ScriptedBackend",
    "UnknownBackendError",
    "allow_model_requests",
    "available_backends",
    "backend_plugin",
    "block_model_requests",
    "bounded_reply_tokens",
    "bundled_model_path",
    "cache_stats",
    "check_model_requests_allowed",
    "clear_model_cache",
    "compile_grammar",
    "default_backend_spec",
    "default_threads",
    "dialect_for",
    "entry_path",
    "free_port",
    "is_simulated",
    "load_model",
    "longest_text_bytes",
    "parse_retry_after",
    "prune_cache",
    "register_backend",
    "request_key",
    "resolve_backend",
    "to_grammar_schema",
    "to_strict_schema",
    "worst_case_tokens",
]

__getattr__, __dir__ = lazy_face(__name__, _EXPORTS)
