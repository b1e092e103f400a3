"""Names that become file names: accepted as they are, or rejected with the reason."""

from __future__ import annotations

import pytest

from memlab.core.safe_names import (
    UnsafeNameError,
    encode_component,
    ensure_inside,
    safe_component,
    unsafe_reason,
)


@pytest.mark.parametrize("name", ["u1", "alice", "conv-26", "user_01.v2", "a@b", "x+y=z"])
def test_safe_names_pass_unchanged(name: str) -> None:
    assert safe_component(name, "user_id") == name
    assert encode_component(name) == name


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("", "empty"),
        ("..", "starts with '.'"),
        (".hidden", "starts with '.'"),
        ("../x", "separator"),
        ("/etc/passwd", "separator"),
        ("a\\b", "separator"),
        ("a\x00b", "NUL"),
        ("x" * 300, "300 characters"),
        ("a b", "characters other than"),
        ("-flag", "characters other than"),
    ],
)
def test_unsafe_names_are_rejected_with_the_reason(name: str, reason: str) -> None:
    assert reason in (unsafe_reason(name) or "")
    with pytest.raises(UnsafeNameError, match="user_id") as info:
        safe_component(name, "user_id")
    assert info.value.name == name
    assert "\n" not in str(info.value)
    assert len(str(info.value)) < 400


def test_encoding_is_safe_distinct_and_stable() -> None:
    names = ["../x", "..\\x", "a/b", "a b", "x" * 300, "conv/26", "conv_26"]
    encoded = [encode_component(n) for n in names]
    assert all(unsafe_reason(e) is None for e in encoded)
    assert len(set(encoded)) == len(names)
    assert encode_component("a/b") == encode_component("a/b")


def test_ensure_inside(tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "runs").mkdir()
    assert (
        ensure_inside(tmp_path / "runs" / "x", tmp_path / "runs", "run")
        == (tmp_path / "runs" / "x").resolve()
    )
    with pytest.raises(UnsafeNameError, match="outside"):
        ensure_inside(tmp_path / "runs" / ".." / "y", tmp_path / "runs", "run")
    (tmp_path / "runs" / "link").symlink_to(tmp_path)
    with pytest.raises(UnsafeNameError, match="outside"):
        ensure_inside(tmp_path / "runs" / "link" / "z", tmp_path / "runs", "run")
