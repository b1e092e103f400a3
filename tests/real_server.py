"""A real ``llama_cpp.server`` for tests, bound by the work asked of it, never by wall time.

A test's outcome must not depend on how busy the machine is. A request to a real model ends
because its work is bounded (``max_tokens``, a bounded schema, the context window), so tests
wait for it as long as it takes: the request timeout and the server's start-up wait are far
beyond any load (:data:`PATIENT_S`), and the retry policy has no deadline. A server that dies
is still noticed at once (the start-up wait polls the process; a closed connection fails the
request).
"""

from __future__ import annotations

from typing import Any

from memlab.backends.local.llama_server import LlamaServer
from memlab.backends.remote.openai_compat import OpenAICompatibleBackend
from memlab.backends.remote.retry import RetryPolicy

__all__ = ["PATIENT_S", "patient_client", "patient_server"]

PATIENT_S = 24 * 3600.0
"""Seconds a test waits for a request or a server start: no load reaches it."""


def patient_server(**kwargs: Any) -> LlamaServer:
    """A :class:`LlamaServer` that waits for its model to load as long as it takes."""
    return LlamaServer(startup_timeout=PATIENT_S, **kwargs)


def patient_client(
    server: LlamaServer, *, max_attempts: int = 2, **kwargs: Any
) -> OpenAICompatibleBackend:
    """A client of ``server`` whose requests end when their bounded work does."""
    return OpenAICompatibleBackend(
        server.model_alias,
        base_url=server.base_url,
        timeout=PATIENT_S,
        retry=RetryPolicy(max_attempts=max_attempts, deadline=None),
        **kwargs,
    )
