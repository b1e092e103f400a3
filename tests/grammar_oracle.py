"""llama.cpp's own grammar engine as an oracle: does a grammar accept a text, token by token?

It drives the same sampler that constrains decoding (``llama_sampler_init_grammar``) with the
vocabulary of the bundled model, offering one token at a time: a token the grammar forbids
gets logit -inf. Nothing here reads or measures grammars itself, so tests can check memlab's
grammar arithmetic against it.
"""

from __future__ import annotations

import ctypes
import math
from typing import Any

__all__ = ["GrammarOracle"]


class GrammarOracle:
    """Accepts or rejects texts under GBNF grammars with the bundled model's vocabulary."""

    def __init__(self) -> None:
        import llama_cpp

        from memlab.backends.local.llama_local import bundled_model_path

        self._llama_cpp = llama_cpp
        self.llm: Any = llama_cpp.Llama(
            model_path=str(bundled_model_path()), vocab_only=True, verbose=False
        )
        self._vocab = self.llm._model.vocab
        self.eos = int(self.llm.token_eos())
        self.byte_tokens = self._single_byte_tokens()

    def _single_byte_tokens(self) -> dict[int, int]:
        """byte value -> a token whose text is exactly that byte."""
        found: dict[int, int] = {}
        for token in range(self._llama_cpp.llama_vocab_n_tokens(self._vocab)):
            piece = self.llm.detokenize([token], special=False)
            if len(piece) == 1:
                found.setdefault(piece[0], token)
        return found

    def tokens(self, text: str) -> list[int]:
        """The usual tokenization of ``text``."""
        return list(self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def byte_spelling(self, text: str) -> list[int]:
        """``text`` spelled one single-byte token per byte (a valid, if unusual, generation)."""
        return [self.byte_tokens[byte] for byte in text.encode("utf-8")]

    def accepts(self, grammar: str, tokens: list[int]) -> bool:
        """Whether a model under ``grammar`` may emit ``tokens`` and then end generation."""
        lib = self._llama_cpp
        sampler = lib.llama_sampler_init_grammar(self._vocab, grammar.encode(), b"root")
        if not sampler:
            raise ValueError("llama.cpp could not parse the grammar")
        cell = (lib.llama_token_data * 1)()
        candidates = lib.llama_token_data_array(data=cell, size=1, selected=-1, sorted=False)
        try:
            for token in [*tokens, self.eos]:
                cell[0].id, cell[0].logit, cell[0].p = token, 0.0, 0.0
                candidates.size, candidates.selected = 1, -1
                lib.llama_sampler_apply(sampler, ctypes.byref(candidates))
                if cell[0].logit == -math.inf:
                    return False
                if token != self.eos:
                    lib.llama_sampler_accept(sampler, token)
            return True
        finally:
            lib.llama_sampler_free(sampler)

    def accepts_text(self, grammar: str, text: str) -> bool:
        """Whether ``grammar`` accepts ``text`` (in its usual tokenization) as a whole reply."""
        return self.accepts(grammar, self.tokens(text))
