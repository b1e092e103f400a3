"""The tiered memory's SQLite store: API, recall, determinism, bad files and crash safety."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from memlab.core.jsondoc.document import SeededFactIds
from memlab.core.pipeline.storage import CorruptMemoryError, StorageError
from memlab.errors import MemlabError
from memlab.memory import TieredStore
from memlab.memory.storage.items import CorruptStoreError, ForgettingRules
from memlab.memory.storage.vectors import HashedEmbedding, sqlite_vec_available

T0 = datetime(2025, 1, 1, 9, 0, tzinfo=UTC)
DAY = timedelta(days=1)
BACKENDS = [
    "numpy",
    pytest.param(
        "sqlite-vec",
        marks=pytest.mark.skipif(
            sqlite_vec_available() is not None, reason="needs memlab[vectors] (sqlite-vec)"
        ),
    ),
]


class TableEmbed:
    """Vectors chosen by the test: ``text -> vector``; unknown texts embed to e_0."""

    def __init__(self, table: dict[str, Sequence[float]]) -> None:
        self.table = table

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        return np.array([self.table.get(t, (1.0, 0.0, 0.0, 0.0)) for t in texts], np.float32)


def _fill(store: TieredStore) -> None:
    for n in range(5):
        at = T0 + n * DAY
        store.add_memory(f"fact {n}", category="context", importance=0.5, at=at, source=f"t{n}")
        store.add_episode(
            at=at, thread_id=f"t{n}", input=f"in {n}", output=f"out {n}", outcome="ok"
        )
        store.set_session_summary(f"t{n}", f"summary {n}", [f"point {n}"], at)
    store.recall_memories("fact 3", 2, at=T0 + 6 * DAY)
    store.forget(T0 + 40 * DAY, ForgettingRules())


def test_seeded_ids_make_identical_snapshots(tmp_path: Path) -> None:
    snapshots = []
    for name in ("a.db", "b.db"):
        with TieredStore(tmp_path / name, embed=HashedEmbedding(), ids=SeededFactIds(5)) as s:
            _fill(s)
            snapshots.append(s.snapshot())
        with TieredStore(tmp_path / name, embed=HashedEmbedding()) as reopened:
            assert reopened.snapshot() == snapshots[-1]
    assert snapshots[0] == snapshots[1]
    first = snapshots[0]
    assert json.loads(json.dumps(first)) == first  # JSON-able as it is
    # ids issued in call order by the seeded generator: memory, episode, memory, ...
    ids = SeededFactIds(5)
    issued = [ids() for _ in range(10)]
    assert [e["id"] for e in first["episodes"]] == issued[1::2]
    assert [s["thread_id"] for s in first["session_summaries"]] == [f"t{n}" for n in range(5)]


def test_session_summaries() -> None:
    s = TieredStore(None, embed=HashedEmbedding())
    assert s.session_summary() is None
    s.set_session_summary("t1", "one", ["a", "b"], T0 + DAY)
    s.set_session_summary("t2", "two", [], T0)  # written later, but earlier on the clock
    assert s.session_summary() == ("one", ["a", "b"])
    assert s.session_summary("t2") == ("two", [])
    s.set_session_summary("t2", "two again", ["c"], T0 + DAY)  # same time: the later write
    assert s.session_summary() == ("two again", ["c"])
    assert s.session_summary("missing") is None


@pytest.mark.parametrize("vectors", BACKENDS)
def test_recall_memories_ranks_by_cosine_then_age_and_touches(vectors: str) -> None:
    # cosines to e_0: (4, 3) -> 0.8, (3, 4) -> 0.6, (0, 1) -> 0
    table = {"q": (1, 0, 0, 0), "b1": (4, 3, 0, 0), "b2": (4, 3, 0, 0), "c": (3, 4, 0, 0)}
    s = TieredStore(None, embed=TableEmbed({**table, "d": (0, 1, 0, 0)}), vectors=vectors)
    assert s.vectors == vectors
    for n, text in enumerate(["d", "c", "b2", "b1"]):
        s.add_memory(text, category="c", importance=0.5, at=T0 + n * DAY, source="t")
    found = s.recall_memories("q", 3, at=T0 + 9 * DAY)
    assert [(m.content, score) for m, score in found] == [("b2", 0.8), ("b1", 0.8), ("c", 0.6)]
    assert all(m.last_accessed == T0 + 9 * DAY for m, _ in found)
    accessed = {m.content: m.last_accessed for m in s.memories()}
    assert accessed["d"] == T0  # not returned: not touched
    assert s.recall_memories("q", 0, at=T0) == []
    # an earlier access time never moves last_accessed back
    s.recall_memories("q", 1, at=T0)
    assert {m.content: m.last_accessed for m in s.memories()}["b2"] == T0 + 9 * DAY


@pytest.mark.parametrize("vectors", BACKENDS)
def test_recall_episodes_by_time_range_and_similarity(vectors: str) -> None:
    s = TieredStore(None, embed=HashedEmbedding(), vectors=vectors)
    for n in range(10):
        s.add_episode(at=T0 + n * DAY, thread_id=f"t{n}", input=f"word{n}", output="", outcome="")
    since, until = T0 + 2 * DAY, T0 + 5 * DAY  # both bounds included: days 2, 3, 4, 5
    assert [e.input for e in s.episodes(since=since, until=until)] == [
        "word2",
        "word3",
        "word4",
        "word5",
    ]
    latest = s.recall_episodes(None, 3, since=since, until=until)
    assert [(e.input, score) for e, score in latest] == [
        ("word5", 0.0),
        ("word4", 0.0),
        ("word3", 0.0),
    ]
    similar = s.recall_episodes("word7", 2)
    assert similar[0][0].input == "word7"
    assert similar[0][1] == pytest.approx(1.0)
    in_range = s.recall_episodes("word7", 10, since=since, until=until)
    assert sorted(e.input for e, _ in in_range) == ["word2", "word3", "word4", "word5"]
    assert s.recall_episodes("word7", 5, since=T0 + 20 * DAY) == []


@pytest.mark.parametrize("vectors", BACKENDS)
def test_many_ties_rank_by_time_then_id(vectors: str) -> None:
    # 80 identical inputs: every distance ties and the earliest times win. They are written
    # with the earliest in the middle, as sqlite-vec's k-nearest query returns the ties of the
    # first or last rows written: the store must rank all the tied rows itself.
    s = TieredStore(None, embed=HashedEmbedding(), vectors=vectors, ids=SeededFactIds(2))
    later = list(range(40, 80))
    for n in later[:20] + list(range(40)) + later[20:]:
        s.add_episode(at=T0 + n * DAY, thread_id="t", input="same words", output=str(n), outcome="")
    found = s.recall_episodes("same words", 3)
    assert [(e.output, score) for e, score in found] == [("0", 1.0), ("1", 1.0), ("2", 1.0)]


@pytest.mark.parametrize("vectors", BACKENDS)
def test_forgotten_memories_are_not_recalled(vectors: str) -> None:
    s = TieredStore(None, embed=HashedEmbedding(), vectors=vectors)
    s.add_memory("tea green", category="c", importance=0.11, at=T0, source="t")
    s.add_memory("tea black", category="c", importance=0.9, at=T0, source="t")
    assert len(s.recall_memories("tea", 5, at=T0)) == 2  # the index is loaded now
    events = s.forget(T0 + 3 * DAY, ForgettingRules())  # 0.11 * 0.95**3 = 0.0943 < 0.1
    assert [e.removed[0].content for e in events] == ["tea green"]
    assert [m.content for m, _ in s.recall_memories("tea", 5, at=T0 + 3 * DAY)] == ["tea black"]


def test_the_file_is_in_wal_mode_and_every_commit_is_synced(tmp_path: Path) -> None:
    path = tmp_path / "lane.db"
    with TieredStore(path, embed=HashedEmbedding()) as s:
        assert s._db.conn.execute("PRAGMA synchronous").fetchone() == (2,)  # FULL
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    conn.close()


def test_bad_arguments_are_store_errors() -> None:
    s = TieredStore(None, embed=HashedEmbedding(), ids=lambda: "same")
    with pytest.raises(StorageError, match="timezone-aware"):
        s.add_memory("x", category="c", importance=0.5, at=datetime(2025, 1, 1), source="t")
    with pytest.raises(StorageError, match="between 0 and 1"):
        s.add_memory("x", category="c", importance=1.5, at=T0, source="t")
    s.add_memory("first", category="c", importance=0.5, at=T0, source="t")
    with pytest.raises(StorageError, match="issued twice"):
        s.add_memory("second", category="c", importance=0.5, at=T0, source="t")
    assert [m.content for m in s.memories()] == ["first"]  # the failed write left nothing
    with pytest.raises(StorageError, match="not in the store"):
        s.replace_with_summary([s.memories()[0], _ghost()], "summary", T0)
    assert [m.content for m in s.memories()] == ["first"]
    with pytest.raises(StorageError, match=r"'sqlite-vec' or 'numpy'"):
        TieredStore(None, embed=HashedEmbedding(), vectors="faiss")  # type: ignore[arg-type]


def _ghost() -> object:
    from memlab.memory.storage.items import MemoryItem

    return MemoryItem("ghost", "x", "c", 0.5, T0, T0, "t")


def test_another_embedding_dimension_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "lane.db"
    with TieredStore(path, embed=HashedEmbedding(dim=64)) as s:
        s.add_memory("x", category="c", importance=0.5, at=T0, source="t")
    with (
        TieredStore(path, embed=HashedEmbedding(dim=32)) as s,
        pytest.raises(StorageError, match="64-dimensional"),
    ):
        s.add_memory("y", category="c", importance=0.5, at=T0, source="t")


# ---------------------------------------------------------------- bad files


def _one_line_naming(error: BaseException, path: Path) -> None:
    message = str(error)
    assert isinstance(error, MemlabError)
    assert "\n" not in message
    assert str(path) in message


@pytest.mark.parametrize("vectors", BACKENDS)
def test_a_file_that_is_not_a_database_is_refused_untouched(tmp_path: Path, vectors: str) -> None:
    path = tmp_path / "lane.db"
    path.write_bytes(b"this is not SQLite at all\n" * 200)
    before = path.read_bytes()
    with pytest.raises(CorruptStoreError) as caught:
        TieredStore(path, embed=HashedEmbedding(), vectors=vectors)
    _one_line_naming(caught.value, path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lane.db"]


def test_another_applications_database_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (body TEXT)")
    conn.execute("INSERT INTO notes VALUES ('keep me')")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    with pytest.raises(CorruptStoreError, match="without memlab's tables") as caught:
        TieredStore(path, embed=HashedEmbedding())
    _one_line_naming(caught.value, path)
    assert path.read_bytes() == before


def test_a_truncated_database_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "lane.db"
    with TieredStore(path, embed=HashedEmbedding(), vectors="numpy") as s:
        for n in range(300):
            s.add_episode(at=T0, thread_id="t", input=f"episode {n} " * 20, output="", outcome="")
    size = path.stat().st_size
    with path.open("r+b") as handle:
        handle.truncate(size // 2)
    before = path.read_bytes()
    with (
        pytest.raises(CorruptStoreError) as caught,
        TieredStore(path, embed=HashedEmbedding(), vectors="numpy") as s,
    ):
        s.episodes()
        s.recall_episodes("episode", 3)
    _one_line_naming(caught.value, path)
    assert path.read_bytes() == before


# ---------------------------------------------------------------- crash safety

_WRITER = textwrap.dedent(
    """
    import sys
    from datetime import UTC, datetime, timedelta
    from pathlib import Path
    from memlab.memory import TieredStore
    from memlab.memory.storage.items import ForgettingRules
    from memlab.memory.storage.vectors import HashedEmbedding

    store = TieredStore(Path(sys.argv[1]), embed=HashedEmbedding(), vectors=sys.argv[2])
    t0 = datetime(2025, 1, 1, tzinfo=UTC)
    for n in range(1_000_000):
        at = t0 + timedelta(minutes=n)
        store.add_memory(f"write {n}", category="c", importance=0.9, at=at, source="t")
        store.add_episode(at=at, thread_id="t", input=f"write {n}", output="", outcome="")
        if n % 7 == 0:
            store.forget(at, ForgettingRules(merge_above=1.0))
        print(n, flush=True)
    """
)


@pytest.mark.parametrize("vectors", BACKENDS)
def test_sigkill_mid_write_leaves_the_committed_prefix(tmp_path: Path, vectors: str) -> None:
    path = tmp_path / "lane.db"
    child = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(path), vectors],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    reported = -1
    deadline = time.monotonic() + 60
    while reported < 40 and time.monotonic() < deadline:  # let it commit a few dozen writes
        line = child.stdout.readline()
        if not line:
            break
        reported = int(line)
    os.kill(child.pid, signal.SIGKILL)
    rest = child.stdout.read().split()
    child.wait()
    assert child.returncode == -signal.SIGKILL
    if rest:
        reported = int(rest[-1])
    assert reported >= 40, "the writer did not get going"

    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    conn.close()
    with TieredStore(path, embed=HashedEmbedding(), vectors=vectors) as s:
        memories = [m.content for m in s.memories()]
        episodes = [e.input for e in s.episodes()]
    count = len(memories)
    # a prefix of the writes, holding every write that returned before the kill
    assert memories == [f"write {n}" for n in range(count)]
    assert count - 1 <= len(episodes) <= count
    assert episodes == [f"write {n}" for n in range(len(episodes))]
    assert len(episodes) >= reported + 1


@pytest.mark.parametrize("vectors", BACKENDS)
def test_threads_may_share_a_store(tmp_path: Path, vectors: str) -> None:
    s = TieredStore(tmp_path / "lane.db", embed=HashedEmbedding(), vectors=vectors)
    s.recall_episodes("warm", 1)  # the NumPy index is loaded: the threads' writes update it

    def write(name: str) -> None:
        for n in range(30):
            at = T0 + n * DAY
            s.add_episode(at=at, thread_id=name, input=f"{name} {n}", output="", outcome="")
            s.add_memory(f"{name} fact {n}", category="c", importance=0.5, at=at, source=name)

    threads = [threading.Thread(target=write, args=(name,)) for name in ("alpha", "beta")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(s.episodes()) == len(s.memories()) == 60
    assert len(s.recall_episodes("alpha 7", 60)) == 60
    s.close()


@pytest.mark.parametrize("vectors", BACKENDS)
def test_recall_before_anything_is_written(tmp_path: Path, vectors: str) -> None:
    path = tmp_path / "lane.db"
    with TieredStore(path, embed=HashedEmbedding(), vectors=vectors) as s:
        assert s.recall_episodes("tea", 3) == []
        assert s.recall_memories("tea", 3, at=T0) == []
        s.add_memory("tea", category="c", importance=0.5, at=T0, source="t")
    with TieredStore(path, embed=HashedEmbedding(), vectors=vectors) as s:  # dim known now
        assert s.recall_episodes("tea", 3) == []
        assert [m.content for m, _ in s.recall_memories("tea", 3, at=T0)] == ["tea"]


def test_one_storage_error_for_both_stores(tmp_path: Path) -> None:
    """The tiered database and the JSON document raise the same error type, with the file."""
    assert issubclass(CorruptStoreError, StorageError)
    assert issubclass(CorruptMemoryError, StorageError)
    path = tmp_path / "memory.sqlite"
    path.write_bytes(b"not a database at all" * 200)
    with pytest.raises(StorageError) as caught:
        TieredStore(path, embed=HashedEmbedding())
    assert caught.value.path == path
    assert str(path) in str(caught.value)
