"""The one small interface every LLM backend implements.

A backend takes a :class:`CompletionRequest` (chat messages, an output mode, an optional JSON
Schema and sampling parameters) and returns a :class:`Completion` (raw text, token usage,
latency, finish reason, model id). Provider concerns (auth, clients, retries) live inside each
backend; the wire format the pipeline cares about is only this.

Unit tests block real model requests with :func:`block_model_requests` (the test suite's
``conftest.py`` does it for every test not marked ``integration``); scripted backends ignore it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from memlab import plugins
from memlab.core.base.safe_text import safe_text
from memlab.errors import MemlabError

__all__ = [
    "Backend",
    "BackendError",
    "Completion",
    "CompletionRequest",
    "GenerationParams",
    "ModelRequestsBlockedError",
    "OutputMode",
    "allow_model_requests",
    "block_model_requests",
    "check_model_requests_allowed",
    "default_backend",
]


class OutputMode(StrEnum):
    """How the backend is asked to shape its reply."""

    FREE = "free"
    """Plain text; the prompt alone asks for JSON."""
    JSON_OBJECT = "json_object"
    """The server's JSON mode: any syntactically valid JSON object."""
    JSON_SCHEMA = "json_schema"
    """Constrained to the request's JSON Schema (OpenAI strict schema, llama.cpp grammar)."""


@dataclass(frozen=True)
class GenerationParams:
    """Sampling parameters. Deterministic by default so replays are reproducible."""

    temperature: float = 0.0
    max_tokens: int = 1024
    seed: int | None = 0
    top_p: float | None = None

    def as_dict(self) -> dict[str, Any]:
        """Return the parameters as a plain dict (stable key order, used in cache keys)."""
        return {
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
            "top_p": self.top_p,
        }


@dataclass(frozen=True)
class CompletionRequest:
    """One chat completion request.

    Attributes:
        messages: OpenAI-style chat messages, each ``{"role": ..., "content": str}``.
        mode: Requested output mode.
        schema: JSON Schema for :attr:`OutputMode.JSON_SCHEMA` (ignored by other modes).
        params: Sampling parameters.
        model: Model override; ``None`` uses the backend's default model.
        sample: Index of a repeated sample of the same request (a sweep's ``samples``);
            backends ignore it, the response cache keeps samples apart by it.
        about: The owner (user id) and session index a QA answer request asks about, for a
            backend that answers from the dataset's known truth (the simulated model); other
            backends never see it, and the QA step sets it only for such a backend, so their
            requests and cache keys are what they were. Part of the request's key when set.
    """

    messages: Sequence[Mapping[str, str]]
    mode: OutputMode = OutputMode.FREE
    schema: Mapping[str, Any] | None = None
    params: GenerationParams = field(default_factory=GenerationParams)
    model: str | None = None
    sample: int = 0
    about: tuple[str, int] | None = None


@dataclass
class Completion:
    """What a backend returned for one request.

    Every reply enters the pipeline as a ``Completion``, so this is where its text is made
    writable: characters UTF-8 cannot encode (lone surrogates, also as the JSON escapes a
    parser would turn into them) become U+FFFD when the completion is built
    (:func:`memlab.core.base.safe_text.safe_text`), counted in :attr:`replaced_chars`. A reply
    that holds none is kept as it is, byte for byte.

    Attributes:
        text: The reply text as the backend gave it, unencodable characters replaced.
        prompt_tokens: Tokens in the prompt as reported by the backend (0 if unknown).
        completion_tokens: Tokens generated (0 if unknown).
        latency_s: Wall-clock seconds the call took (0.0 for cache hits' replay).
        finish_reason: ``"stop"``, ``"length"``, ... or ``None`` if unknown.
        model: Model id that answered.
        backend: Backend name (``"openai"``, ``"local"``, ``"scripted"``, ...).
        cached: True when the reply came from the response cache.
        replaced_chars: Characters of the reply replaced by U+FFFD (a value given when
            the completion is built, such as a cache entry's, is added to).
        cached_prompt_tokens: Of ``prompt_tokens``, those the provider reports it served
            from its own prompt cache (billed at a lower price where one is declared).
    """

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    finish_reason: str | None = None
    model: str = ""
    backend: str = ""
    cached: bool = False
    replaced_chars: int = 0
    cached_prompt_tokens: int = 0

    def __post_init__(self) -> None:
        if type(self.text) is str:  # a broken backend's non-text is reported by its caller
            self.text, replaced = safe_text(self.text, json_escapes=True)
            self.replaced_chars += replaced

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serialisable dict of every field (``replaced_chars`` only when some
        were, so what is stored of a normal reply is what it always was)."""
        return {
            "text": self.text,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "latency_s": self.latency_s,
            "finish_reason": self.finish_reason,
            "model": self.model,
            "backend": self.backend,
            "cached": self.cached,
            **({"replaced_chars": self.replaced_chars} if self.replaced_chars else {}),
            **(
                {"cached_prompt_tokens": self.cached_prompt_tokens}
                if self.cached_prompt_tokens
                else {}
            ),
        }


@runtime_checkable
class Backend(Protocol):
    """An LLM backend: one call, request in, completion out."""

    name: str
    """Short backend name used in registries, cache keys and results."""

    @property
    def model(self) -> str:
        """The default model id this backend answers with."""
        ...

    def complete(self, request: CompletionRequest) -> Completion:
        """Run one completion. Raises :class:`BackendError` on failure."""
        ...


class BackendError(MemlabError, RuntimeError):
    """A backend call failed (after any retries the backend performs)."""


class ModelRequestsBlockedError(BackendError):
    """A real model request was attempted while requests are blocked (unit tests)."""


_lock = threading.Lock()
_allowed = True


def check_model_requests_allowed(backend_name: str) -> None:
    """Raise :class:`ModelRequestsBlockedError` if real model requests are blocked.

    Every backend that talks to a real model calls this before each request.
    """
    if not _allowed:
        raise ModelRequestsBlockedError(
            f"Real model request to backend {backend_name!r} blocked: model requests are "
            "disabled (unit tests). Use memlab.backends.ScriptedBackend, or mark the test "
            "'integration' to allow real requests."
        )


@contextlib.contextmanager
def _set_allowed(value: bool) -> Iterator[None]:
    global _allowed
    with _lock:
        previous = _allowed
        _allowed = value
    try:
        yield
    finally:
        with _lock:
            _allowed = previous


def block_model_requests() -> contextlib.AbstractContextManager[None]:
    """Context manager that makes every real model request fail."""
    return _set_allowed(False)


def allow_model_requests() -> contextlib.AbstractContextManager[None]:
    """Context manager that re-allows real model requests (inside a blocked region)."""
    return _set_allowed(True)


def default_backend() -> Backend:
    """The backend of a pipeline built without one (the seed's ``MemoryUpdater()``).

    It is the ``auto`` entry of the backend registry: OpenAI-compatible when
    ``OPENAI_API_KEY``/``OPENAI_BASE_URL`` is set, else the bundled local model. The core
    finds it through :mod:`memlab.plugins` because it knows no backend implementation.
    """
    entry = plugins.registry("backend").lookup("auto")
    backend: Backend = entry.factory("")
    return backend
