"""The tiered store's embedding as a lane setting: hashed words (the default), wordllama, or
an OpenAI-compatible embeddings endpoint through the response cache.

The endpoint is :class:`fake_openai.EmbeddingServer` on 127.0.0.1 (an instrument): its
vectors are crafted so that recall picks the memory the hashed words would not, so a recall
that followed the endpoint is told apart from one that did not.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fake_openai import SECRET, EmbeddingServer

from memlab.backends.caching.cache import CachedBackend, CacheMissError, CacheMode
from memlab.backends.remote.embeddings import CachedEndpointEmbedding
from memlab.backends.remote.openai_compat import OpenAICompatibleEmbeddings
from memlab.backends.remote.retry import RetryPolicy
from memlab.backends.scripted import ScriptedBackend
from memlab.core.jsondoc.parsing import ParseOptions
from memlab.core.pipeline.llm import (
    BackendError,
    GenerationParams,
    OutputMode,
    allow_model_requests,
)
from memlab.core.pipeline.queue import ConversationContext
from memlab.grids.grid import Grid
from memlab.grids.lane import LaneConfig
from memlab.memory.design import DesignContext
from memlab.memory.designs import MEMORY_DESIGNS
from memlab.memory.tiers.tiered import TieredStrategy, lane_settings, tiered_identity
from memlab.sweeps.driver import sweep
from memlab.sweeps.plan import load_grid

T0 = datetime(2025, 1, 1, 9, tzinfo=UTC)
T1 = T0 + timedelta(hours=1)
TEA = "User likes green tea"
DOG = "User owns a dog named Rex"
QUESTION = "What green tea does the user like?"  # shares words with TEA, none but "user" with DOG
# The endpoint's vectors: the question points at DOG, not at TEA.
VECTORS = {TEA: [1.0, 0.0, 0.0], DOG: [0.0, 1.0, 0.0], QUESTION: [0.1, 1.0, 0.0]}


@pytest.fixture
def server() -> Iterator[EmbeddingServer]:
    with EmbeddingServer(VECTORS, default=[0.0, 0.0, 1.0]) as running, allow_model_requests():
        yield running


def _open(
    tmp_path: Path, lane: LaneConfig, cache: Path, mode: CacheMode = CacheMode.READ_WRITE
) -> TieredStrategy:
    """The lane's tiered memory as a replay opens it, its backend in the response cache."""
    backend = CachedBackend(ScriptedBackend(["{}"], repeat_last=True), cache, mode=mode)
    design = MEMORY_DESIGNS.get("tiered")
    assert design is not None
    strategy = design.open(
        DesignContext(
            backend=backend,
            output_mode=OutputMode.FREE,
            params=GenerationParams(),
            parse_options=ParseOptions(),
            sample=0,
            clock=lambda: T1,
            store_path=tmp_path / "stores" / "owner.json",
            ids=iter(f"id{i}" for i in range(10**6)).__next__,
            settings=lane.settings(),
            updater=lambda _storage: None,  # type: ignore[arg-type,return-value]
        )
    )
    assert isinstance(strategy, TieredStrategy)
    return strategy


def _recalled(strategy: TieredStrategy) -> list[str]:
    """Which memory a user message recalls (recall_k 1): the one whose decay restarted."""
    for content in (TEA, DOG):
        strategy.store.add_memory(content, category="context", importance=0.9, at=T0, source="t")
    question = [{"role": "human", "content": QUESTION}]
    strategy.process(ConversationContext("t", question))
    memories = strategy.store.memories()
    strategy.close()
    return [m.content for m in memories if m.last_accessed == T1]


def _lane(base_url: str | None, **tiered: Any) -> LaneConfig:
    embedding = {"kind": "openai", "model": "embed-small", "base_url": base_url}
    return LaneConfig(memory="tiered", tiered={"recall_k": 1, "embedding": embedding, **tiered})


def test_recall_follows_the_endpoints_vectors_and_a_second_run_is_cached(
    tmp_path: Path, server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    hashed = LaneConfig(memory="tiered", tiered={"recall_k": 1})
    assert _recalled(_open(tmp_path / "h", hashed, tmp_path / "cache-h")) == [TEA]
    lane = _lane(server.base_url)
    assert _recalled(_open(tmp_path / "a", lane, tmp_path / "cache")) == [DOG]
    asked = len(server.requests)
    assert asked == 3  # two memories and one question, one request each
    assert {r["path"] for r in server.requests} == {"/v1/embeddings"}
    assert {r["body"]["model"] for r in server.requests} == {"embed-small"}
    assert server.requests[0]["headers"]["authorization"] == f"Bearer {SECRET}"
    # a second replay over the same cache asks the endpoint nothing, and recalls the same
    assert _recalled(_open(tmp_path / "b", lane, tmp_path / "cache")) == [DOG]
    assert len(server.requests) == asked
    # read-only replays offline too
    offline = _open(tmp_path / "c", lane, tmp_path / "cache", CacheMode.READ_ONLY)
    assert _recalled(offline) == [DOG] and len(server.requests) == asked


def test_the_api_key_reaches_no_file_and_no_log(
    tmp_path: Path,
    server: EmbeddingServer,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    caplog.set_level(logging.DEBUG)
    _recalled(_open(tmp_path / "a", _lane(server.base_url), tmp_path / "cache"))
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.suffix == ".json" for p in (tmp_path / "cache").rglob("*"))
    for path in written:
        assert SECRET.encode() not in path.read_bytes(), path
    assert SECRET not in caplog.text
    assert server.requests  # the key was sent, and kept out of everything written


def test_an_endpoint_error_is_one_line_without_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with EmbeddingServer({}, [0.0], status=401) as server, allow_model_requests():
        endpoint = OpenAICompatibleEmbeddings("m", base_url=server.base_url)
        with pytest.raises(BackendError) as caught:
            CachedEndpointEmbedding(endpoint)(["a"])
    message = str(caught.value)
    assert "HTTP 401" in message and "embeddings" in message
    assert "\n" not in message and SECRET not in message


def test_a_body_that_is_not_embeddings_is_one_line(tmp_path: Path) -> None:
    with EmbeddingServer({}, default=[], status=None) as server, allow_model_requests():
        endpoint = OpenAICompatibleEmbeddings(
            "m", base_url=server.base_url, retry=RetryPolicy(max_attempts=1)
        )
        with pytest.raises(BackendError) as caught:
            endpoint.embed(["a"])  # an empty vector is not an embedding
    assert "'data[0].embedding' is not a list of numbers" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_read_only_miss_names_the_kind(tmp_path: Path, server: EmbeddingServer) -> None:
    endpoint = OpenAICompatibleEmbeddings("m", base_url=server.base_url)
    cache = CachedBackend(ScriptedBackend(["{}"]), tmp_path, mode=CacheMode.READ_ONLY)
    with pytest.raises(CacheMissError, match=r"^Response cache miss in read-only mode: "):
        CachedEndpointEmbedding(endpoint, cache)(["a"])
    assert not server.requests


def test_the_default_keeps_every_id_and_identity() -> None:
    plain = LaneConfig(memory="tiered")
    for spelled in ("hashed", {"kind": "hashed"}):
        same = LaneConfig(memory="tiered", tiered={"embedding": spelled})
        assert same.point_id == plain.point_id and "tiered" not in same.model_dump()
    identity = tiered_identity(lane_settings(plain.settings()))
    assert identity["embedding"] == {"name": "hashed-words", "dim": 256}
    assert "embedding" not in identity["settings"]
    chosen = LaneConfig(memory="tiered", tiered={"embedding": "wordllama"})
    assert chosen.point_id != plain.point_id
    chosen_identity = tiered_identity(lane_settings(chosen.settings()))
    assert chosen_identity["embedding"]["name"] == "wordllama-l2_supercat-256"


def test_wordllama_recalls_a_paraphrase(tmp_path: Path) -> None:
    try:
        import wordllama  # noqa: F401
    except ImportError:
        print("skipped: tiered.embedding wordllama needs the optional extra memlab[embeddings]")
        pytest.skip("needs the optional extra memlab[embeddings] (wordllama)")
    lane = LaneConfig(memory="tiered", tiered={"recall_k": 1, "embedding": "wordllama"})
    strategy = _open(tmp_path, lane, tmp_path / "cache")
    for content in ("User has a peanut allergy", "User drives a red car"):
        strategy.store.add_memory(content, category="context", importance=0.9, at=T0, source="t")
    ((item, _score),) = strategy.store.recall_memories("allergic to peanuts", 1, at=T1)
    strategy.close()
    assert item.content == "User has a peanut allergy"


@pytest.mark.parametrize(
    ("embedding", "message"),
    [
        ("{kind: openai}", "kind openai needs model"),
        ("{kind: openai, model: m, base_url: 'http://u:pw@127.0.0.1/v1'}", "user:password@"),
        ("{kind: wordllama, dim: 100}", "Input should be 64, 128 or 256"),
        ("{kind: wordllama, model: m}", "wordllama takes only dim"),
        ("bert", "Input should be a valid dictionary"),
    ],
)
def test_a_bad_embedding_is_one_line_at_its_key(
    tmp_path: Path, embedding: str, message: str
) -> None:
    path = tmp_path / "grid.yaml"
    path.write_text(
        f"name: g\nbase:\n  memory: tiered\n  tiered:\n    embedding: {embedding}\n",
        encoding="utf-8",
    )
    from memlab.grids.grid import GridError

    with pytest.raises(GridError) as caught:
        load_grid(path)
    text = str(caught.value)
    assert text.startswith(f"{path}:5: base.tiered.embedding") and message in text
    assert "\n" not in text


def _tiered_chat(body: dict[str, Any]) -> str:
    """A scripted model for the tiered calls (an instrument): each summary keeps the
    conversation's first line as a key point, every rating is 0.9."""
    from memlab.core.tiered_prompts import importance_prompt, summary_prompt

    prompt = str(body["messages"][-1]["content"])
    folded = summary_prompt().parse(prompt)
    if folded is not None:
        first = folded["conversation"].strip().splitlines()[0][:80]
        return json.dumps({"summary": "s", "keyPoints": [first]})
    rated = importance_prompt().parse(prompt)
    if rated is not None:
        count = len(rated["candidates"].splitlines())
        ratings = [
            {"index": i, "importance": 0.9, "category": "context"} for i in range(1, count + 1)
        ]
        return json.dumps({"ratings": ratings})
    return json.dumps({"summary": "merged"})


def test_a_swept_tiered_lane_embeds_through_the_runs_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with (
        EmbeddingServer({}, default=[0.5, 0.5], chat=_tiered_chat) as server,
        allow_model_requests(),
    ):
        grid = Grid.from_mapping(
            {
                "name": "embedded",
                "max_owners": 1,
                "max_sessions": 2,
                "base": {
                    "backend": "openai:chat-model",
                    "memory": "tiered",
                    "tiered": {
                        "embedding": {"kind": "openai", "model": "e", "base_url": server.base_url}
                    },
                },
            }
        )
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        cache = tmp_path / "cache"

        def embeddings() -> int:
            return sum(r["path"].endswith("/embeddings") for r in server.requests)

        run = sweep("personas", grid, runs_dir=tmp_path / "a", progress=False, cache_dir=cache)
        first, asked = embeddings(), len(server.requests)
        calls = run.calls
        assert calls.loc[calls["call"] == "importance", "saved"].any()  # memories were made
        assert first > 0 and asked > first  # chat calls and embeddings both went out
        again = sweep("personas", grid, runs_dir=tmp_path / "b", progress=False, cache_dir=cache)
        assert len(server.requests) == asked  # the second run asked the server nothing
        assert again.calls["error"].isna().all() and again.calls["cached"].any()
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def test_wordllama_missing_is_a_grid_error_before_any_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memlab.backends.remote import embeddings as loader
    from memlab.grids.grid import GridError

    def no_wordllama() -> Any:
        raise ImportError("No module named 'wordllama'")

    monkeypatch.setattr(loader, "_import_wordllama", no_wordllama)
    monkeypatch.setattr(loader.WordLlamaEmbedder, "_models", {})
    path = tmp_path / "grid.yaml"
    path.write_text(
        "name: g\nbase:\n  memory: tiered\n  tiered:\n    embedding: wordllama\n", encoding="utf-8"
    )
    with pytest.raises(GridError) as caught:
        load_grid(path)
    assert str(caught.value) == (
        f"{path}:5: base.tiered.embedding: tiered.embedding wordllama needs the optional "
        "extra: pip install 'memlab[embeddings]'"
    )
