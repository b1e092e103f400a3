"""Memory stores: round trips, caching, failure atomicity, corruption, crashes, concurrency."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

import memlab
import memlab.core.pipeline.storage as storage_module
from memlab.core.jsondoc.contract import MINIMAL_VALID_UPDATE
from memlab.core.jsondoc.document import create_empty_memory, utc_iso
from memlab.core.jsondoc.merge import BaselineMerge
from memlab.core.pipeline.storage import (
    CorruptMemoryError,
    InMemoryStorage,
    JsonFileStorage,
    StorageError,
    clear_storage_cache,
)

NOW = datetime(2025, 1, 6, 9, 12, tzinfo=UTC)
SRC = Path(memlab.__file__).resolve().parents[1]

# Imports document.py/merge.py/storage.py without running the package __init__ files, so a
# child process starts in a few tens of milliseconds.
CHILD_PRELUDE = f"""
import os, sys, types
SRC = {str(SRC)!r}
sys.path.insert(0, SRC)
for _name in ("memlab", "memlab.core"):
    _module = types.ModuleType(_name)
    _module.__path__ = [os.path.join(SRC, *_name.split("."))]
    sys.modules[_name] = _module
from memlab.core.pipeline.storage import JsonFileStorage
"""


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    clear_storage_cache()


def sample(n_facts: int = 2) -> dict[str, Any]:
    memory = create_empty_memory(NOW)
    memory["user"]["workContext"] = {"summary": "Engineer", "updatedAt": "2025-01-01T00:00:00Z"}
    memory["facts"] = [
        {"id": f"fact_{i:08x}", "content": f"fact {i}", "category": "knowledge", "confidence": 0.9}
        for i in range(n_facts)
    ]
    return memory


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


# -- basics ------------------------------------------------------------------------------------
def test_missing_file_loads_an_empty_document(tmp_path: Path) -> None:
    store = JsonFileStorage(tmp_path / "memory.json")
    first = store.load()
    assert first["facts"] == [] and first["version"] == "1.0"
    first["facts"].append({"id": "x"})
    assert store.load()["facts"] == []
    assert not (tmp_path / "memory.json").exists()


def test_round_trip_and_last_updated(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "memory.json"
    store = JsonFileStorage(path)
    memory = sample()
    store.save(memory, now=NOW)
    on_disk = json.loads(path.read_text(encoding="utf-8"))
    assert on_disk == {**memory, "lastUpdated": "2025-01-06T09:12:00Z"}
    clear_storage_cache()
    assert JsonFileStorage(path).load() == on_disk
    store.save(on_disk, now=datetime(2025, 2, 1, tzinfo=UTC))
    assert store.reload()["lastUpdated"] == "2025-02-01T00:00:00Z"


def test_save_does_not_mutate_its_argument(tmp_path: Path) -> None:
    for store in _both_stores(tmp_path):
        memory = sample()
        memory["lastUpdated"] = "old"  # a stamp would replace it with NOW
        before = json.dumps(memory, sort_keys=True)
        store.save(memory, now=NOW)
        assert json.dumps(memory, sort_keys=True) == before, store
        assert store.load()["lastUpdated"] == utc_iso(NOW), store
        memory["facts"].clear()  # the store holds its own copy
        loaded = store.load()
        assert len(loaded["facts"]) == 2, store
        loaded["facts"].clear()  # callers get copies; the cache is unaffected
        assert len(store.load()["facts"]) == 2, store


def test_cache_hit_avoids_rereading_and_external_change_is_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "memory.json"
    store = JsonFileStorage(path)
    store.save(sample(), now=NOW)
    reads: list[str] = []
    real_open = storage_module.open_regular

    def counting_open(file: Any, **kwargs: Any) -> Any:
        if Path(file) == path:
            reads.append("rb")
        return real_open(file, **kwargs)

    monkeypatch.setattr(storage_module, "open_regular", counting_open)
    for _ in range(3):
        assert len(store.load()["facts"]) == 2
    assert reads == []  # served from the cache written by save()

    other = sample(5)
    other["lastUpdated"] = "2025-03-01T00:00:00Z"
    path.write_text(json.dumps(other), encoding="utf-8")  # same directory entry, new content
    assert len(store.load()["facts"]) == 5
    assert len(reads) == 1
    store.reload()
    assert len(reads) == 2


# -- failed saves ------------------------------------------------------------------------------
def test_failed_replace_leaves_file_cache_and_directory_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "memory.json"
    store = JsonFileStorage(path)
    store.save(sample(), now=NOW)
    before = path.read_bytes()

    def broken_replace(*args: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(StorageError, match="No space left"):
        store.save(sample(7), now=NOW)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert len(store.load()["facts"]) == 2
    assert leftovers(tmp_path) == []


def test_unserialisable_document_is_rejected_without_writing(tmp_path: Path) -> None:
    path = tmp_path / "memory.json"
    store = JsonFileStorage(path)
    store.save(sample(), now=NOW)
    before = path.read_bytes()
    bad = sample()
    bad["facts"].append({"when": datetime.now(UTC)})
    with pytest.raises(StorageError, match="not JSON-serialisable"):
        store.save(bad)
    bad["facts"][-1] = {"confidence": float("nan")}
    with pytest.raises(StorageError):
        store.save(bad)
    assert path.read_bytes() == before
    assert len(store.load()["facts"]) == 2
    assert leftovers(tmp_path) == []


def test_modify_callback_error_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "memory.json"
    store = JsonFileStorage(path)
    store.save(sample(), now=NOW)
    before = path.read_bytes()

    def explode(memory: dict[str, Any]) -> dict[str, Any]:
        memory["facts"].clear()
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        store.modify(explode)
    assert path.read_bytes() == before and len(store.load()["facts"]) == 2


# -- corruption --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("content", "detail"),
    [
        ('{"version": "1.0", "facts": [', "invalid JSON at line 1 column 30"),
        ("[1, 2]", "top level is a JSON array"),
        ('{"version": "1.0", "user": {}, "history": {}}', "missing required key 'facts'"),
        (b"\xff\xfe", "not UTF-8"),
    ],
)
def test_corrupt_file_is_preserved_and_reported(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, content: str | bytes, detail: str
) -> None:
    path = tmp_path / "memory.json"
    raw = content if isinstance(content, bytes) else content.encode()
    path.write_bytes(raw)
    store = JsonFileStorage(path, clock=lambda: NOW)
    with pytest.raises(CorruptMemoryError) as info:
        store.load()
    preserved = tmp_path / "memory.json.corrupt-20250106T091200Z"
    assert info.value.preserved_path == preserved
    message = str(info.value)
    assert str(path) in message and str(preserved) in message and detail in message
    assert preserved.read_bytes() == raw
    assert any(r.levelname == "ERROR" and detail in r.getMessage() for r in caplog.records)

    # The next update starts from an empty document and leaves the preserved copy alone.
    saved = store.modify(lambda m: {**m, "facts": [{"id": "fact_00000001", "content": "new"}]})
    assert [f["content"] for f in saved["facts"]] == ["new"]
    assert preserved.read_bytes() == raw
    assert json.loads(path.read_text())["facts"] == saved["facts"]


def test_second_corruption_gets_a_counter_and_modify_reports_it(tmp_path: Path) -> None:
    path = tmp_path / "memory.json"
    store = JsonFileStorage(path, clock=lambda: NOW)
    for expected in (
        "memory.json.corrupt-20250106T091200Z",
        "memory.json.corrupt-20250106T091200Z-1",
    ):
        path.write_text("not json")
        with pytest.raises(CorruptMemoryError):
            store.modify(lambda m: m)
        assert (tmp_path / expected).read_text() == "not json"
    assert not path.exists()


# -- in-memory store ---------------------------------------------------------------------------
def test_in_memory_storage_copies_in_and_out() -> None:
    initial = sample()
    store = InMemoryStorage(initial, clock=lambda: NOW)
    loaded = store.load()
    loaded["facts"].clear()
    initial["facts"].clear()
    assert len(store.load()["facts"]) == 2
    memory = sample(3)
    memory["lastUpdated"] = "sentinel"  # a stamp would replace it: the clock says NOW
    before = json.dumps(memory, sort_keys=True)
    store.save(memory)
    assert json.dumps(memory, sort_keys=True) == before
    assert store.load()["lastUpdated"] == utc_iso(NOW)
    saved = store.modify(lambda m: {**m, "facts": m["facts"][:1]})
    assert len(saved["facts"]) == 1 and store.save_count == 2
    with pytest.raises(StorageError):
        store.save({"facts": [object()]})
    assert len(store.reload()["facts"]) == 1
    assert InMemoryStorage().load()["facts"] == []


def test_a_view_stays_as_it_was_through_later_updates() -> None:
    """A view is the store's own document (no copy): later saves and merges must keep a new
    one, never change the one lent out."""
    store = InMemoryStorage(sample(3), clock=lambda: NOW)
    view = store.view()
    assert view is store.view()  # lent, not copied
    before = json.dumps(view, sort_keys=True)
    merge = BaselineMerge()
    removed = view["facts"][0]["id"]

    def apply(memory: dict[str, Any]) -> dict[str, Any]:
        update = {
            **MINIMAL_VALID_UPDATE,
            "user": {"workContext": {"summary": "Works nights", "shouldUpdate": True}},
            "newFacts": [{"content": "Likes tea", "category": "preference", "confidence": 0.9}],
            "factsToRemove": [removed],
        }
        return merge.apply_in_place(
            memory,
            update,
            thread_id="t",
            threshold=0.5,
            max_facts=3,
            now=NOW,
            new_id=lambda: "fact_new",
        ).memory

    saved = store.modify(apply)
    assert [f["content"] for f in saved["facts"]][-1] == "Likes tea"
    store.save({**saved, "facts": []})
    assert json.dumps(view, sort_keys=True) == before
    assert store.view()["facts"] == []


# -- crash safety ------------------------------------------------------------------------------
# One interpreter start-up for all kills: this "zygote" forks a fresh writer process per
# round; the writer announces its pid, saves in a tight loop and writes each counter after
# save() returned (acknowledged). The zygote reaps it and prints "dead".
CRASH_ZYGOTE = (
    CHILD_PRELUDE
    + """
path = sys.argv[1]
filler = "x" * 240
memory = {"version": "1.0", "lastUpdated": "", "user": {}, "history": {}, "counter": 0,
          "facts": [{"id": "fact_%08x" % i, "content": filler, "category": "knowledge",
                     "confidence": 0.9} for i in range(400)]}
for command in sys.stdin:
    counter = int(command)
    pid = os.fork()
    if pid == 0:
        store = JsonFileStorage(path)
        print("ready", os.getpid(), flush=True)
        while True:
            memory["counter"] = counter
            memory["facts"][counter % 400]["content"] = "%d %s" % (counter, filler)
            store.save(memory)
            # One write() call: a kill cannot split the line from its newline.
            os.write(1, b"%d\\n" % counter)
            counter += 1
    os.waitpid(pid, 0)
    print("dead", flush=True)
"""
)


def test_sigkill_during_saves_never_leaves_a_broken_file(tmp_path: Path) -> None:
    path = tmp_path / "memory.json"
    rng = random.Random(1234)
    acknowledged = -1  # last counter known to be on disk
    started = time.monotonic()
    progressed = 0
    zygote = subprocess.Popen(
        [sys.executable, "-c", CRASH_ZYGOTE, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert zygote.stdin is not None and zygote.stdout is not None
    try:
        for _ in range(100):
            zygote.stdin.write(f"{acknowledged + 1}\n")
            zygote.stdin.flush()
            word, pid = zygote.stdout.readline().split()
            assert word == "ready"
            # Let 0-2 saves complete, then kill 0-30 ms into the following ones.
            acks = [int(zygote.stdout.readline()) for _ in range(rng.randint(0, 2))]
            time.sleep(rng.uniform(0.0, 0.03))
            os.kill(int(pid), signal.SIGKILL)
            while (line := zygote.stdout.readline().strip()) != "dead":
                assert line, "zygote exited early"
                acks.append(int(line))
            last_ack = acks[-1] if acks else acknowledged
            document = json.loads(path.read_text(encoding="utf-8")) if path.exists() else None
            on_disk = document["counter"] if document is not None else -1
            # Either the last acknowledged write or the one in flight when the writer died.
            assert on_disk in (last_ack, last_ack + 1), (on_disk, last_ack)
            if document is not None:
                assert len(document["facts"]) == 400 and path.stat().st_size > 50_000
                assert document["facts"][on_disk % 400]["content"].startswith(f"{on_disk} ")
            progressed += on_disk > acknowledged
            acknowledged = on_disk
    finally:
        zygote.stdin.close()
        zygote.wait(timeout=30)
    assert progressed >= 30, "the writers rarely completed a save"
    assert time.monotonic() - started < 60
    # Killed writers may leave temporary files, but never in place of the document.
    assert all(name.startswith(".memory.json.") for name in leftovers(tmp_path))


# -- concurrency -------------------------------------------------------------------------------
WRITER_CHILD = (
    CHILD_PRELUDE
    + """
from memlab.core.jsondoc.merge import apply_updates
from memlab.core.jsondoc.document import random_fact_ids
path, writer = sys.argv[1], sys.argv[2]
store = JsonFileStorage(path)
ids = random_fact_ids()
for i in range(50):
    update = {"newFacts": [{"content": "writer %s update %d" % (writer, i),
                            "category": "context", "confidence": 0.9}]}
    store.modify(lambda m: apply_updates(m, update, thread_id=writer, threshold=0.7,
                                         max_facts=500, new_id=ids).memory)
"""
)


def test_two_processes_modifying_lose_no_update(tmp_path: Path) -> None:
    path = tmp_path / "memory.json"
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER_CHILD, str(path), name])
        for name in ("a", "b")
    ]
    for writer in writers:
        assert writer.wait(timeout=120) == 0
    facts = json.loads(path.read_text(encoding="utf-8"))["facts"]
    expected = {f"writer {w} update {i}" for w in "ab" for i in range(50)}
    assert {f["content"] for f in facts} == expected
    assert len(facts) == 100
    assert {f["source"] for f in facts} == {"a", "b"}


def test_atomic_write_gives_normal_permissions(tmp_path: Path) -> None:
    from memlab.core.base.atomic import atomic_write_text

    target = tmp_path / "report.html"
    atomic_write_text(target, "<p>hi</p>")
    umask = os.umask(0)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask
    target.chmod(0o640)
    atomic_write_text(target, "<p>again</p>")
    assert target.stat().st_mode & 0o777 == 0o640
    assert target.read_text() == "<p>again</p>"


def test_in_memory_store_is_stamped_at_load_until_first_save() -> None:
    """Like a file store before its file exists: the empty memory carries the current time."""
    times = iter([datetime(2025, 1, 1, tzinfo=UTC), datetime(2025, 1, 2, tzinfo=UTC)])
    store = InMemoryStorage(clock=lambda: next(times))
    assert store.load()["lastUpdated"] == "2025-01-01T00:00:00Z"
    assert store.load()["lastUpdated"] == "2025-01-02T00:00:00Z"


# --- modify keeps the document its function returns ------------------------------------------


def _both_stores(tmp_path: Path) -> list[Any]:
    return [
        InMemoryStorage(clock=lambda: NOW),
        JsonFileStorage(tmp_path / "m.json", clock=lambda: NOW),
    ]


def test_modify_returns_a_copy_the_caller_may_change(tmp_path: Path) -> None:
    for store in _both_stores(tmp_path):

        def add(document: dict[str, Any]) -> dict[str, Any]:
            document["facts"].append({"id": "fact_00000001", "content": "Likes tea"})
            return document

        saved = store.modify(add)
        saved["facts"].clear()
        assert [f["content"] for f in store.load()["facts"]] == ["Likes tea"], store
        assert store.load()["lastUpdated"] == "2025-01-06T09:12:00Z"


def test_modify_turns_tuples_and_subclasses_into_json(tmp_path: Path) -> None:
    class Text(str):
        pass

    for store in _both_stores(tmp_path):

        def with_tuple(document: dict[str, Any]) -> dict[str, Any]:
            document["facts"] = ({"id": "fact_00000001", "content": Text("Likes tea")},)
            return document

        store.modify(with_tuple)
        loaded = store.reload()
        assert loaded["facts"] == [{"id": "fact_00000001", "content": "Likes tea"}], store
        assert type(loaded["facts"][0]["content"]) is str


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), object()])
def test_modify_refuses_what_json_cannot_hold_and_keeps_the_old_document(
    tmp_path: Path, bad: object
) -> None:
    for store in _both_stores(tmp_path):
        store.save({**create_empty_memory(NOW), "facts": [{"id": "a", "content": "kept"}]})

        def spoil(document: dict[str, Any]) -> dict[str, Any]:
            document["facts"].append({"id": "b", "content": "x", "confidence": bad})
            return document

        with pytest.raises(StorageError):
            store.modify(spoil)
        assert [f["content"] for f in store.reload()["facts"]] == ["kept"], store


def test_modify_refuses_a_self_containing_document_without_hanging(tmp_path: Path) -> None:
    import threading

    for store in _both_stores(tmp_path):
        outcome: list[BaseException | None] = []

        def loop(document: dict[str, Any]) -> dict[str, Any]:
            document["facts"].append(document)
            return document

        def attempt(store: Any = store, outcome: list[BaseException | None] = outcome) -> None:
            try:
                store.modify(loop)
                outcome.append(None)
            except BaseException as exc:
                outcome.append(exc)

        worker = threading.Thread(target=attempt, daemon=True)
        worker.start()
        worker.join(10)
        assert not worker.is_alive(), f"{store}: modify hung on a self-containing document"
        assert isinstance(outcome[0], StorageError), outcome


def test_modify_copies_a_new_object_the_caller_still_holds(tmp_path: Path) -> None:
    for store in _both_stores(tmp_path):
        mine = create_empty_memory(NOW)
        mine["lastUpdated"] = "sentinel"  # a stamp would replace it: the clock says NOW
        mine["facts"] = [{"id": "fact_00000001", "content": "Likes tea"}]
        saved = store.modify(lambda _current, mine=mine: mine)
        assert mine["lastUpdated"] == "sentinel", store  # not restamped: the store took a copy
        assert saved["lastUpdated"] == utc_iso(NOW)
        mine["facts"][0]["content"] = "changed later"
        assert store.load()["facts"][0]["content"] == "Likes tea", store
