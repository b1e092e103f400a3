"""A priced test backend (an instrument): the simulated answerer and judges under a backend
name with a declared price, $1 a completion token and prompts free, every reply counted as
:data:`REPLY_TOKENS` completion tokens. So what a call costs is known without the code under
test: ``REPLY_TOKENS`` dollars.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager

from memlab.backends.registry import BACKENDS, register_backend
from memlab.core.pipeline.llm import Backend, Completion, CompletionRequest
from memlab.datasets import resolve_dataset
from memlab.grids.qa_spec import QASpec, resolve_prompts
from memlab.postrun.qa_step import qa_backend

__all__ = ["REPLY_TOKENS", "WORST", "Priced", "cost_limit", "priced_backend"]

REPLY_TOKENS = 32
WORST = 64  # the largest max_tokens asked: an answer's (a verdict's is 32), prompts free


def cost_limit(calls: int) -> int:
    """Dollars that let exactly ``calls`` or ``calls + 1`` calls through, one at a time: call
    ``k`` is sent while ``(k - 1) * REPLY_TOKENS`` spent plus its worst case (32 or 64) fits,
    so calls ``1..calls + 1`` all fit, and call ``calls + 3`` never does."""
    return WORST + calls * REPLY_TOKENS


class Priced:
    """The simulated answerer and judges under a priced backend's name, counting its calls."""

    model = "priced-curve"

    def __init__(self, name: str, inner: Backend) -> None:
        self.name = name
        self.inner = inner
        self.calls = 0
        self.answers = 0  # the calls asking for an answer's max_tokens, not a verdict's

    def complete(self, request: CompletionRequest) -> Completion:
        self.calls += 1
        self.answers += request.params.max_tokens == WORST
        done = self.inner.complete(request)
        return dataclasses.replace(done, completion_tokens=REPLY_TOKENS, model=self.model)


@contextmanager
def priced_backend(name: str) -> Iterator[Priced]:
    """Register backend ``name`` (``name:careful`` answers like ``sim:careful`` on personas,
    judged by the lenient prompt) at the price above while inside."""
    judges = resolve_prompts(QASpec(answer_backend=f"{name}:careful", judges=["lenient"])).judges
    backend = Priced(name, qa_backend("sim:careful", resolve_dataset("personas"), judges))
    register_backend(
        name,
        lambda argument, **options: backend,
        prices={"priced-": (0.0, 1_000_000.0)},  # USD per 1M tokens: $1 a completion token
    )
    try:
        yield backend
    finally:
        BACKENDS.unregister(name)
