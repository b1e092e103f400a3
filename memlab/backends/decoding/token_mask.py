"""Schema-constrained decoding with llguidance token masks instead of llama.cpp's grammar.

llama.cpp's grammar sampler checks every one of the vocabulary's tokens against the grammar at
every step (49,152 for SmolLM2), which costs about a quarter of the local model's generation
speed. llguidance computes the same set of allowed tokens from a lexer automaton and a token
trie in a fraction of a millisecond, and for greedy decoding memlab asks it only whether the
model's best token is allowed, computing the whole mask only when it is not.

The language is the one of :func:`memlab.backends.decoding.grammar.compile_grammar`'s compact
dialect, not llguidance's own JSON-schema compiler (whose strings admit ``\\uXXXX`` escapes and
whose numbers have no length bound): the compact GBNF grammar is translated to llguidance's Lark
syntax by :func:`lark_grammar`, which keeps every rule's longest text, so the bound of
:func:`~memlab.backends.decoding.grammar.worst_case_tokens` holds for both engines. The two engines
do not always pick the same tokens: on one build their greedy replies to one request differed (both
keeping the contract), so a cache keeps their replies apart (the backend's identity).

A :class:`MaskProcessor` is a ``llama-cpp-python`` logits processor: it runs first in the
sampler chain, consumes the tokens generated since its last call and masks the scores.
"""

from __future__ import annotations

import re
import threading
from typing import Any

from memlab.core.pipeline.llm import BackendError

__all__ = ["MaskProcessor", "lark_grammar", "mask_processor"]

_INSTALL = "pip install 'memlab[local]' (it installs llguidance)"

# One grammar item: a rule name or a character class.
_ATOM = r"(?:[A-Za-z0-9_-]+|\[(?:\\.|[^\]\\])*\])"
_LAST_OPTIONAL = re.compile(rf"\(\s*({_ATOM})\s*\)\?")
_OPTIONAL_CHAIN = re.compile(rf"\(\s*({_ATOM})\s+\1\{{0,(\d+)\}}\s*\)\?")


def _bounded_repeats(body: str) -> str:
    """Rewrite llama.cpp's ``(x (x (x)?)?)?`` (how its converter spells "up to N x") as
    ``x{0,N}``: the same language, which llguidance's Lark reader does not nest too deeply."""
    while True:
        rewritten = _LAST_OPTIONAL.sub(lambda m: f"{m.group(1)}{{0,1}}", body)
        rewritten = _OPTIONAL_CHAIN.sub(
            lambda m: f"{m.group(1)}{{0,{int(m.group(2)) + 1}}}", rewritten
        )
        if rewritten == body:
            return body
        body = rewritten


def lark_grammar(gbnf: str) -> str:
    """The llguidance (Lark) grammar of the same language as ``gbnf``.

    Raises:
        BackendError: llguidance is not installed, or cannot read the grammar.
    """
    try:
        from llguidance.gbnf_to_lark import gbnf_to_lark
    except ImportError as exc:
        raise BackendError(f"The 'llguidance' constraint needs llguidance: {_INSTALL}") from exc
    flat = "\n".join(_bounded_repeats(line) for line in gbnf.splitlines())
    try:
        return gbnf_to_lark(flat)
    except Exception as exc:  # the converter raises its own error types
        raise BackendError(
            f"llguidance cannot read the grammar ({type(exc).__name__}: {exc}); use the "
            "local backend's default constraint 'grammar'"
        ) from exc


class MaskProcessor:
    """A ``llama-cpp-python`` logits processor that keeps decoding inside a grammar.

    Args:
        matcher: A fresh ``llguidance.LLMatcher`` for the grammar (one per reply).
        n_vocab: The model's vocabulary size.
        eos: The end-of-generation token.
        greedy: The request decodes greedily (temperature 0): the mask is computed only
            when the best token is not allowed, and every other token is then ruled out so
            the sampler can only pick the checked one.

    llama.cpp calls the processor through ``ctypes``, which swallows exceptions: a failure is
    kept in :attr:`error` (and generation steered to its end) for the caller to raise.
    """

    def __init__(self, matcher: Any, n_vocab: int, eos: int, greedy: bool) -> None:
        import llguidance.numpy as llg_numpy

        self._matcher = matcher
        self._n_vocab = n_vocab
        self._eos = eos
        self._greedy = greedy
        self._fill = llg_numpy.fill_next_token_bitmask
        self._mask = llg_numpy.allocate_token_bitmask(1, n_vocab)
        self._seen = -1  # tokens of input_ids already consumed (-1: the prompt is not known)
        self.masks = 0
        """Full masks computed (the other steps only checked the best token)."""
        self.error = ""
        """Why the processor failed ("" while it has not)."""

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        if self.error:
            return self._only(scores, self._eos)
        try:
            return self._constrain(input_ids, scores)
        except Exception as exc:  # raised later by the backend, not into ctypes
            self.error = f"{type(exc).__name__}: {exc}"
            return self._only(scores, self._eos)

    def _constrain(self, input_ids: Any, scores: Any) -> Any:
        import numpy as np

        if self._seen >= 0:
            for token in input_ids[self._seen :]:
                self._matcher.consume_token(int(token))
        self._seen = len(input_ids)
        if self._matcher.is_error():
            raise ValueError(f"llguidance left the grammar: {self._matcher.get_error()}")
        if self._greedy:
            best = int(np.argmax(scores))
            if self._matcher.validate_tokens([best]) == 1:
                return self._only(scores, best)
        self.masks += 1
        self._fill(self._matcher, self._mask)
        allowed = np.unpackbits(self._mask.view(np.uint8), bitorder="little")[: self._n_vocab]
        scores[: self._n_vocab][allowed == 0] = -np.inf
        return scores

    @staticmethod
    def _only(scores: Any, token: int) -> Any:
        """Rule out every token but ``token``."""
        value = scores[token]
        scores[:] = float("-inf")
        scores[token] = value
        return scores


_tokenizers: dict[str, Any] = {}
_grammars: dict[tuple[str, str], Any] = {}
_lock = threading.Lock()


def _tokenizer(llm: Any, model_key: str) -> Any:
    """llguidance's tokenizer of the model's vocabulary (built once per model file: ~1 s)."""
    import llguidance.llamacpp

    with _lock:
        tokenizer = _tokenizers.get(model_key)
        if tokenizer is None:
            tokenizer = llguidance.llamacpp.lltokenizer_from_vocab(llm._model.vocab)
            _tokenizers[model_key] = tokenizer
        return tokenizer


def mask_processor(llm: Any, model_key: str, gbnf: str, *, greedy: bool) -> MaskProcessor:
    """A :class:`MaskProcessor` for one reply of ``llm`` constrained by ``gbnf``.

    The grammar is compiled once per (model, grammar); each reply starts from a copy.

    Raises:
        BackendError: llguidance is missing or rejects the grammar.
    """
    try:
        import llguidance
    except ImportError as exc:
        raise BackendError(f"The 'llguidance' constraint needs llguidance: {_INSTALL}") from exc
    tokenizer = _tokenizer(llm, model_key)
    with _lock:
        template = _grammars.get((model_key, gbnf))
    if template is None:
        grammar = llguidance.LLMatcher.grammar_from_lark(lark_grammar(gbnf))
        template = llguidance.LLMatcher(tokenizer, grammar, log_level=0)
        if template.is_error():
            raise BackendError(
                f"llguidance rejects the grammar: {template.get_error()}; use the local "
                "backend's default constraint 'grammar'"
            )
        with _lock:
            _grammars[(model_key, gbnf)] = template
    return MaskProcessor(template.deep_copy(), llm.n_vocab(), llm.token_eos(), greedy)
