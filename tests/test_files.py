"""The one bounded reader and the containment check every data path uses."""

from __future__ import annotations

import json
import os
import pickle
import time
from pathlib import Path

import pytest

from memlab.backends.caching.cache_admin import prune_cache
from memlab.core.base.files import (
    FileReadError,
    RealDir,
    contained,
    io_reason,
    iter_lines,
    open_regular,
    read_bytes,
    read_text,
)


def test_only_regular_files_are_read_and_a_fifo_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    started = time.monotonic()
    with pytest.raises(FileReadError, match="named pipe"):
        read_bytes(fifo, what="x", max_bytes=10)
    assert time.monotonic() - started < 2  # opening did not wait for a writer
    with pytest.raises(FileReadError, match="a device"):
        read_bytes("/dev/zero", what="x", max_bytes=10)
    with pytest.raises(FileReadError, match="a directory"):
        read_bytes(tmp_path, what="x", max_bytes=10)
    with pytest.raises(FileNotFoundError):
        read_bytes(tmp_path / "missing", what="x", max_bytes=10)
    with pytest.raises(FileReadError, match="NUL"):
        read_bytes("a\x00b", what="x", max_bytes=10)


def test_sizes_are_bounded(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 11)
    assert read_bytes(path, what="f", max_bytes=11) == b"x" * 11
    with pytest.raises(FileReadError, match="11 bytes; memlab reads at most 10"):
        read_bytes(path, what="f", max_bytes=10)
    path.write_bytes(b"ok\xff")
    with pytest.raises(FileReadError, match=r"not UTF-8 text .* offset 2"):
        read_text(path, what="f")


def test_lines_are_bounded_one_by_one_and_in_all(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"a\n" + b"b" * 20 + b"\nc\n")
    with open_regular(path, what="t") as handle:
        lines = iter_lines(handle, path=path, what="t", max_line_bytes=10)
        assert next(lines) == b"a\n"
        with pytest.raises(FileReadError, match="line 2 is longer than 10 bytes"):
            next(lines)
    with open_regular(path, what="t") as handle:
        lines = iter_lines(handle, path=path, what="t", max_total_bytes=5)
        with pytest.raises(FileReadError, match="larger than 5 bytes"):
            list(lines)


def test_contained_refuses_links_and_dotdot_out_of_the_root(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "real").mkdir(parents=True)
    outside.mkdir()
    (root / "link").symlink_to(outside)
    (root / "real" / "file").write_text("x")
    (root / "real" / "file-link").symlink_to(outside / "f")
    assert contained(root / "real" / "file", root) == root.resolve() / "real" / "file"
    assert contained(root / "real" / "new" / "deeper", root).name == "deeper"  # not there yet
    for bad in (root / "link" / "f", root / "real" / "file-link", root / ".." / "outside"):
        with pytest.raises(FileReadError):
            contained(bad, root, "f", "write")
    with pytest.raises(FileReadError, match=r"cannot write f: .* is a symbolic link"):
        contained(root / "link" / "f", root, "f", "write")
    linked_root = tmp_path / "root-link"
    linked_root.symlink_to(root)  # the root itself may be a link: the user's choice
    assert contained(linked_root / "real" / "file", linked_root).is_file()
    with pytest.raises(FileReadError, match="symbolic link"):
        read_bytes(root / "real" / "file-link", what="f", max_bytes=10, inside=root)


def test_io_reason_says_why_in_words() -> None:
    assert io_reason(FileReadError("p", "f", "it is a device")) == "it is a device"
    assert io_reason(PermissionError(13, "Permission denied")) == "Permission denied"
    assert io_reason(OSError()) == "OSError"


def _entry(cache: Path, key: str, owner_key: str | None = None) -> Path:
    path = cache / key[:2] / f"{key}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    completion = {"text": "t", "finish_reason": "stop"}
    body = {
        "format": 1,
        "key": owner_key or key,
        "request": {"model": "m"},
        "completion": completion,
    }
    path.write_text(json.dumps(body))
    return path


def test_prune_removes_only_what_memlab_wrote(tmp_path: Path) -> None:
    cache, outside = tmp_path / "cache", tmp_path / "outside"
    outside.mkdir()
    victim = outside / ("ab" + "0" * 62 + ".json")
    victim.write_text("{}")
    sound = _entry(cache, "cd" + "1" * 62)
    corrupt = _entry(cache, "ef" + "2" * 62, owner_key="ef" + "3" * 62)  # another key inside
    foreign = cache / "cd" / "notes.json"
    foreign.write_text("{}")
    wrong_shard = cache / "cd" / ("ef" + "4" * 62 + ".json")  # an entry name in another shard
    wrong_shard.write_text("{}")
    (cache / "ab").symlink_to(outside)  # a shard that is a link out of the cache
    (cache / "cd" / ("12" + "5" * 62 + ".json")).symlink_to(victim)  # an entry that is a link
    result = prune_cache(cache, remove_all=True)
    assert sorted(result.removed) == sorted([str(sound), str(corrupt)])
    assert victim.read_text() == "{}" and foreign.exists() and wrong_shard.exists()
    assert not sound.exists() and not corrupt.exists() and result.failed == []


def test_a_resolved_root_is_used_as_given_and_as_resolved(tmp_path: Path) -> None:
    real = tmp_path / "real"
    (real / "shard").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(real)
    root = RealDir.of(link)
    assert root == str(real) and root.given == str(link)
    assert contained(link / "shard" / "a.json", root) == real / "shard" / "a.json"
    assert contained(real / "shard" / "a.json", root) == real / "shard" / "a.json"
    assert pickle.loads(pickle.dumps(root)).given == str(link)  # sent to Dask workers
    (real / "planted").symlink_to(tmp_path)
    with pytest.raises(FileReadError, match="symbolic link"):
        contained(link / "planted" / "x", root)
    with pytest.raises(FileReadError, match="outside"):
        contained(tmp_path / "elsewhere", root)


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="needs Linux /proc")
def test_read_bytes_reads_past_a_reported_size_of_zero() -> None:
    # /proc files are regular files of size 0 with content: the read goes on to the bound.
    data = read_bytes("/proc/self/status", what="f", max_bytes=1 << 20)
    assert data.startswith(b"Name:") and len(data) > 100
    with pytest.raises(FileReadError, match="grew past 10 bytes"):
        read_bytes("/proc/self/status", what="f", max_bytes=10)
