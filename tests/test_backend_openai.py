"""OpenAICompatibleBackend against a loopback HTTP server of the test's own."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fake_openai import FakeServer, chat_body

from memlab.backends.remote.openai_compat import OpenAICompatibleBackend, to_strict_schema
from memlab.backends.remote.retry import RetryExhaustedError, RetryPolicy
from memlab.core.pipeline.llm import (
    BackendError,
    CompletionRequest,
    GenerationParams,
    ModelRequestsBlockedError,
    OutputMode,
    allow_model_requests,
)

SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "Memory update",
    "type": "object",
    "required": ["facts"],
    "additionalProperties": False,
    "properties": {
        "facts": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["content", "category"],
                "properties": {
                    "content": {"type": "string", "minLength": 1, "pattern": "\\S"},
                    "category": {"type": "string", "enum": ["goal", "context"]},
                    "sourceError": {"type": "string"},
                },
            },
        }
    },
}


def make_backend(server: FakeServer, **options: Any) -> OpenAICompatibleBackend:
    options.setdefault("retry", RetryPolicy(max_attempts=1))
    return OpenAICompatibleBackend("fake-model", base_url=server.base_url, **options)


def request(mode: OutputMode = OutputMode.FREE, **kw: Any) -> CompletionRequest:
    return CompletionRequest(
        messages=[{"role": "user", "content": "remember that I like tea"}],
        mode=mode,
        schema=SCHEMA,
        params=GenerationParams(max_tokens=64),
        **kw,
    )


@pytest.fixture
def ok_server() -> Iterator[FakeServer]:
    with FakeServer([(200, {}, chat_body(), 0.0)]) as server:
        yield server


def test_completion_fields_and_usage_are_recorded(ok_server: FakeServer) -> None:
    with allow_model_requests():
        completion = make_backend(ok_server).complete(request())
    assert completion.text == '{"ok": true}'
    assert (completion.prompt_tokens, completion.completion_tokens) == (11, 7)
    assert completion.finish_reason == "stop"
    assert completion.model == "fake-model"
    assert completion.backend == "openai"
    assert completion.latency_s > 0
    body = ok_server.requests[0]["body"]
    assert body["temperature"] == 0.0 and body["max_tokens"] == 64 and body["seed"] == 0
    assert "response_format" not in body
    assert ok_server.requests[0]["path"] == "/v1/chat/completions"


def test_json_object_mode(ok_server: FakeServer) -> None:
    with allow_model_requests():
        make_backend(ok_server).complete(request(OutputMode.JSON_OBJECT))
    assert ok_server.requests[0]["body"]["response_format"] == {"type": "json_object"}


def test_json_schema_mode_sends_strict_schema(ok_server: FakeServer) -> None:
    with allow_model_requests():
        make_backend(ok_server).complete(request(OutputMode.JSON_SCHEMA))
    fmt = ok_server.requests[0]["body"]["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["name"] == "Memory_update"
    assert fmt["json_schema"]["strict"] is True
    item = fmt["json_schema"]["schema"]["properties"]["facts"]["items"]
    assert item["required"] == ["content", "category", "sourceError"]
    assert item["additionalProperties"] is False
    assert item["properties"]["sourceError"]["type"] == ["string", "null"]


def test_json_object_schema_transport_for_llama_cpp(ok_server: FakeServer) -> None:
    backend = make_backend(ok_server, schema_transport="json_object_schema")
    with allow_model_requests():
        backend.complete(request(OutputMode.JSON_SCHEMA))
    fmt = ok_server.requests[0]["body"]["response_format"]
    assert fmt["type"] == "json_object"
    content = fmt["schema"]["properties"]["facts"]["items"]["properties"]["content"]
    # llama.cpp cannot compile unanchored patterns and would silently drop the whole schema:
    # the non-blank "\S" becomes an anchored pattern whose first character is not whitespace.
    assert content["pattern"].startswith("^[^") and content["pattern"].endswith("*$")
    assert content["minLength"] == 1
    assert "$schema" not in fmt["schema"]


def test_json_schema_mode_without_schema_is_an_error(ok_server: FakeServer) -> None:
    req = CompletionRequest(
        messages=[{"role": "user", "content": "x"}], mode=OutputMode.JSON_SCHEMA
    )
    with allow_model_requests(), pytest.raises(ValueError, match="needs a schema"):
        make_backend(ok_server).complete(req)


def test_server_rejecting_json_schema_suggests_transport() -> None:
    # What python -m llama_cpp.server answers for response_format type json_schema.
    error = {
        "error": {
            "message": "1 validation error: {'loc': ('body', 'response_format', 'type'), "
            "'msg': \"Input should be 'text' or 'json_object'\"}",
            "type": "internal_server_error",
        }
    }
    with FakeServer([(500, {}, error, 0.0)]) as server:
        backend = make_backend(server, retry=RetryPolicy(max_attempts=3, sleep=lambda s: None))
        with allow_model_requests(), pytest.raises(BackendError) as info:
            backend.complete(request(OutputMode.JSON_SCHEMA))
    assert "schema_transport='json_object_schema'" in str(info.value)
    assert not isinstance(info.value, RetryExhaustedError)
    assert len(server.requests) == 1  # a permanent rejection is not retried


def test_bad_request_is_not_retried() -> None:
    with FakeServer([(400, {}, {"error": {"message": "bad"}}, 0.0)]) as server:
        backend = make_backend(server, retry=RetryPolicy(max_attempts=4, sleep=lambda s: None))
        with allow_model_requests(), pytest.raises(BackendError, match="HTTP 400"):
            backend.complete(request())
    assert len(server.requests) == 1


def test_timeout_is_retried_then_reported() -> None:
    with FakeServer([(200, {}, chat_body(), 1.0)]) as server:
        sleeps: list[float] = []
        backend = make_backend(
            server,
            timeout=0.2,
            retry=RetryPolicy(max_attempts=2, base_delay=0.01, sleep=sleeps.append),
        )
        with allow_model_requests(), pytest.raises(RetryExhaustedError, match="timed out"):
            backend.complete(request())
    assert len(sleeps) == 1


def test_env_vars_give_base_url_and_key(
    ok_server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", ok_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-env-key-123")
    backend = OpenAICompatibleBackend("fake-model", retry=RetryPolicy(max_attempts=1))
    with allow_model_requests():
        backend.complete(request())
    assert ok_server.requests[0]["headers"]["authorization"] == "Bearer sk-test-env-key-123"
    assert "sk-test" not in repr(backend)


def test_missing_key_and_url_explains_what_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(BackendError, match="OPENAI_API_KEY"):
        OpenAICompatibleBackend("gpt-4o-mini")


def test_requests_blocked_in_unit_tests(ok_server: FakeServer) -> None:
    with pytest.raises(ModelRequestsBlockedError):
        make_backend(ok_server).complete(request())
    assert ok_server.requests == []


def test_to_strict_schema_handles_refs_enums_and_untyped() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"$ref": "#/$defs/x"},
            "b": {"type": "string", "enum": ["p", "q"]},
            "c": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
        },
        "required": ["a"],
        "$defs": {"x": {"type": "object", "properties": {"y": {"type": "integer"}}}},
    }
    strict = to_strict_schema(schema)
    assert strict["required"] == ["a", "b", "c"]
    assert strict["properties"]["a"] == {"$ref": "#/$defs/x"}
    assert strict["properties"]["b"] == {"type": ["string", "null"], "enum": ["p", "q", None]}
    assert strict["properties"]["c"] == {
        "anyOf": [{"anyOf": [{"type": "string"}, {"type": "integer"}]}, {"type": "null"}]
    }
    assert strict["$defs"]["x"]["required"] == ["y"]
    assert strict["$defs"]["x"]["properties"]["y"]["type"] == ["integer", "null"]
    assert schema["required"] == ["a"]  # input untouched
