"""Batched local decoding on the bundled SmolLM2: concurrent greedy calls decoded together.

Kept small (three prompts on the concise prompt, one thread, 24-token replies: well under a
minute on a quiet machine); no reply is pinned: the batched replies
are compared with the sequential path's replies on the same build, and prefix reuse with a
count computed from the prompts' tokens.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import jsonschema
import pytest

from memlab.backends.local.llama_batch import BatchOptions, common_prefix, shared_decoder
from memlab.backends.local.llama_local import LocalLlamaBackend
from memlab.core.jsondoc.contract import contract_schema
from memlab.core.jsondoc.document import create_empty_memory
from memlab.core.pipeline.llm import BackendError, CompletionRequest, GenerationParams, OutputMode
from memlab.core.pipeline.messages import format_conversation_for_update
from memlab.core.prompts import get_prompt

N_THREADS = 1  # threads spinning at a barrier stall on a loaded machine
N_CTX = 1024  # a ~660-token prompt and its reply
LINES = [
    "I'm a data engineer at Acme and I prefer Python over Java.",
    "My sister Ana moved to Lisbon last spring.",
    "We adopted a grey cat named Miso in October.",
]


def update_request(line: str, max_tokens: int) -> CompletionRequest:
    memory = create_empty_memory(datetime(2024, 1, 1, tzinfo=UTC))
    dialogue = [{"role": "user", "content": line}, {"role": "assistant", "content": "Noted."}]
    prompt = get_prompt("concise").render(memory, format_conversation_for_update(dialogue))
    return CompletionRequest(
        messages=[{"role": "user", "content": prompt}],
        mode=OutputMode.JSON_SCHEMA,
        schema=contract_schema(),
        params=GenerationParams(max_tokens=max_tokens),
    )


def test_batch_option_is_typed() -> None:
    with pytest.raises(BackendError, match="batch option is invalid"):
        LocalLlamaBackend(batch={"lanes": 4, "slots": 2})
    with pytest.raises(BackendError, match="batch option is invalid"):
        LocalLlamaBackend(batch={"lanes": 0})
    assert LocalLlamaBackend(batch={"lanes": 3}).batch == BatchOptions(lanes=3)
    assert LocalLlamaBackend(batch=1).batch is None  # one lane is the sequential path


def test_batch_lanes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMLAB_LLAMA_BATCH", "4")
    assert LocalLlamaBackend().batch == BatchOptions(lanes=4)
    monkeypatch.setenv("MEMLAB_LLAMA_BATCH", "four")
    with pytest.raises(BackendError, match="MEMLAB_LLAMA_BATCH must be a lane count"):
        LocalLlamaBackend()


def test_common_prefix_counts_leading_equal_tokens() -> None:
    assert common_prefix([1, 2, 3, 4], [1, 2, 9, 4]) == 2
    assert common_prefix([1, 2], [1, 2, 3]) == 2
    assert common_prefix([], [1]) == 0


@pytest.mark.integration
def test_batched_greedy_replies_equal_sequential_and_reuse_the_prefix() -> None:
    """Three concurrent greedy calls through the batched decoder give the sequential path's
    replies (same build, same tokens), and every call after the first evaluates only what
    its prompt does not share with the kept prefix."""
    work = [update_request(line, max_tokens=24) for line in LINES]
    sequential = LocalLlamaBackend(n_threads=N_THREADS, n_ctx=N_CTX)
    batched = LocalLlamaBackend(n_threads=N_THREADS, n_ctx=N_CTX, batch={"lanes": 3})
    expected = [sequential.complete(r) for r in work]
    with ThreadPoolExecutor(3) as pool:
        replies = list(pool.map(batched.complete, work))
    for want, got in zip(expected, replies, strict=True):
        assert got.text == want.text
        assert got.finish_reason == want.finish_reason
        assert (got.prompt_tokens, got.completion_tokens) == (
            want.prompt_tokens,
            want.completion_tokens,
        )
        if got.finish_reason == "stop":
            jsonschema.validate(json.loads(got.text), contract_schema())
    # The grammar is checked on the best token first: the whole vocabulary only when the
    # grammar rules that token out (a reply's first tokens), and equal replies either way.
    decoder = shared_decoder(batched.llama(), N_CTX, N_THREADS, BatchOptions(lanes=3))
    generated = sum(r.completion_tokens for r in replies)
    assert generated <= decoder.grammar_tokens <= generated + len(replies)  # + end-of-text
    # How often the best token is ruled out depends on the model's preferences, which differ
    # between builds: only the counters' consistency is a property of every build.
    assert 0 <= decoder.full_grammar_passes <= decoder.grammar_tokens
    llm = batched.llama()
    tokens = [llm.tokenize(r.messages[0]["content"].encode(), add_bos=False) for r in work]
    shared = min(common_prefix(tokens[0], t) for t in tokens[1:])
    assert shared > 200  # the instructions come before the dialogue
    # The first call evaluates its whole prompt; each other one reuses at least the part
    # every prompt shares (the chat template only adds a header before it).
    reused = sorted(r.cached_prompt_tokens for r in replies)
    assert reused[0] == 0
    assert all(n >= shared for n in reused[1:])
    # A second round finds the shared prefix kept between calls.
    again = batched.complete(work[0])
    assert again.text == expected[0].text
    assert again.cached_prompt_tokens >= shared


@pytest.mark.integration
def test_batched_call_too_long_for_the_window_is_an_error() -> None:
    small = LocalLlamaBackend(n_threads=N_THREADS, n_ctx=256, batch=2)
    request = update_request(LINES[0], max_tokens=16)
    with pytest.raises(BackendError, match="does not fit the context window n_ctx=256"):
        small.complete(request)


@pytest.mark.integration
def test_batched_llguidance_replies_equal_sequential_and_reuse_the_prefix() -> None:
    """With llguidance's masks as the constraint, concurrent greedy calls go through the
    batched decoder too (the second reuses the kept prefix) and give the sequential replies."""
    pytest.importorskip("llguidance")
    work = [update_request(line, max_tokens=16) for line in LINES[:2]]
    sequential = LocalLlamaBackend(n_threads=N_THREADS, n_ctx=N_CTX, constraint="llguidance")
    batched = LocalLlamaBackend(
        n_threads=N_THREADS, n_ctx=N_CTX, constraint="llguidance", batch={"lanes": 2}
    )
    expected = [sequential.complete(r) for r in work]
    with ThreadPoolExecutor(2) as pool:
        replies = list(pool.map(batched.complete, work))
    assert [r.text for r in replies] == [e.text for e in expected]
    assert [r.completion_tokens for r in replies] == [e.completion_tokens for e in expected]
    llm = batched.llama()
    tokens = [llm.tokenize(r.messages[0]["content"].encode(), add_bos=False) for r in work]
    assert max(r.cached_prompt_tokens for r in replies) >= common_prefix(*tokens)
