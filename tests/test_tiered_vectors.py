"""sqlite-vec and NumPy rank alike; ``auto`` picks one and says which; the hashed embedding."""

from __future__ import annotations

import hashlib
import logging
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from memlab.core.jsondoc.document import SeededFactIds
from memlab.core.pipeline.storage import StorageError
from memlab.memory import TieredStore
from memlab.memory.storage import vectors as vectors_module
from memlab.memory.storage.vectors import HashedEmbedding, sqlite_vec_available

T0 = datetime(2025, 1, 1, tzinfo=UTC)
DAY = timedelta(days=1)
WORDS = [f"w{n}" for n in range(40)]

needs_sqlite_vec = pytest.mark.skipif(
    sqlite_vec_available() is not None, reason="needs memlab[vectors] (sqlite-vec)"
)


def _text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6)))


def _filled(path: Path, vectors: str) -> TieredStore:
    rng = random.Random(11)
    store = TieredStore(
        path,
        embed=HashedEmbedding(dim=32),
        vectors=vectors,
        ids=SeededFactIds(1),  # type: ignore[arg-type]
    )
    for n in range(400):
        at = T0 + timedelta(hours=n % 97)  # repeated times: ties on time are broken by id
        store.add_episode(at=at, thread_id="t", input=_text(rng), output="", outcome="")
        if n % 4 == 0:
            store.add_memory(_text(rng), category="c", importance=0.5, at=at, source="t")
    return store


@needs_sqlite_vec
def test_sqlite_vec_and_numpy_return_the_same_rows_in_the_same_order(tmp_path: Path) -> None:
    stores = {name: _filled(tmp_path / f"{name}.db", name) for name in ("sqlite-vec", "numpy")}
    assert {name: s.vectors for name, s in stores.items()} == {
        "sqlite-vec": "sqlite-vec",
        "numpy": "numpy",
    }
    rng = random.Random(5)
    ranges = [(None, None), (T0 + timedelta(hours=10), None), (None, T0 + timedelta(hours=50))]
    compared = 0
    for n in range(30):
        query = _text(rng)
        since, until = ranges[n % 3]
        results = {
            name: [
                (e.id, score) for e, score in s.recall_episodes(query, 15, since=since, until=until)
            ]
            for name, s in stores.items()
        }
        ids = {name: [row_id for row_id, _ in found] for name, found in results.items()}
        assert ids["sqlite-vec"] == ids["numpy"], query
        scores = {name: np.array([s for _, s in found]) for name, found in results.items()}
        np.testing.assert_allclose(scores["sqlite-vec"], scores["numpy"], atol=2e-6)
        compared += len(ids["numpy"])
    assert compared == 30 * 15
    query_time = T0 + timedelta(days=30)
    memories = {
        name: [(m.id, score) for m, score in s.recall_memories("w1 w2 w3", 20, at=query_time)]
        for name, s in stores.items()
    }
    assert [i for i, _ in memories["sqlite-vec"]] == [i for i, _ in memories["numpy"]]
    # the same files, opened with the other backend, rank alike too
    for store in stores.values():
        store.close()
    swapped = TieredStore(
        tmp_path / "numpy.db", embed=HashedEmbedding(dim=32), vectors="sqlite-vec"
    )
    again = [(m.id, score) for m, score in swapped.recall_memories("w1 w2 w3", 20, at=query_time)]
    assert [i for i, _ in again] == [i for i, _ in memories["numpy"]]


@needs_sqlite_vec
def test_sqlite_vec_ranks_episodes_in_its_vec0_table(monkeypatch: pytest.MonkeyPatch) -> None:
    # Texts of distinct words tie nowhere: the k-nearest query answers without the full scan,
    # and agrees with NumPy.
    scans: list[str] = []
    real_scan = vectors_module.SqliteVecIndex._scan

    def counting_scan(self: object, conn: object, table: str, *args: object) -> object:
        scans.append(table)
        return real_scan(self, conn, table, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(vectors_module.SqliteVecIndex, "_scan", counting_scan)
    rng = random.Random(2)
    numpy_store = TieredStore(None, embed=HashedEmbedding(dim=48), vectors="numpy")
    vec_store = TieredStore(None, embed=HashedEmbedding(dim=48), vectors="sqlite-vec")
    for n in range(300):
        text = " ".join(f"v{rng.randrange(10_000)}" for _ in range(4))
        for store in (numpy_store, vec_store):
            store.add_episode(at=T0 + n * DAY, thread_id="t", input=text, output="", outcome="")
    for n in range(20):
        query = " ".join(f"v{rng.randrange(10_000)}" for _ in range(3))
        since = T0 + (n * 10) * DAY if n % 2 else None
        found = {
            store.vectors: [(e.input, s) for e, s in store.recall_episodes(query, 5, since=since)]
            for store in (numpy_store, vec_store)
        }
        assert [t for t, _ in found["sqlite-vec"]] == [t for t, _ in found["numpy"]]
    assert scans == []


@needs_sqlite_vec
def test_a_file_written_without_sqlite_vec_is_mirrored_when_it_opens(tmp_path: Path) -> None:
    path = tmp_path / "lane.db"
    with TieredStore(path, embed=HashedEmbedding(dim=8), vectors="sqlite-vec") as store:
        store.add_episode(at=T0, thread_id="t", input="alpha", output="", outcome="")
    with TieredStore(path, embed=HashedEmbedding(dim=8), vectors="numpy") as store:
        store.add_episode(at=T0, thread_id="t", input="beta", output="", outcome="")
    with TieredStore(path, embed=HashedEmbedding(dim=8), vectors="sqlite-vec") as store:
        assert [e.input for e, _ in store.recall_episodes("beta", 1)] == ["beta"]
        assert [e.input for e, _ in store.recall_episodes("alpha", 1)] == ["alpha"]


@needs_sqlite_vec
def test_zero_vectors_rank_as_orthogonal_in_both() -> None:
    for name in ("sqlite-vec", "numpy"):
        s = TieredStore(None, embed=HashedEmbedding(dim=8), vectors=name)  # type: ignore[arg-type]
        s.add_episode(at=T0, thread_id="t", input="", output="", outcome="")  # the zero vector
        s.add_episode(at=T0, thread_id="t", input="apple", output="", outcome="")
        found = [(e.input, score) for e, score in s.recall_episodes("apple", 2)]
        assert found == [("apple", 1.0), ("", 0.0)], name
        assert [score for _, score in s.recall_episodes("", 2)] == [0.0, 0.0], name


def test_auto_falls_back_to_numpy_and_logs_why(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(vectors_module, "sqlite_vec_available", lambda: "sqlite-vec is missing")
    with caplog.at_level(logging.INFO, logger="memlab.memory.storage.vectors"):
        store = TieredStore(None, embed=HashedEmbedding())
    assert store.vectors == "numpy"
    assert "vectors by NumPy (sqlite-vec is missing)" in caplog.text
    with pytest.raises(StorageError, match="not available: sqlite-vec is missing"):
        TieredStore(None, embed=HashedEmbedding(), vectors="sqlite-vec")


@needs_sqlite_vec
def test_auto_picks_sqlite_vec_when_it_loads(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="memlab.memory.storage.vectors"):
        store = TieredStore(None, embed=HashedEmbedding())
    assert store.vectors == "sqlite-vec"
    assert "vectors by sqlite-vec" in caplog.text


def test_hashed_embedding_is_deterministic_and_word_based() -> None:
    embed = HashedEmbedding(dim=16)
    a, b, c, empty, ab = embed(["Green tea", "tea green", "coffee", "", "green tea coffee"])
    assert a.dtype == np.float32
    assert np.array_equal(a, b)  # word order and case do not matter
    assert not np.array_equal(a, c)
    assert not empty.any()
    np.testing.assert_allclose(ab, a + c)  # a sum of word vectors
    # the same on every machine: SHAKE-256 bytes of the word as int8 / 128
    assert embed(["x"])[0, :4].tolist() == [
        b / 128 for b in np.frombuffer(hashlib.shake_256(b"x").digest(4), np.int8).tolist()
    ]
    assert embed([]).shape == (0, 16)
