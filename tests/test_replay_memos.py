"""The memos and skipped copies of the cached replay path give what the uncached path gives.

Each memo is checked for staleness (a changed input gives a changed result), and each copy a
replay no longer makes is checked with a sentinel the reader would change if it could.
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memlab.core.base.jsontext import JsonDepthError, loads_json
from memlab.core.jsondoc.contract import MINIMAL_VALID_UPDATE
from memlab.core.jsondoc.merge import ApplyResult
from memlab.core.pipeline.llm import Completion, CompletionRequest
from memlab.core.pipeline.storage import InMemoryStorage
from memlab.core.pipeline.updater import MemoryUpdater, _copied
from memlab.core.prompt_template import PromptVariant
from memlab.core.prompts import get_prompt
from memlab.datasets.models import Owner
from memlab.matching import verdict_store
from memlab.matching.base import MatchResult
from memlab.matching.default_matcher import DefaultMatcher, clear_shared_verdicts
from memlab.scoring.metrics import session_rows

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


class _CountingMatcher:
    """Covers when the stored text contains the gold text; counts every question."""

    name = "contains"

    def __init__(self) -> None:
        self.asked: Counter[tuple[str, str]] = Counter()

    def covers(self, stored: str, gold: str) -> bool:
        self.asked[(stored, gold)] += 1
        return gold.lower() in stored.lower()


def _owner(golds: list[str]) -> Owner:
    sessions = []
    for index, gold in enumerate(golds):
        start = T0 + timedelta(days=index)
        sessions.append(
            {
                "thread_id": f"t{index}",
                "started_at": start.isoformat(),
                "messages": [
                    {"role": "human", "content": gold, "timestamp": start.isoformat()},
                    {"role": "ai", "content": "Noted.", "timestamp": start.isoformat()},
                ],
                "labels": {
                    "facts": [{"id": f"g{index}", "content": gold, "category": "preference"}]
                },
            }
        )
    return Owner.model_validate({"user_id": "u1", "sessions": sessions})


def _memory(*contents: str) -> dict[str, Any]:
    facts = [{"id": f"f{i}", "content": c, "confidence": 0.9} for i, c in enumerate(contents)]
    return {"facts": facts}


GOLDS = ["likes tea", "lives in Leeds", "plays chess"]
SNAPSHOTS = [
    _memory("User likes tea"),
    _memory("User likes tea", "User lives in Leeds"),
    _memory("User likes tea", "User lives in Leeds", "User plays chess"),
]


def test_session_rows_ask_the_matcher_each_pair_once_and_score_every_snapshot() -> None:
    matcher = _CountingMatcher()
    rows = session_rows(_owner(GOLDS), SNAPSHOTS, [], [1, 1, 1], matcher=matcher)
    assert [r["gold_covered"] for r in rows] == [1, 2, 3]
    assert [r["stored_precise"] for r in rows] == [1, 2, 3]
    assert matcher.asked and max(matcher.asked.values()) == 1  # remembered within the owner


def test_remembered_verdicts_never_hide_a_changed_memory() -> None:
    owner = _owner(GOLDS)
    matcher = _CountingMatcher()
    before = session_rows(owner, SNAPSHOTS, [], [1, 1, 1], matcher=matcher)
    # The same owner, the last memory changed: Leeds replaced by a fact no gold states.
    changed = [*SNAPSHOTS[:2], _memory("User likes tea", "User owns a boat", "User plays chess")]
    after = session_rows(owner, changed, [], [1, 1, 1], matcher=matcher)
    assert before[:2] == after[:2]
    assert (before[2]["gold_covered"], after[2]["gold_covered"]) == (3, 2)
    assert (before[2]["stored_precise"], after[2]["stored_precise"]) == (3, 2)
    assert after[2]["recall"] == pytest.approx(2 / 3)


def test_saved_verdicts_are_decoded_column_by_column_into_the_same_results(
    tmp_path: Path,
) -> None:
    clear_shared_verdicts()
    matcher = DefaultMatcher()
    pairs = [("Lives in Leeds", "Lives in Leeds, UK"), ("Lives in Porto", "Lives in Leeds")]
    decided = {pair: matcher.match(*pair) for pair in pairs}
    verdict_store.save_verdicts(matcher, tmp_path)
    clear_shared_verdicts()
    reader = DefaultMatcher()
    assert verdict_store.load_verdicts(reader, tmp_path) == 2
    assert reader.decided() == decided
    assert all(type(r) is MatchResult and type(r.score) is float for r in decided.values())


@pytest.mark.parametrize(
    "rows",
    [
        [["a", "b", 1, True, "r"], ["a", "c", 0.5, True]],  # a short row
        [["a", "b", 1, True, "r"], ["a", "c", 0.5, 1, "r"]],  # matched is not a bool
        [["a", "b", 1, True, "r"], ["a", ["c"], 0.5, True, "r"]],  # a nested text
        [["a", "b", 1, True, "r"], {"0": "a"}],  # a row that is not a list
        [["a", "b", "1", True, "r"]],  # a score that is text
    ],
)
def test_a_verdicts_file_with_a_bad_row_is_ignored(
    tmp_path: Path, rows: list[Any], caplog: pytest.LogCaptureFixture
) -> None:
    clear_shared_verdicts()
    matcher = DefaultMatcher()
    path = verdict_store.verdicts_path(matcher, tmp_path)
    assert path is not None
    path.parent.mkdir(parents=True)
    code = verdict_store._code_digest()
    path.write_text(json.dumps({"format": 1, "code": code, "verdicts": rows}), encoding="utf-8")
    assert verdict_store.load_verdicts(matcher, tmp_path) == 0
    assert matcher.decided() == {}
    assert "ignoring the saved matcher verdicts" in caplog.text


def test_a_deeply_nested_verdicts_file_is_ignored(tmp_path: Path) -> None:
    clear_shared_verdicts()
    matcher = DefaultMatcher()
    path = verdict_store.verdicts_path(matcher, tmp_path)
    assert path is not None
    path.parent.mkdir(parents=True)
    path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    assert verdict_store.load_verdicts(matcher, tmp_path) == 0


def test_the_bracket_bound_of_loads_json_still_refuses_deep_values() -> None:
    shallow = "[" * 100 + "]" * 100  # exactly the limit: accepted without a walk
    assert loads_json(shallow) == json.loads(shallow)
    with pytest.raises(JsonDepthError):
        loads_json("[" * 101 + "]" * 101)
    # Brackets inside strings only make the count larger, never the value deeper.
    text = json.dumps({"prompt": "{" * 500, "nested": [[[1]]]})
    assert loads_json(text) == json.loads(text)
    assert loads_json(text.encode("utf-16")) == json.loads(text)
    deep = '{"pad": "' + "[" * 200 + '", "x": ' + "[" * 101 + "]" * 101 + "}"
    with pytest.raises(JsonDepthError):
        loads_json(deep)


class _EchoBackend:
    """Adds one fact per call; keeps each prompt."""

    name = "echo"
    model = "echo"

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def complete(self, request: CompletionRequest) -> Completion:
        self.prompts.append(str(request.messages[-1]["content"]))
        reply = copy.deepcopy(MINIMAL_VALID_UPDATE)
        reply["newFacts"] = [
            {"content": f"Fact {len(self.prompts)}", "category": "context", "confidence": 0.9}
        ]
        return Completion(text=json.dumps(reply), model="echo", backend="echo")


def test_the_prompt_reads_the_in_memory_store_without_changing_it() -> None:
    storage = InMemoryStorage(clock=lambda: T0)
    backend = _EchoBackend()
    updater = MemoryUpdater(backend=backend, storage=storage, clock=lambda: T0)
    messages = [{"role": "human", "content": "hello"}, {"role": "ai", "content": "hi"}]
    first = updater.run_update(messages, "t1")
    assert first.saved, first.error
    kept = storage.view()
    sentinel = json.dumps(kept, sort_keys=True)
    second = updater.run_update(messages, "t1")
    assert second.saved, second.error
    # The document the second prompt was rendered from is the store's own: still as it was.
    assert json.dumps(kept, sort_keys=True) == sentinel
    assert "Fact 1" in backend.prompts[1] and "Fact 2" not in backend.prompts[1]
    assert [f["content"] for f in storage.view()["facts"]] == ["Fact 1", "Fact 2"]
    # The result's bookkeeping is a copy: changing it leaves the store's facts alone.
    assert second.applied is not None
    second.applied.added[0]["content"] = "changed by a reader"
    second.applied.memory["facts"].clear()
    assert [f["content"] for f in storage.view()["facts"]] == ["Fact 1", "Fact 2"]


def test_a_custom_prompt_renderer_gets_a_copy() -> None:
    class Scribbler(PromptVariant):
        def render(self, current_memory: Any, conversation: str) -> str:
            current_memory.setdefault("facts", []).append({"content": "scribbled"})
            return super().render(current_memory, conversation)

    base = get_prompt("default")
    prompt = Scribbler(base.name, base.template, base.description)
    storage = InMemoryStorage(clock=lambda: T0)
    updater = MemoryUpdater(backend=_EchoBackend(), storage=storage, prompt=prompt)
    messages = [{"role": "human", "content": "hello"}, {"role": "ai", "content": "hi"}]
    assert updater.run_update(messages, "t1").saved
    assert [f["content"] for f in storage.view()["facts"]] == ["Fact 1"]


def test_bookkeeping_copies_are_deep() -> None:
    fact = {"id": "f1", "content": "likes tea", "confidence": 0.9}
    nested = [{"id": "f2", "tags": ["a"]}]
    for value in ([fact], ["x", 1, None], nested, ApplyResult(memory={}).merged):
        copied = _copied(value)
        assert copied == value and copied is not value
        assert all(a is not b for a, b in zip(copied, value, strict=True) if isinstance(a, dict))
    copied_nested = _copied(nested)
    copied_nested[0]["tags"].append("b")
    assert nested[0]["tags"] == ["a"]


class _BatchEmbedder:
    """Records every batch it embeds (a stand-in: its verdicts are not shared)."""

    name = "batches"

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    def embed(self, texts: Any) -> list[list[float]]:
        self.batches.append(list(texts))
        return [[1.0, float(len(t))] for t in texts]


def test_warmed_texts_are_embedded_in_one_batch_only_when_a_pair_is_decided() -> None:
    embedder = _BatchEmbedder()
    matcher = DefaultMatcher(embedder=embedder)
    matcher.warm(["Lives in Leeds", "Lives in Porto", "Plays chess"])
    assert embedder.batches == []  # nothing to decide yet
    first = matcher.match("Lives in Leeds", "Lives in Porto")
    assert len(embedder.batches) == 1
    assert {"Lives in Leeds", "Lives in Porto", "Plays chess"} <= set(embedder.batches[0])
    matcher.warm(["Lives in Leeds", "Lives in Porto", "Owns a boat"])
    assert matcher.match("Lives in Leeds", "Lives in Porto") is first  # memoised: no batch
    assert len(embedder.batches) == 1
    # A pair to decide: the waiting batch first (its new text), then the pair.
    matcher.match("Owns a boat", "Plays chess")
    assert "Owns a boat" in embedder.batches[1]
    # The verdict is the one an eagerly warmed matcher gives.
    eager = DefaultMatcher(embedder=_BatchEmbedder())
    eager.warm(["Lives in Leeds", "Lives in Porto", "Plays chess"])
    eager._warm_pending()
    assert eager.match("Lives in Leeds", "Lives in Porto") == first


def test_a_waiting_batch_that_fails_to_embed_is_not_tried_again() -> None:
    class Failing(_BatchEmbedder):
        def embed(self, texts: Any) -> list[list[float]]:
            if not self.batches:
                self.batches.append(["failed"])
                raise RuntimeError("embedding server down")
            return super().embed(texts)

    embedder = Failing()
    matcher = DefaultMatcher(embedder=embedder)
    matcher.warm(["Lives in Leeds", "Lives in Porto"])
    with pytest.raises(RuntimeError, match="embedding server down"):
        matcher.match("Lives in Leeds", "Lives in Porto")
    assert matcher._pending == []  # dropped, as an eager warm that raised leaves nothing
    # The pair is decided on its own, without the failed batch.
    assert matcher.match("Lives in Leeds", "Lives in Porto").matched is False
    assert all("Lives in Leeds" not in batch for batch in embedder.batches[1:])
