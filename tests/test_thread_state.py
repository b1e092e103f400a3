"""ThreadState schema and its reducers (SPEC §1.10)."""

from __future__ import annotations

import typing

from memlab.compat.thread_state import (
    SandboxState,
    ThreadDataState,
    ThreadState,
    ViewedImageData,
    merge_artifacts,
    merge_viewed_images,
)

IMG_A: ViewedImageData = {"base64": "AAA", "mime_type": "image/png"}
IMG_B: ViewedImageData = {"base64": "BBB", "mime_type": "image/jpeg"}


def test_merge_artifacts_none_handling() -> None:
    assert merge_artifacts(None, None) == []
    assert merge_artifacts(None, ["a", "a", "b"]) == ["a", "b"]
    existing = ["x"]
    result = merge_artifacts(existing, None)
    assert result == ["x"]
    assert result is not existing


def test_merge_artifacts_order_preserving_dedupe() -> None:
    existing = ["out/report.md", "out/chart.png"]
    new = ["out/chart.png", "out/data.csv", "out/report.md", "out/extra.txt"]
    assert merge_artifacts(existing, new) == [
        "out/report.md",
        "out/chart.png",
        "out/data.csv",
        "out/extra.txt",
    ]
    assert existing == ["out/report.md", "out/chart.png"]


def test_merge_viewed_images() -> None:
    assert merge_viewed_images(None, None) == {}
    assert merge_viewed_images(None, {"a.png": IMG_A}) == {"a.png": IMG_A}
    existing = {"a.png": IMG_A}
    kept = merge_viewed_images(existing, None)
    assert kept == existing and kept is not existing
    assert merge_viewed_images(existing, {}) == {}
    assert merge_viewed_images(existing, {"b.jpg": IMG_B}) == {"a.png": IMG_A, "b.jpg": IMG_B}
    replaced = merge_viewed_images(existing, {"a.png": IMG_B})
    assert replaced == {"a.png": IMG_B}
    assert existing == {"a.png": IMG_A}


def test_thread_state_schema_and_reducers() -> None:
    hints = typing.get_type_hints(ThreadState, include_extras=True)
    assert set(hints) == {
        "messages",
        "sandbox",
        "thread_data",
        "title",
        "artifacts",
        "todos",
        "uploaded_files",
        "viewed_images",
    }
    assert ThreadState.__total__ is False
    assert typing.get_args(hints["artifacts"])[1] is merge_artifacts
    assert typing.get_args(hints["viewed_images"])[1] is merge_viewed_images
    state: ThreadState = {
        "sandbox": SandboxState(sandbox_id="local"),
        "thread_data": ThreadDataState(workspace_path="/tmp/ws"),
        "title": "Trip planning",
    }
    assert state["sandbox"] == {"sandbox_id": "local"}
    assert set(typing.get_type_hints(ViewedImageData)) == {"base64", "mime_type"}
