"""Names that become file names: accepted as they are, or rejected with the reason."""

from __future__ import annotations

import hashlib

import pytest

from memlab.core.base.safe_names import (
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


# The reason each kind of unsafe name gets, word for word: it is what the user reads.
REASONS = {
    "": "it is empty",
    "a\x00b": "it contains a NUL character",
    "a/b": "it contains a path separator",
    ".": "it starts with '.'",
    "..": "it starts with '.'",
    "x" * 121: "it has 121 characters",
    "a b": "it contains characters other than letters, digits and . _ - @ + =",
}


@pytest.mark.parametrize(("name", "reason"), REASONS.items())
def test_the_error_carries_the_name_what_and_reason(name: str, reason: str) -> None:
    assert unsafe_reason(name) == reason
    with pytest.raises(UnsafeNameError) as info:
        safe_component(name, "run name")
    error = info.value
    assert (error.name, error.what, error.reason) == (name, "run name", reason)
    assert str(error).startswith("run name ")
    assert str(error).endswith(
        f"cannot be used as a file name: {reason}; use letters, digits and . _ - @ + = only, "
        "starting with a letter or digit, at most 120 characters"
    )


def test_a_long_name_is_shown_cut_to_57_characters_and_an_ellipsis() -> None:
    fits = "a b" + "x" * 57  # 60 characters: shown whole
    assert len(fits) == 60
    assert str(UnsafeNameError(fits, "user_id", "r")).startswith(f"user_id {fits!r} cannot")
    cut = fits + "y"  # 61 characters: its first 57 and "..."
    shown = repr("a b" + "x" * 54 + "...")
    assert str(UnsafeNameError(cut, "user_id", "r")).startswith(f"user_id {shown} cannot")


def _split(encoded: str) -> tuple[str, str]:
    readable, _, digest = encoded.rpartition("-")
    return readable, digest


@pytest.mark.parametrize(
    ("name", "readable"),
    [
        ("Conv 26", "Conv_26"),  # a run of unsafe characters becomes one "_", case kept
        ("X y/z", "X_y_z"),
        ("._a b_.", "a_b"),  # the readable part loses leading and trailing . _ -
        ("/", "name"),  # nothing readable left
        ("...", "name"),
        (" " + "ab" * 100, "ab" * 30),  # at most 60 readable characters
    ],
)
def test_an_encoded_name_is_its_readable_part_and_a_stable_digest(name: str, readable: str) -> None:
    # The digest is the first 10 hex digits of the name's SHA-256: directories written by an
    # earlier run are found again only if the encoding never changes.
    expected_digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:10]
    assert _split(encode_component(name)) == (readable, expected_digest)


def test_a_name_with_a_lone_surrogate_is_encoded_not_refused() -> None:
    # Names read from JSON may hold unpaired surrogates ("\\ud800"); strict UTF-8 refuses them.
    encoded = encode_component("a\ud800b")
    assert unsafe_reason(encoded) is None
    assert _split(encoded)[0] == "a_b"
    assert encoded != encode_component("a\ud801b")


def test_ensure_inside_names_what_it_checked(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(UnsafeNameError) as info:
        ensure_inside(tmp_path / ".." / "y", tmp_path, "report directory")
    assert info.value.what == "report directory"
    assert info.value.reason == f"it resolves outside {tmp_path.resolve()}"
