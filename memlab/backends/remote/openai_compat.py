"""Backend for any OpenAI-compatible chat completions endpoint (OpenAI, Azure, vLLM, Ollama,
llama.cpp server), through the ``openai`` SDK.

Output modes map to ``response_format``:

* ``free``: no ``response_format``;
* ``json_object``: ``{"type": "json_object"}``;
* ``json_schema``: depends on ``schema_transport``:

  - ``"json_schema"`` (default, OpenAI and vLLM): ``{"type": "json_schema", "json_schema":
    {"name": ..., "strict": true, "schema": ...}}`` where the schema is first made
    strict-compatible by :func:`to_strict_schema` (every property required, optional ones made
    nullable, ``additionalProperties: false``, unsupported keywords dropped). Replies are still
    validated against the full contract schema by the pipeline.
  - ``"json_object_schema"`` (llama.cpp's ``python -m llama_cpp.server``, which rejects the
    ``json_schema`` type): ``{"type": "json_object", "schema": ...}``; the server compiles the
    schema to a grammar. The schema is first passed through
    :func:`memlab.backends.decoding.grammar.to_grammar_schema` because the server silently falls
    back to unconstrained JSON when its converter rejects a schema (e.g. unanchored
    ``pattern``).

Retries are done here, not by the SDK (its ``max_retries`` is set to 0), so the policy is
explicit: see :class:`memlab.backends.remote.retry.RetryPolicy`. Every attempt is first paced by the
backend's :class:`~memlab.backends.remote.rate_limit.RateLimiter` (requests and tokens a minute,
learned from the ``x-ratelimit-*`` headers of every reply and from 429s; a sweep shares one per
endpoint and model).
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from memlab.backends.decoding.grammar import to_grammar_schema
from memlab.backends.decoding.schema_walk import SchemaTransformer
from memlab.backends.remote._http import (
    ReplyTooLargeError,
    basic_token,
    bounded_http_client,
    completion_fields,
    display_url,
    embedding_vectors,
    split_credentials,
    too_large,
)
from memlab.backends.remote.rate_limit import RateLimiter
from memlab.backends.remote.retry import RetryableError, RetryPolicy, parse_retry_after
from memlab.core.base.files import MAX_REPLY_BYTES
from memlab.core.base.redact import redact_text, remember_secret
from memlab.core.pipeline.llm import (
    BackendError,
    Completion,
    CompletionRequest,
    OutputMode,
    check_model_requests_allowed,
)

if TYPE_CHECKING:
    import openai

__all__ = [
    "DEFAULT_OPENAI_MODEL",
    "OpenAICompatibleBackend",
    "OpenAICompatibleEmbeddings",
    "SchemaTransport",
    "to_strict_schema",
]

logger = logging.getLogger(__name__)

DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
"""Model used when neither the spec, the ``model`` argument nor ``OPENAI_MODEL`` names one."""

SchemaTransport = Literal["json_schema", "json_object_schema"]

_RETRYABLE_STATUS = frozenset({408, 409, 429})
# Keywords OpenAI strict structured outputs reject; the full schema is validated afterwards.
_STRICT_UNSUPPORTED = frozenset(
    {
        "$schema",
        "$id",
        "default",
        "examples",
        "minLength",
        "maxLength",
        "minProperties",
        "maxProperties",
        "uniqueItems",
        "patternProperties",
        "unevaluatedProperties",
        "propertyNames",
        "if",
        "then",
        "else",
        "not",
        "dependentRequired",
        "dependentSchemas",
        "contains",
    }
)
# Placeholder key for servers that need no auth; the SDK refuses to build a client without one.
_NO_KEY = "no-key-required"


def _make_nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """Return ``schema`` also accepting ``null`` (for formerly optional properties)."""
    kind = schema.get("type")
    if isinstance(kind, str):
        if kind == "null":
            return schema
        out = dict(schema, type=[kind, "null"])
        if "enum" in out and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
        return out
    if isinstance(kind, list):
        if "null" not in kind:
            return dict(schema, type=[*kind, "null"])
        return schema
    return {"anyOf": [schema, {"type": "null"}]}


class _StrictSchema(SchemaTransformer):
    """What OpenAI strict structured outputs accept (see :func:`to_strict_schema`)."""

    def keyword(self, node: Mapping[str, Any], key: str, value: Any) -> tuple[str, Any] | None:
        if key in _STRICT_UNSUPPORTED:
            return None
        if key == "oneOf":
            # Strict mode supports anyOf only; for disjoint branches the two are equivalent.
            return "anyOf", value
        return key, value

    def finish(self, node: Mapping[str, Any], out: dict[str, Any]) -> dict[str, Any]:
        if isinstance(out.get("properties"), dict):
            required = set(node.get("required", []))
            props = out["properties"]
            for name in list(props):
                if name not in required:
                    props[name] = _make_nullable(props[name])
            out["required"] = list(props)
            out["additionalProperties"] = False
        elif out.get("type") == "object":
            out.setdefault("additionalProperties", False)
        return out


def to_strict_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Return a copy of ``schema`` that OpenAI strict structured outputs accept.

    Strict mode requires every object to list all its properties in ``required`` and to set
    ``additionalProperties: false``. Optional properties therefore become required but
    nullable (``{"type": "string"}`` becomes ``{"type": ["string", "null"]}``, so the model
    writes ``null`` where it would have omitted the key); ``oneOf`` becomes ``anyOf``;
    keywords strict mode rejects (``minLength``, ``$schema``, ``default``, ...) are dropped.
    The pipeline validates replies against the original schema, so nothing is lost.
    """
    return _StrictSchema()(schema)


def _schema_name(schema: Mapping[str, Any]) -> str:
    title = str(schema.get("title") or "response")
    name = re.sub(r"[^A-Za-z0-9_-]+", "_", title).strip("_") or "response"
    return name[:64]


class OpenAICompatibleBackend:
    """Chat completions against an OpenAI-compatible HTTP endpoint.

    Args:
        model: Default model id; falls back to ``OPENAI_MODEL``, then ``gpt-4o-mini``.
        base_url: Endpoint, e.g. ``http://127.0.0.1:8000/v1``; falls back to
            ``OPENAI_BASE_URL``, then the SDK default (api.openai.com).
        api_key: Key; falls back to ``OPENAI_API_KEY``. Not needed when a ``base_url`` is
            given (local servers); never logged, cached or reported.
        timeout: Seconds per HTTP attempt (a timeout is retried).
        retry: Retry policy for 408/409/429/5xx, timeouts and connection errors.
        schema_transport: How ``json_schema`` mode is sent (see module docstring); use
            ``"json_object_schema"`` for ``python -m llama_cpp.server``.
        strict: Send OpenAI ``strict: true`` with a :func:`to_strict_schema`-converted schema
            (``json_schema`` transport only). With ``False`` the schema is sent as is.
        max_tokens_field: Request field carrying ``max_tokens`` (OpenAI reasoning models
            need ``"max_completion_tokens"``).
        client: A prebuilt ``openai.OpenAI`` client (advanced; overrides the above).
        rate_limiter: Paces the calls (default: a limiter of its own with no limit until the
            server declares one); a sweep gives every backend of the same endpoint and model
            one shared limiter (:class:`~memlab.backends.remote.rate_limit.RateLimiters`).

    Raises:
        BackendError: No API key and no base URL, or the ``openai`` package is missing.
    """

    name = "openai"

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 120.0,
        retry: RetryPolicy | None = None,
        schema_transport: SchemaTransport = "json_schema",
        strict: bool = True,
        max_tokens_field: str = "max_tokens",
        client: openai.OpenAI | None = None,
        rate_limiter: RateLimiter | None = None,
    ) -> None:
        if schema_transport not in ("json_schema", "json_object_schema"):
            raise ValueError(
                f"schema_transport must be 'json_schema' or 'json_object_schema', got "
                f"{schema_transport!r}."
            )
        self._model = model or os.environ.get("OPENAI_MODEL") or DEFAULT_OPENAI_MODEL
        # A user:password@ in the URL is sent as Basic authentication and never shown.
        self.base_url, self._auth = split_credentials(
            base_url or os.environ.get("OPENAI_BASE_URL") or None
        )
        if self._auth is not None:
            for credential in (*self._auth, basic_token(*self._auth)):
                remember_secret(credential)
        self._where = display_url(self.base_url)
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self.schema_transport: SchemaTransport = schema_transport
        self.strict = strict
        self.max_tokens_field = max_tokens_field
        self.rate_limiter = rate_limiter or RateLimiter()
        if client is not None:
            self._client = client
            return
        key = api_key or os.environ.get("OPENAI_API_KEY") or None
        remember_secret(key)  # redacted from every file and log line, wherever it comes from
        if key is None and self.base_url is None:
            raise BackendError(
                "The OpenAI-compatible backend needs an API key or a server URL: set "
                "OPENAI_API_KEY (and optionally OPENAI_BASE_URL), pass api_key=/base_url=, "
                "or use the bundled local model with backend 'local:smollm2'."
            )
        try:
            import openai
        except ImportError as exc:  # pragma: no cover - openai is a core dependency
            raise BackendError(
                "The OpenAI-compatible backend needs the 'openai' package: pip install openai"
            ) from exc
        self._client = openai.OpenAI(
            api_key=key or _NO_KEY,
            base_url=self.base_url,
            timeout=timeout,
            max_retries=0,
            http_client=bounded_http_client(MAX_REPLY_BYTES, self._auth),
        )

    @property
    def model(self) -> str:
        """The default model id."""
        return self._model

    def identity(self) -> dict[str, Any]:
        """The server the model name refers to (the same name on two servers is two models)."""
        if not self.base_url:
            return {"host": "api.openai.com"}
        parts = urlsplit(self.base_url)  # never the user:password part of a URL
        host = parts.hostname or ""
        return {"host": f"{host}:{parts.port}" if parts.port else host}

    def rate_limit_key(self) -> tuple[str, str]:
        """The endpoint (without credentials) and model whose limits the calls count against."""
        return self._where, self._model

    def __repr__(self) -> str:  # no key in the repr, no password of the URL
        return (
            f"OpenAICompatibleBackend(model={self._model!r}, base_url={self._where!r}, "
            f"schema_transport={self.schema_transport!r})"
        )

    def response_format(self, request: CompletionRequest) -> dict[str, Any] | None:
        """Return the ``response_format`` sent for ``request`` (``None`` in free mode)."""
        if request.mode is OutputMode.FREE:
            return None
        if request.mode is OutputMode.JSON_OBJECT:
            return {"type": "json_object"}
        if request.schema is None:
            raise ValueError(
                "Output mode 'json_schema' needs a schema: set CompletionRequest.schema (e.g. "
                "memlab.core.jsondoc.contract.contract_schema())."
            )
        if self.schema_transport == "json_object_schema":
            return {"type": "json_object", "schema": to_grammar_schema(request.schema)}
        schema = to_strict_schema(request.schema) if self.strict else dict(request.schema)
        return {
            "type": "json_schema",
            "json_schema": {
                "name": _schema_name(request.schema),
                "strict": self.strict,
                "schema": schema,
            },
        }

    def build_body(self, request: CompletionRequest) -> dict[str, Any]:
        """Return the keyword arguments passed to ``chat.completions.create``."""
        params = request.params
        body: dict[str, Any] = {
            "model": request.model or self._model,
            "messages": [dict(m) for m in request.messages],
            "temperature": params.temperature,
            self.max_tokens_field: params.max_tokens,
        }
        if params.seed is not None:
            body["seed"] = params.seed
        if params.top_p is not None:
            body["top_p"] = params.top_p
        response_format = self.response_format(request)
        if response_format is not None:
            body["response_format"] = response_format
        return body

    def complete(self, request: CompletionRequest) -> Completion:
        """Run one chat completion, retrying transient failures within the retry deadline.

        Raises:
            BackendError: The request was rejected (with a hint for unsupported
                ``response_format``), the reply is not a chat completion or is too large, or
                retries were exhausted (``RetryExhaustedError``).
        """
        body = self.build_body(request)
        describe = f"OpenAI-compatible request to {self._where}"
        started = time.perf_counter()
        raw = self.retry.run(
            lambda remaining: self._attempt(body, request, remaining), describe=describe
        )
        latency = time.perf_counter() - started
        try:
            fields = completion_fields(raw)
        except ValueError as exc:
            raise BackendError(
                redact_text(
                    f"the server at {self._where} answered HTTP 200 with a body that is not a "
                    f"chat completion: {exc}; check that base_url points to an "
                    "OpenAI-compatible /v1 endpoint"
                )
            ) from None
        return Completion(
            text=fields.text,
            prompt_tokens=fields.prompt_tokens,
            completion_tokens=fields.completion_tokens,
            latency_s=latency,
            finish_reason=fields.finish_reason,
            model=fields.model or body["model"],
            backend=self.name,
            cached_prompt_tokens=fields.cached_prompt_tokens,
        )

    def _attempt(
        self, body: dict[str, Any], request: CompletionRequest, remaining: float | None
    ) -> bytes:
        """One HTTP attempt: the raw body of a 2xx reply, bounded by :data:`MAX_REPLY_BYTES`."""
        check_model_requests_allowed(self.name)
        import openai

        self.rate_limiter.acquire(_request_tokens(request))
        timeout = self.timeout if remaining is None else max(0.5, min(self.timeout, remaining))
        try:
            response = self._client.chat.completions.with_raw_response.create(
                **body, timeout=timeout
            )
            self.rate_limiter.observe(dict(response.headers))
            return bytes(response.content)
        except openai.APITimeoutError as exc:
            raise RetryableError(f"timed out after {timeout:g}s") from exc
        except openai.APIConnectionError as exc:
            large = too_large(exc)
            if large is not None:
                raise BackendError(f"the server at {self._where}: {large}") from None
            raise RetryableError(redact_text(f"connection error: {exc}")) from exc
        except openai.APIStatusError as exc:
            status = exc.status_code
            headers = dict(exc.response.headers)
            self.rate_limiter.observe(headers)
            if self._rejects_response_format(exc, request):
                raise BackendError(self._rejection_message(exc, request)) from exc
            if status in _RETRYABLE_STATUS or status >= 500:
                retry_after = parse_retry_after(headers)
                if status == 429:  # every caller of this endpoint pauses, not only this one
                    self.rate_limiter.hold(retry_after or 0.0)
                raise RetryableError(
                    f"HTTP {status}: {_short(exc)}", retry_after=retry_after, status=status
                ) from exc
            raise BackendError(self._rejection_message(exc, request)) from exc
        except ReplyTooLargeError as exc:  # raised while the SDK read the body
            raise BackendError(f"the server at {self._where}: {exc}") from None

    def _rejects_response_format(
        self, exc: openai.APIStatusError, request: CompletionRequest
    ) -> bool:
        # llama.cpp's server answers an unknown response_format type with HTTP 500 and a
        # validation error naming the field; that is permanent, not worth retrying.
        return (
            request.mode is OutputMode.JSON_SCHEMA
            and self.schema_transport == "json_schema"
            and exc.status_code in (400, 422, 500)
            and "response_format" in _short(exc, limit=100_000)
        )

    def _rejection_message(self, exc: openai.APIStatusError, request: CompletionRequest) -> str:
        where = self._where
        message = f"The server at {where} rejected the request with HTTP {exc.status_code}: "
        message += _short(exc)
        if exc.status_code in (401, 403):
            message += " Check OPENAI_API_KEY / api_key."
        elif (
            request.mode is OutputMode.JSON_SCHEMA
            and self.schema_transport == "json_schema"
            and exc.status_code in (400, 422, 500)
        ):
            message += (
                " The server may not support response_format type 'json_schema'. For a "
                "llama.cpp server (python -m llama_cpp.server) pass "
                "schema_transport='json_object_schema'; otherwise use output mode "
                "'json_object' or 'free'."
            )
        return message


class OpenAICompatibleEmbeddings:
    """Embeddings from an OpenAI-compatible ``/v1/embeddings`` endpoint, through the same
    bounded HTTP client, retry policy, credential handling and one-line errors as
    :class:`OpenAICompatibleBackend` (whose arguments these are).

    Raises:
        BackendError: No API key and no base URL.
    """

    name = "openai-embeddings"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.model = model
        self.base_url, auth = split_credentials(
            base_url or os.environ.get("OPENAI_BASE_URL") or None
        )
        if auth is not None:
            for credential in (*auth, basic_token(*auth)):
                remember_secret(credential)
        self._where = display_url(self.base_url)
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        key = api_key or os.environ.get("OPENAI_API_KEY") or None
        remember_secret(key)
        if key is None and self.base_url is None:
            raise BackendError(
                "The OpenAI-compatible embeddings endpoint needs an API key or a server URL: "
                "set OPENAI_API_KEY or OPENAI_BASE_URL, or give base_url"
            )
        import openai

        self._client = openai.OpenAI(
            api_key=key or _NO_KEY,
            base_url=self.base_url,
            timeout=timeout,
            max_retries=0,
            http_client=bounded_http_client(MAX_REPLY_BYTES, auth),
        )

    def identity(self) -> dict[str, Any]:
        """The model and the server it is on (never the URL's user information)."""
        parts = urlsplit(self.base_url or "https://api.openai.com")
        host = f"{parts.hostname}:{parts.port}" if parts.port else str(parts.hostname)
        return {"model": self.model, "host": host}

    def __repr__(self) -> str:
        return f"OpenAICompatibleEmbeddings(model={self.model!r}, base_url={self._where!r})"

    def embed(self, texts: list[str]) -> list[list[float]]:
        """One vector per text, in order (one request, retried as chat requests are).

        Raises:
            BackendError: One line: the request was rejected, the body is not an embeddings
                response, or retries were exhausted.
        """
        describe = f"OpenAI-compatible embeddings request to {self._where}"
        raw = self.retry.run(lambda remaining: self._attempt(texts, remaining), describe=describe)
        try:
            return embedding_vectors(raw, len(texts))
        except ValueError as exc:
            raise BackendError(
                redact_text(
                    f"the server at {self._where} answered HTTP 200 with a body that is not "
                    f"an embeddings response: {exc}; check that base_url points to an "
                    "OpenAI-compatible /v1 endpoint serving embeddings"
                )
            ) from None

    def _attempt(self, texts: list[str], remaining: float | None) -> bytes:
        check_model_requests_allowed(self.name)
        import openai

        timeout = self.timeout if remaining is None else max(0.5, min(self.timeout, remaining))
        try:
            response = self._client.embeddings.with_raw_response.create(
                model=self.model, input=texts, encoding_format="float", timeout=timeout
            )
            return bytes(response.content)
        except openai.APITimeoutError as exc:
            raise RetryableError(f"timed out after {timeout:g}s") from exc
        except openai.APIConnectionError as exc:
            large = too_large(exc)
            if large is not None:
                raise BackendError(f"the server at {self._where}: {large}") from None
            raise RetryableError(redact_text(f"connection error: {exc}")) from exc
        except openai.APIStatusError as exc:
            status = exc.status_code
            if status in _RETRYABLE_STATUS or status >= 500:
                retry_after = parse_retry_after(dict(exc.response.headers))
                raise RetryableError(
                    f"HTTP {status}: {_short(exc)}", retry_after=retry_after, status=status
                ) from exc
            hint = " Check OPENAI_API_KEY / api_key." if status in (401, 403) else ""
            raise BackendError(
                f"The server at {self._where} rejected the embeddings request with HTTP "
                f"{status}: {_short(exc)}{hint}"
            ) from None
        except ReplyTooLargeError as exc:
            raise BackendError(f"the server at {self._where}: {exc}") from None


def _request_tokens(request: CompletionRequest) -> float:
    """The tokens a call counts against a tokens-a-minute limit before it is answered: the
    prompt at four characters a token plus ``max_tokens`` (what providers count)."""
    chars = sum(len(str(m.get("content", ""))) for m in request.messages)
    return chars / 4.0 + request.params.max_tokens


def _short(exc: Exception, limit: int = 500) -> str:
    """The SDK's message with the server's error body, on one line, redacted."""
    text = str(exc)
    body = getattr(exc, "body", None)
    if body is not None and str(body) not in text:
        text += f" {body}"
    text = redact_text(" ".join(text[: 4 * limit + 100_000].split()))
    return text if len(text) <= limit else text[:limit] + "..."
