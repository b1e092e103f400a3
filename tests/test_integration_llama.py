"""Real model calls: the bundled SmolLM2 in process and behind ``python -m llama_cpp.server``.

Kept fast: one server and one loaded model per module, two threads, small ``max_tokens``; the
work is bounded, never the wall time (a loaded machine is slower, not failing). No
reply is pinned: tests assert what every CPU and build satisfies (``any_machine`` runs the
properties under two thread counts and two seeds: ``pytest -m any_machine``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from real_server import patient_client, patient_server

from memlab.backends.caching.cache import CachedBackend
from memlab.backends.decoding.grammar import bounded_reply_tokens, worst_case_tokens
from memlab.backends.local.llama_local import LocalLlamaBackend
from memlab.backends.local.llama_server import LlamaServer
from memlab.backends.remote.openai_compat import OpenAICompatibleBackend
from memlab.core.jsondoc.contract import SchemaBounds, bounded_schema
from memlab.core.jsondoc.document import SeededFactIds
from memlab.core.jsondoc.parsing import FailureCategory, Rung, parse_reply
from memlab.core.pipeline.llm import BackendError, CompletionRequest, GenerationParams, OutputMode
from memlab.core.pipeline.storage import JsonFileStorage
from memlab.core.pipeline.updater import MemoryUpdater, UpdateResult

pytestmark = pytest.mark.integration

NOW = datetime(2024, 1, 1, tzinfo=UTC)
N_THREADS = 2
N_CTX = 4096

MESSAGES = [
    {"role": "user", "content": "I'm a data engineer at Acme and I prefer Python over Java."},
    {"role": "assistant", "content": "Noted, Python it is. What are you working on?"},
]
SMALL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["name"],
    "additionalProperties": False,
    "properties": {"name": {"type": "string", "maxLength": 20}},
}


def contract() -> dict[str, Any]:
    from memlab.core.jsondoc.contract import contract_schema

    return contract_schema()


def update_prompt() -> str:
    """The updater's prompt for MESSAGES over an empty memory."""
    from memlab.core.jsondoc.document import create_empty_memory
    from memlab.core.pipeline.messages import format_conversation_for_update
    from memlab.core.prompts import get_prompt

    memory = create_empty_memory(NOW)
    return get_prompt("default").render(memory, format_conversation_for_update(MESSAGES))


def chat(content: str, mode: OutputMode, max_tokens: int, schema: Any = None) -> CompletionRequest:
    return CompletionRequest(
        messages=[{"role": "user", "content": content}],
        mode=mode,
        schema=schema,
        params=GenerationParams(max_tokens=max_tokens),
    )


@pytest.fixture(scope="module")
def server() -> Iterator[LlamaServer]:
    with patient_server(n_threads=N_THREADS, n_ctx=N_CTX) as running:
        yield running


@pytest.fixture(scope="module")
def server_backend(server: LlamaServer) -> OpenAICompatibleBackend:
    # Bounded by max_tokens in each test, never by wall time (see real_server).
    return patient_client(server, schema_transport="json_object_schema")


@pytest.fixture(scope="module")
def local() -> LocalLlamaBackend:
    return LocalLlamaBackend(n_threads=N_THREADS, n_ctx=N_CTX)


@pytest.mark.parametrize("mode", [OutputMode.FREE, OutputMode.JSON_OBJECT])
def test_server_backend_real_replies(
    server_backend: OpenAICompatibleBackend, mode: OutputMode
) -> None:
    completion = server_backend.complete(chat(update_prompt(), mode, max_tokens=48))
    assert completion.completion_tokens > 0
    assert completion.prompt_tokens > 500  # the memory JSON and the conversation are in it
    assert completion.text
    assert completion.finish_reason in ("stop", "length")
    assert completion.model == "smollm2" and completion.backend == "openai"


def test_server_schema_constrained_via_json_object_schema(
    server_backend: OpenAICompatibleBackend,
) -> None:
    """The server decodes with llama.cpp's own grammar: its worst case is the budget."""
    bound = worst_case_tokens(SMALL_SCHEMA, "server")
    assert bound is not None
    prompt = "Reply with a JSON object whose name is Bob."
    completion = server_backend.complete(chat(prompt, OutputMode.JSON_SCHEMA, bound, SMALL_SCHEMA))
    assert completion.finish_reason == "stop"
    jsonschema.validate(json.loads(completion.text), SMALL_SCHEMA)


def test_server_rejects_json_schema_transport_with_hint(server: LlamaServer) -> None:
    backend = patient_client(server, max_attempts=3)
    with pytest.raises(BackendError, match="schema_transport='json_object_schema'"):
        backend.complete(chat("x", OutputMode.JSON_SCHEMA, 4, SMALL_SCHEMA))


# Replies of a tiny model differ between CPUs and llama.cpp builds (kernels, thread count and
# compiler change float sums, and one different logit changes the rest of the reply), so these
# tests pin properties every build satisfies. The outcome itself is recorded, not pinned.
@pytest.mark.parametrize("mode", [OutputMode.FREE, OutputMode.JSON_OBJECT])
def test_memory_updater_through_server(
    server_backend: OpenAICompatibleBackend,
    mode: OutputMode,
    tmp_path: Path,
    record_property: Any,
) -> None:
    store_file = tmp_path / "memory.json"
    updater = MemoryUpdater(
        backend=server_backend,
        storage=JsonFileStorage(store_file),
        output_mode=mode,
        params=GenerationParams(max_tokens=64),
        clock=lambda: NOW,
        fact_ids=SeededFactIds(1),
    )
    result = updater.run_update(MESSAGES, "thread-1")
    assert result.completion is not None, result.error
    assert result.completion.backend == "openai"
    assert_outcome_is_consistent(result, max_tokens=64, store_file=store_file)
    record_property("outcome", outcome(result))


def outcome(result: UpdateResult) -> str:
    assert result.parse is not None and result.completion is not None
    parsed = f"ok:{result.parse.rung}" if result.parse.ok else str(result.parse.category)
    completion = result.completion
    return f"{parsed}, {completion.finish_reason}, {completion.completion_tokens} tokens"


def assert_outcome_is_consistent(result: UpdateResult, max_tokens: int, store_file: Path) -> None:
    """What every build satisfies: a taxonomy outcome, and the budget and the store agree."""
    completion, parsed = result.completion, result.parse
    assert completion is not None and parsed is not None
    assert completion.finish_reason in ("stop", "length")
    assert 0 < completion.completion_tokens <= max_tokens
    if completion.finish_reason == "length":
        assert completion.completion_tokens == max_tokens
    if parsed.ok:
        assert parsed.rung is not None and result.saved and store_file.exists()
    else:
        assert parsed.category in set(FailureCategory)
        assert (result.saved, result.error_stage) == (False, "parse")
        assert not store_file.exists()


FOUR_WAYS = [(threads, seed) for threads in (1, 2) for seed in (0, 1)]
"""llama.cpp thread counts x sampling seeds: the real-model properties hold in all four."""
BOUNDS = SchemaBounds(summary_chars=16, fact_chars=32, max_new_facts=1, max_removals=1)
"""Small, so that a sampled reply stays short on a slow machine; the property is the same."""


@pytest.mark.any_machine
@pytest.mark.parametrize(("threads", "seed"), FOUR_WAYS)
@pytest.mark.parametrize("mode", [OutputMode.JSON_SCHEMA, OutputMode.FREE])
def test_real_replies_hold_their_properties(
    threads: int, seed: int, mode: OutputMode, tmp_path: Path, record_property: Any
) -> None:
    """Sampled (temperature 0.8, so each seed takes another path through the grammar): with the
    bound as max_tokens, a bounded reply always ends with ``stop`` and parses; a free reply
    ends in one of the taxonomy's outcomes, recorded."""
    backend = LocalLlamaBackend(n_threads=threads, n_ctx=N_CTX)
    bound = bounded_reply_tokens(BOUNDS, "compact")
    max_tokens = bound if mode is OutputMode.JSON_SCHEMA else 32
    store_file = tmp_path / "memory.json"
    updater = MemoryUpdater(
        backend=backend,
        storage=JsonFileStorage(store_file),
        output_mode=mode,
        schema_bounds=BOUNDS if mode is OutputMode.JSON_SCHEMA else None,
        params=GenerationParams(temperature=0.8, max_tokens=max_tokens, seed=seed),
        clock=lambda: NOW,
        fact_ids=SeededFactIds(1),
    )
    result = updater.run_update(MESSAGES, "thread-1")
    assert result.completion is not None, result.error
    record_property("outcome", outcome(result))
    assert_outcome_is_consistent(result, max_tokens=max_tokens, store_file=store_file)
    if mode is OutputMode.JSON_SCHEMA:
        assert result.completion.finish_reason == "stop"
        assert result.completion.completion_tokens < bound
        assert result.parse is not None and result.parse.ok
        assert result.parse.rung is Rung.STRICT
        jsonschema.validate(json.loads(result.completion.text), bounded_schema(contract(), BOUNDS))


def test_local_schema_constrained_contract_reply(
    local: LocalLlamaBackend, record_property: Any
) -> None:
    """Greedy decoding under the bounded contract grammar, max_tokens at the worst case: the
    reply closes, is compact JSON and satisfies the contract and its bounds."""
    schema = bounded_schema(contract(), BOUNDS)
    bound = worst_case_tokens(schema)
    assert bound == bounded_reply_tokens(BOUNDS, "compact")
    completion = local.complete(chat(update_prompt(), OutputMode.JSON_SCHEMA, bound, schema))
    record_property("schema_outcome", f"{completion.completion_tokens} tokens")
    assert completion.finish_reason == "stop"
    assert 0 < completion.completion_tokens < bound
    data = json.loads(completion.text)
    jsonschema.validate(data, schema)
    assert completion.text == json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    parsed = parse_reply(completion.text)
    assert parsed.ok and parsed.rung is Rung.STRICT


@pytest.mark.parametrize("seed", [0, 1])
def test_llguidance_replies_keep_the_contract_greedy_or_sampled(
    seed: int, record_property: Any
) -> None:
    """The llguidance constraint: greedy (the best token checked, the mask computed only when
    it is refused) and sampled at temperature 0.8 (the whole mask at every step), with the
    bound as max_tokens, each reply ends with ``stop``, is compact JSON and keeps the contract
    and its bounds."""
    pytest.importorskip("llguidance")
    guided = LocalLlamaBackend(n_threads=N_THREADS, n_ctx=N_CTX, constraint="llguidance")
    schema = bounded_schema(contract(), BOUNDS)
    bound = bounded_reply_tokens(BOUNDS, "compact")
    for temperature in (0.0, 0.8):
        request = chat(update_prompt(), OutputMode.JSON_SCHEMA, bound, schema)
        request = CompletionRequest(
            messages=request.messages,
            mode=request.mode,
            schema=schema,
            params=GenerationParams(max_tokens=bound, temperature=temperature, seed=seed),
        )
        completion = guided.complete(request)
        record_property(f"llguidance_t{temperature}", f"{completion.completion_tokens} tokens")
        assert completion.finish_reason == "stop"
        assert 0 < completion.completion_tokens < bound
        data = json.loads(completion.text)
        jsonschema.validate(data, schema)
        assert completion.text == json.dumps(data, separators=(",", ":"), ensure_ascii=False)


def test_local_free_and_json_modes_and_cache(local: LocalLlamaBackend, tmp_path: Path) -> None:
    cached = CachedBackend(local, tmp_path)
    for mode in (OutputMode.FREE, OutputMode.JSON_OBJECT):
        request = chat("Say hello in JSON.", mode, max_tokens=12)
        first = cached.complete(request)
        second = cached.complete(request)
        assert first.completion_tokens > 0 and not first.cached
        assert second.cached and second.text == first.text
    assert cached.counters.backend_calls == 2 and cached.counters.hits == 2


def test_local_model_is_loaded_once(local: LocalLlamaBackend) -> None:
    twin = LocalLlamaBackend(n_threads=N_THREADS, n_ctx=N_CTX)
    assert twin.llama() is local.llama()
    other = LocalLlamaBackend(n_threads=N_THREADS + 1, n_ctx=N_CTX)
    assert other.llama() is not local.llama()  # another thread count is another model


def test_a_reply_the_context_window_cuts_is_an_error() -> None:
    """llama-cpp-python lowers max_tokens to what n_ctx leaves; memlab refuses the cut reply.
    The grammar wants a string longer than 256 tokens of the vocabulary's longest text can
    hold, so on every build the window ends the reply."""
    small = LocalLlamaBackend(n_threads=N_THREADS, n_ctx=256)
    llm = small.llama()
    longest = max(len(llm.detokenize([t], special=False)) for t in range(llm.n_vocab()))
    prompt = "Repeat the letter a. " + "a " * 150
    too_long = {"type": "string", "minLength": 256 * longest + 1}
    request = chat(prompt, OutputMode.JSON_SCHEMA, max_tokens=4096, schema=too_long)
    with pytest.raises(BackendError, match=r"context window n_ctx=256 cut the reply"):
        small.complete(request)
