"""Batched greedy decoding of a local GGUF model: concurrent calls decoded together.

llama.cpp decodes several sequences in one ``llama_decode`` call, reading the weights once per
step for all of them, and a sweep's calls share an instruction prefix. :class:`BatchDecoder`
owns a second llama.cpp context on the already-loaded model with ``lanes`` sequence slots, each
with a KV stream of its own, and a scheduler thread that admits waiting requests into free
slots between steps (continuous batching):

* each step decodes one token of every generating lane plus a chunk of every new lane's
  prompt, and samples each lane with its own sampler chain (its grammar, then greedy);
* one extra sequence keeps the prompt prefix the requests share; a new request copies its
  cells (``llama_memory_seq_cp`` copies them, it computes nothing) and evaluates only the
  rest. :attr:`BatchDecoder.reused_tokens` counts the prompt tokens so served.

Where a step is bound by arithmetic rather than by reading the weights (a small model on a
few CPU cores) batching gains little and can be slower than one call at a time; the
measurements are in ``docs/local-model.md``.

Replies follow the sequential path's rules (the chat template's prompt, greedy sampling
after the grammar, the same stop and length rules), so only the floating-point order of a
batched step can tell them apart; see ``docs/local-model.md``.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from memlab.core.pipeline.llm import BackendError

__all__ = [
    "BatchDecoder",
    "BatchOptions",
    "BatchReply",
    "BatchRequest",
    "close_decoders",
    "common_prefix",
    "shared_decoder",
]

logger = logging.getLogger(__name__)

_STEP_TOKENS = 1024
"""Tokens one ``llama_decode`` call takes at most (generating lanes first, then prompts)."""
_KEEP_SHARED = 256
"""A kept prefix sharing at least this many tokens with a new prompt is cut to the shared
part; one sharing less (and less than half of it) is replaced by the new prompt."""


class BatchOptions(BaseModel):
    """How the local backend batches concurrent calls.

    Attributes:
        lanes: Sequences decoded together (concurrent calls beyond it wait for a free lane).
        gather_ms: How long an idle decoder waits after a first request for others to
            arrive, so that calls started together start in one step.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    lanes: int = Field(default=4, ge=1, le=32, strict=True)
    gather_ms: float = Field(default=5.0, ge=0.0, le=1000.0, strict=True)


@dataclass
class BatchRequest:
    """One greedy completion to decode.

    Attributes:
        tokens: The prompt's tokens (chat template applied).
        grammar: GBNF text the reply must match, or ``None``.
        max_tokens: Most tokens to generate.
        stop: Strings that end the reply (cut off, like the sequential path does).
        mask: Instead of ``grammar``, a logits processor masking the tokens the reply's
            grammar rules out (llguidance's
            :class:`~memlab.backends.decoding.token_mask.MaskProcessor`), called as the
            sequential path calls it: ``mask(prompt and generated tokens, logits)``.
    """

    tokens: list[int]
    grammar: str | None
    max_tokens: int
    stop: tuple[str, ...] = ()
    mask: Any = None


@dataclass
class BatchReply:
    """What one :class:`BatchRequest` produced."""

    text: str
    completion_tokens: int
    finish_reason: str
    reused_tokens: int
    """Prompt tokens served from the kept prefix instead of evaluated."""


@dataclass
class _Lane:
    seq: int
    request: BatchRequest
    future: Future[BatchReply]
    sampler: Any
    evaluated: int  # prompt tokens already in this lane's cells
    reused: int
    generated: list[int] = field(default_factory=list)
    last: int = -1  # the token to feed next step (-1 while the prompt is being evaluated)


def common_prefix(a: list[int], b: list[int]) -> int:
    """How many leading tokens ``a`` and ``b`` share."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class BatchDecoder:
    """A scheduler thread decoding the requests of every caller of one model together.

    Args:
        llm: The loaded ``llama_cpp.Llama`` (its model is shared; its context is not used).
        n_ctx: Context window of one lane (prompt plus reply).
        n_threads: CPU threads of the decoding context.
        options: Lanes and gathering delay.

    Raises:
        BackendError: llama.cpp cannot create the context.
    """

    def __init__(self, llm: Any, n_ctx: int, n_threads: int, options: BatchOptions) -> None:
        import llama_cpp

        self._lib = llama_cpp
        self._llm = llm
        self.n_ctx = n_ctx
        self.options = options
        self._prefix_seq = options.lanes  # the extra sequence keeping the shared prefix
        params = type(llm.context_params).from_buffer_copy(llm.context_params)
        # A KV stream of n_ctx cells per lane and one for the kept prefix. In one unified
        # cache every lane's attention runs over every lane's cells (masked afterwards):
        # a four-lane step cost 82 ms there against 50 ms with streams, and the prompts
        # 51 s against 34 s (docs/local-model.md, measured quiet).
        params.n_ctx = n_ctx * (options.lanes + 1)
        params.n_batch = _STEP_TOKENS
        params.n_ubatch = min(512, _STEP_TOKENS)
        params.n_seq_max = options.lanes + 1
        params.n_threads = params.n_threads_batch = n_threads
        params.kv_unified = False
        params.embeddings = False
        self._ctx = llama_cpp.llama_init_from_model(llm._model.model, params)
        if not self._ctx:
            raise BackendError(f"llama.cpp could not create a {options.lanes}-lane context")
        self._memory = llama_cpp.llama_get_memory(self._ctx)
        self._vocab = llm._model.vocab
        self._batch = llama_cpp.llama_batch_init(_STEP_TOKENS, 0, 1)
        self._prefix: list[int] = []
        self._awaiting_prefix = False  # a lane's prompt becomes the kept prefix when evaluated
        self._pending: deque[tuple[BatchRequest, Future[BatchReply]]] = deque()
        self._wake = threading.Condition()
        self._closed = False
        self.evaluated_tokens = 0
        """Prompt tokens evaluated so far."""
        self.reused_tokens = 0
        """Prompt tokens served from the kept prefix so far."""
        self.steps = 0
        """``llama_decode`` calls so far."""
        self.grammar_tokens = 0
        """Tokens sampled under a llama.cpp grammar so far."""
        self.full_grammar_passes = 0
        """Of those, tokens whose grammar ruled out the best one (the whole vocabulary checked)."""
        self._formatter = _chat_formatter(llm)
        self._thread = threading.Thread(target=self._run, name="llama-batch", daemon=True)
        self._thread.start()

    def chat_request(
        self,
        messages: list[dict[str, Any]],
        grammar: str | None,
        max_tokens: int,
        mask: Any = None,
    ) -> BatchRequest | None:
        """The request for ``messages`` as the sequential path would prompt the model
        (the model's chat template), or ``None`` when the model has no chat template."""
        if self._formatter is None:
            return None
        result = self._formatter(messages=messages)
        tokens = self._llm.tokenize(
            result.prompt.encode("utf-8"), add_bos=not result.added_special, special=True
        )
        stop = result.stop if isinstance(result.stop, list) else [result.stop]
        return BatchRequest(tokens, grammar, max_tokens, tuple(s for s in stop if s), mask)

    def submit(self, request: BatchRequest) -> Future[BatchReply]:
        """Queue ``request``; the future holds its reply or a :class:`BackendError`."""
        future: Future[BatchReply] = Future()
        if len(request.tokens) + request.max_tokens > self.n_ctx:
            future.set_exception(
                BackendError(
                    f"Prompt plus max_tokens={request.max_tokens} does not fit the context "
                    f"window n_ctx={self.n_ctx}: the prompt has {len(request.tokens)} tokens. "
                    "Raise n_ctx, lower max_tokens or shorten the prompt."
                )
            )
            return future
        with self._wake:
            if self._closed:
                raise BackendError("the batched decoder is closed")
            self._pending.append((request, future))
            self._wake.notify()
        return future

    def close(self) -> None:
        """Stop the scheduler (failing what waits) and free the context."""
        with self._wake:
            self._closed = True
            self._wake.notify()
        self._thread.join()
        self._lib.llama_batch_free(self._batch)
        self._lib.llama_free(self._ctx)

    # -- the scheduler thread -------------------------------------------------------------

    def _run(self) -> None:
        lanes: dict[int, _Lane] = {}
        while True:
            with self._wake:
                if not lanes:
                    while not self._pending and not self._closed:
                        self._wake.wait()
                    if not self._closed and self.options.gather_ms > 0:
                        self._wake.wait_for(
                            lambda: len(self._pending) >= self.options.lanes or self._closed,
                            self.options.gather_ms / 1000,
                        )
                if self._closed:
                    self._fail_all(lanes, BackendError("the batched decoder was closed"))
                    return
            try:
                self._admit(lanes)
                self._step(lanes)
            except Exception as exc:  # every waiting caller gets the error, not a hang
                logger.exception("batched decoding failed")
                error = exc if isinstance(exc, BackendError) else BackendError(str(exc))
                self._fail_all(lanes, error)

    def _fail_all(self, lanes: dict[int, _Lane], error: BackendError) -> None:
        self._awaiting_prefix = False
        self._prefix = []
        self._lib.llama_memory_seq_rm(self._memory, self._prefix_seq, -1, -1)
        for lane in list(lanes.values()):
            self._finish(lanes, lane, error)
        with self._wake:
            waiting = list(self._pending)
            self._pending.clear()
        for _, future in waiting:
            future.set_exception(error)

    def _admit(self, lanes: dict[int, _Lane]) -> None:
        """Move waiting requests into free lanes, reusing the kept prefix's cells.

        A request that replaces the kept prefix is admitted last in its step, so that the
        requests after it can share its prompt from the next step on.
        """
        lib = self._lib
        while len(lanes) < self.options.lanes and not self._awaiting_prefix:
            with self._wake:
                if not self._pending:
                    return
                request, future = self._pending.popleft()
            seq = min(set(range(self.options.lanes)) - set(lanes))
            shared = common_prefix(self._prefix, request.tokens)
            shared = min(shared, len(request.tokens) - 1)  # the last token gives the logits
            lib.llama_memory_seq_rm(self._memory, seq, -1, -1)
            if shared > 0:
                self._copy(self._prefix_seq, seq, shared)
            lanes[seq] = _Lane(seq, request, future, self._sampler(request), shared, shared)
            self.reused_tokens += shared
            keep = shared >= _KEEP_SHARED or 2 * shared >= len(self._prefix)
            if self._prefix and keep:
                lib.llama_memory_seq_rm(self._memory, self._prefix_seq, shared, -1)
                del self._prefix[shared:]
            else:
                # Replaced once this lane's prompt is evaluated (see _step).
                lib.llama_memory_seq_rm(self._memory, self._prefix_seq, -1, -1)
                self._prefix = []
                self._awaiting_prefix = True

    def _copy(self, source: int, target: int, length: int) -> None:
        """Give ``target`` the cells of ``source``'s first ``length`` positions. Between KV
        streams llama.cpp copies only a whole sequence (a position range aborts the
        process), so the whole of ``source`` is copied and the rest dropped."""
        lib = self._lib
        lib.llama_memory_seq_rm(self._memory, target, -1, -1)
        lib.llama_memory_seq_cp(self._memory, source, target, -1, -1)
        lib.llama_memory_seq_rm(self._memory, target, length, -1)

    def _sampler(self, request: BatchRequest) -> Any:
        lib = self._lib
        chain = lib.llama_sampler_chain_init(lib.llama_sampler_chain_default_params())
        if request.grammar is not None:
            grammar = lib.llama_sampler_init_grammar(
                self._vocab, request.grammar.encode("utf-8"), b"root"
            )
            if not grammar:
                lib.llama_sampler_free(chain)
                raise BackendError("llama.cpp could not parse the reply grammar")
            lib.llama_sampler_chain_add(chain, grammar)
        lib.llama_sampler_chain_add(chain, lib.llama_sampler_init_greedy())
        return chain

    def _step(self, lanes: dict[int, _Lane]) -> None:
        """One ``llama_decode`` over every lane, then one sampled token per ready lane."""
        batch = self._batch
        batch.n_tokens = 0
        logits_at: dict[int, int] = {}
        keeper: _Lane | None = None
        for lane in lanes.values():  # generating lanes first: one token each
            if lane.last >= 0:
                logits_at[lane.seq] = self._add(lane.seq, lane.last, lane.evaluated, True)
                lane.evaluated += 1
        for lane in lanes.values():
            tokens = lane.request.tokens
            if lane.last >= 0 or batch.n_tokens >= _STEP_TOKENS:
                continue
            end = min(len(tokens), lane.evaluated + _STEP_TOKENS - batch.n_tokens)
            for pos in range(lane.evaluated, end):
                index = self._add(lane.seq, tokens[pos], pos, pos == len(tokens) - 1)
            self.evaluated_tokens += end - lane.evaluated
            lane.evaluated = end
            if end == len(tokens):
                logits_at[lane.seq] = index
                if self._awaiting_prefix and keeper is None:
                    keeper = lane
        status = self._lib.llama_decode(self._ctx, batch)
        self.steps += 1
        if status != 0:
            raise BackendError(f"llama_decode failed with status {status}")
        if keeper is not None:  # its prompt's cells exist now: they become the kept prefix
            self._copy(keeper.seq, self._prefix_seq, len(keeper.request.tokens))
            self._prefix = list(keeper.request.tokens)
            self._awaiting_prefix = False
        for seq, index in logits_at.items():
            self._sample(lanes, lanes[seq], index)

    def _add(self, seq: int, token: int, pos: int, logits: bool) -> int:
        batch = self._batch
        i = int(batch.n_tokens)
        batch.token[i] = token
        batch.pos[i] = pos
        batch.n_seq_id[i] = 1
        batch.seq_id[i][0] = seq
        batch.logits[i] = logits
        batch.n_tokens = i + 1
        return i

    def _sample(self, lanes: dict[int, _Lane], lane: _Lane, index: int) -> None:
        lib = self._lib
        if lane.request.mask is not None:
            token = self._masked(lane, index)
            if lane.request.mask.error:
                error = f"the llguidance constraint failed: {lane.request.mask.error}"
                self._finish(lanes, lane, BackendError(error))
                return
        else:
            token = self._greedy(lane, index)
        if lib.llama_vocab_is_eog(self._vocab, token):
            self._finish(lanes, lane, "stop")
            return
        lane.generated.append(token)
        lane.last = token
        if lane.request.stop and any(s in self._text(lane) for s in lane.request.stop):
            self._finish(lanes, lane, "stop")
        elif len(lane.generated) >= lane.request.max_tokens:
            self._finish(lanes, lane, "length")

    def _greedy(self, lane: _Lane, index: int) -> int:
        """The lane's greedy token after its grammar, checking the best token first.

        The grammar sampler checks every token of the vocabulary (49,152 for SmolLM2; about
        as long as a decode step) when asked to sample. The best token overall is the greedy
        choice whenever the grammar allows it (both take the first highest logit), so it is
        checked alone, and the whole vocabulary only when the grammar rules it out.
        """
        import ctypes

        import numpy as np

        lib = self._lib
        scores = self._scores(index)
        best = int(np.argmax(scores))
        if lane.request.grammar is not None:
            self.grammar_tokens += 1
            grammar = lib.llama_sampler_chain_get(lane.sampler, 0)
            candidate = lib.llama_token_data(best, float(scores[best]), 0.0)
            one = lib.llama_token_data_array(ctypes.pointer(candidate), 1, -1, False)
            lib.llama_sampler_apply(grammar, ctypes.byref(one))
            if candidate.logit == float("-inf"):  # ruled out: the full pass (it accepts)
                self.full_grammar_passes += 1
                return int(lib.llama_sampler_sample(lane.sampler, self._ctx, index))
        lib.llama_sampler_accept(lane.sampler, best)
        return best

    def _masked(self, lane: _Lane, index: int) -> int:
        """The best token of row ``index`` that the lane's mask allows (greedy)."""
        import numpy as np

        scores = self._scores(index).copy()  # the mask writes into it
        seen = np.asarray(lane.request.tokens + lane.generated, dtype=np.intc)
        return int(np.argmax(lane.request.mask(seen, scores)))

    def _scores(self, index: int) -> Any:
        """The logits of batch row ``index``: a view of llama.cpp's buffer, valid until the
        next decode step."""
        import numpy as np

        row = self._lib.llama_get_logits_ith(self._ctx, index)
        return np.ctypeslib.as_array(row, shape=(self._llm.n_vocab(),))

    def _text(self, lane: _Lane) -> str:
        data: bytes = self._llm.detokenize(lane.generated, prev_tokens=lane.request.tokens)
        return data.decode("utf-8", errors="ignore")

    def _finish(self, lanes: dict[int, _Lane], lane: _Lane, outcome: str | BackendError) -> None:
        del lanes[lane.seq]
        self._lib.llama_sampler_free(lane.sampler)
        self._lib.llama_memory_seq_rm(self._memory, lane.seq, -1, -1)
        if isinstance(outcome, BackendError):
            lane.future.set_exception(outcome)
            return
        text = self._text(lane)
        for stop in lane.request.stop:
            if stop in text:
                text = text[: text.index(stop)]
        lane.future.set_result(BatchReply(text, len(lane.generated), outcome, lane.reused))


def _chat_formatter(llm: Any) -> Any:
    """The formatter ``llama_cpp.Llama`` builds from the model's chat template (or ``None``)."""
    from llama_cpp import llama_chat_format

    template = llm.metadata.get("tokenizer.chat_template")
    if not template:
        return None
    eos, bos = llm.token_eos(), llm.token_bos()
    return llama_chat_format.Jinja2ChatFormatter(
        template=template,
        eos_token=llm._model.token_get_text(eos) if eos != -1 else "",
        bos_token=llm._model.token_get_text(bos) if bos != -1 else "",
        stop_token_ids=[eos],
    )


_decoders: dict[tuple[int, int, int, BatchOptions], BatchDecoder] = {}
_decoders_lock = threading.Lock()


def shared_decoder(llm: Any, n_ctx: int, n_threads: int, options: BatchOptions) -> BatchDecoder:
    """The one decoder of ``llm`` with these settings in this process, so that every backend
    of a sweep calling the same model is served by the same batch.

    Raises:
        BackendError: llama.cpp cannot create the decoder's context.
    """
    key = (id(llm), n_ctx, n_threads, options)
    with _decoders_lock:
        decoder = _decoders.get(key)
        if decoder is None:
            decoder = BatchDecoder(llm, n_ctx, n_threads, options)
            _decoders[key] = decoder
        return decoder


def close_decoders() -> None:
    """Stop every shared decoder (before their models are freed)."""
    with _decoders_lock:
        for decoder in _decoders.values():
            decoder.close()
        _decoders.clear()
