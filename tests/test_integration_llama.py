"""Real model calls: the bundled SmolLM2 in process and behind ``python -m llama_cpp.server``.

Kept fast: one server and one loaded model per module, two threads, small ``max_tokens``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from memlab.backends.cache import CachedBackend
from memlab.backends.llama_local import LocalLlamaBackend
from memlab.backends.llama_server import LlamaServer
from memlab.backends.openai_compat import OpenAICompatibleBackend
from memlab.backends.retry import RetryPolicy
from memlab.core.contract import MINIMAL_VALID_UPDATE
from memlab.core.document import SeededFactIds
from memlab.core.llm import BackendError, CompletionRequest, GenerationParams, OutputMode
from memlab.core.parsing import FailureCategory, Rung, parse_reply
from memlab.core.storage import JsonFileStorage
from memlab.core.updater import MemoryUpdater

pytestmark = pytest.mark.integration

NOW = datetime(2024, 1, 1, tzinfo=UTC)
N_THREADS = 2
N_CTX = 4096
SCHEMA_MAX_TOKENS = 256
"""Budget for the schema-constrained contract reply (the reply needs ~150 tokens minimum)."""

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
    from memlab.core.contract import contract_schema

    return contract_schema()


def update_prompt() -> str:
    """The updater's prompt for MESSAGES over an empty memory."""
    from memlab.core.document import create_empty_memory
    from memlab.core.messages import format_conversation_for_update
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
    with LlamaServer(n_threads=N_THREADS, n_ctx=N_CTX) as running:
        yield running


@pytest.fixture(scope="module")
def server_backend(server: LlamaServer) -> OpenAICompatibleBackend:
    return OpenAICompatibleBackend(
        server.model_alias,
        base_url=server.base_url,
        schema_transport="json_object_schema",
        timeout=300.0,
        retry=RetryPolicy(max_attempts=2),
    )


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
    completion = server_backend.complete(
        chat(
            "Reply with a JSON object whose name is Bob.", OutputMode.JSON_SCHEMA, 24, SMALL_SCHEMA
        )
    )
    jsonschema.validate(json.loads(completion.text), SMALL_SCHEMA)


def test_server_rejects_json_schema_transport_with_hint(server: LlamaServer) -> None:
    backend = OpenAICompatibleBackend(
        server.model_alias, base_url=server.base_url, retry=RetryPolicy(max_attempts=3)
    )
    with pytest.raises(BackendError, match="schema_transport='json_object_schema'"):
        backend.complete(chat("x", OutputMode.JSON_SCHEMA, 4, SMALL_SCHEMA))


# The model is deterministic (greedy decoding, fixed seed) and the updater's clock is fixed, so
# the prompt and the reply are the same on every run: 64 tokens are not enough for the contract
# reply, in either mode, so the parse ladder reports a truncated reply and nothing is saved.
@pytest.mark.parametrize("mode", [OutputMode.FREE, OutputMode.JSON_OBJECT])
def test_memory_updater_through_server(
    server_backend: OpenAICompatibleBackend, mode: OutputMode, tmp_path: Path
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
    assert (result.completion.finish_reason, result.completion.completion_tokens) == ("length", 64)
    assert result.parse is not None
    assert (result.parse.ok, result.parse.category) == (False, FailureCategory.TRUNCATED)
    assert (result.saved, result.error_stage) == (False, "parse")
    assert not store_file.exists()


def test_local_schema_constrained_contract_reply(
    local: LocalLlamaBackend, record_property: Any
) -> None:
    """The grammar forces contract-shaped JSON; over an empty memory the tiny model proposes
    nothing: the minimal valid update, well within the token budget."""
    schema = contract()
    completion = local.complete(
        chat(update_prompt(), OutputMode.JSON_SCHEMA, SCHEMA_MAX_TOKENS, schema)
    )
    record_property("schema_outcome", f"{completion.completion_tokens} tokens")
    assert completion.finish_reason == "stop"
    assert 0 < completion.completion_tokens < SCHEMA_MAX_TOKENS
    data = json.loads(completion.text)
    jsonschema.validate(data, schema)
    assert data == MINIMAL_VALID_UPDATE
    parsed = parse_reply(completion.text)
    assert parsed.ok and parsed.rung is Rung.STRICT


def test_local_free_and_json_modes_and_cache(local: LocalLlamaBackend, tmp_path: Path) -> None:
    cached = CachedBackend(local, tmp_path)
    for mode in (OutputMode.FREE, OutputMode.JSON_OBJECT):
        request = chat("Say hello in JSON.", mode, max_tokens=12)
        first = cached.complete(request)
        second = cached.complete(request)
        assert first.completion_tokens > 0 and not first.cached
        assert second.cached and second.text == first.text
    assert cached.counters.backend_calls == 2 and cached.counters.hits == 2


def test_local_model_is_loaded_once_and_deterministic(local: LocalLlamaBackend) -> None:
    twin = LocalLlamaBackend(n_threads=N_THREADS, n_ctx=N_CTX)
    assert twin.llama() is local.llama()
    request = chat("Name one colour.", OutputMode.FREE, max_tokens=8)
    assert local.complete(request).text == twin.complete(request).text
