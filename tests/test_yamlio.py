"""Bounded YAML reading: each limit at and one past its bound (also once aliases are
expanded), the exact one-line errors with their positions, and the key-to-line map.

Fast, so that ``scripts/mutation.py`` runs it for every mutant of ``memlab.core.base.yamlio``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from memlab.core.base.yamlio import (
    YamlInputError,
    key_lines,
    parse_yaml,
    read_text_limited,
    read_yaml,
)

_LIMITS = "nested at most 100 levels deep, without recursive aliases"


def refusal(text: str, **limits: int) -> str:
    with pytest.raises(YamlInputError) as info:
        parse_yaml(text, "g.yaml", **limits)
    return str(info.value)


def test_a_document_parses_to_its_data_and_node() -> None:
    document = parse_yaml("a: [1, x]\nb: {c: null}\n", "g.yaml")
    assert document.data == {"a": [1, "x"], "b": {"c": None}}
    assert isinstance(document.node, yaml.MappingNode)
    empty = parse_yaml("", "g.yaml")
    assert (empty.data, empty.node) == (None, None)


def test_the_value_limit_while_composing_is_exact() -> None:
    assert parse_yaml("[1, 2, 3]", "g.yaml", max_nodes=4).data == [1, 2, 3]
    assert refusal("[1, 2, 3]", max_nodes=3) == (
        "g.yaml: YAML refused (line 1, column 8): more than 3 values; memlab reads at most 3 "
        f"values, {_LIMITS}"
    )


def test_the_depth_limit_while_composing_is_exact() -> None:
    text = "a: &x [[1]]\nb: [*x]\n"  # composed 4 deep, 5 deep once the alias is expanded
    assert refusal(text, max_depth=3) == (
        "g.yaml: YAML refused (line 1, column 9): nested more than 3 levels deep; memlab reads "
        "at most 100000 values, nested at most 3 levels deep, without recursive aliases"
    )


def test_the_limits_hold_once_aliases_are_expanded() -> None:
    # 7 values composed (the alias counts once), 9 once it is expanded.
    shared = "a: &x [1, 2]\nb: *x\n"
    assert parse_yaml(shared, "g.yaml", max_nodes=9).data == {"a": [1, 2], "b": [1, 2]}
    assert refusal(shared, max_nodes=8) == (
        "g.yaml: YAML refused (line 1, column 1): more than 8 values once aliases are "
        f"expanded; memlab reads at most 8 values, {_LIMITS}"
    )
    nested = "a: &x [[1]]\nb: [*x]\n"
    assert parse_yaml(nested, "g.yaml", max_depth=5).data == {"a": [[1]], "b": [[[1]]]}
    assert refusal(nested, max_depth=4) == (
        "g.yaml: YAML refused (line 1, column 1): nested more than 4 levels deep once aliases "
        "are expanded; memlab reads at most 100000 values, nested at most 4 levels deep, "
        "without recursive aliases"
    )


def test_expanded_sizes_add_up_over_mapping_keys_and_shared_values() -> None:
    # The root holds 2 keys and 2 expansions of a 4-value list of lists: 1 + 2 + 2 * 4 = 11.
    text = "a: &x [[1], 2]\nb: *x\n"
    assert parse_yaml(text, "g.yaml", max_nodes=11).data == {"a": [[1], 2], "b": [[1], 2]}
    assert "more than 10 values once aliases are expanded" in refusal(text, max_nodes=10)
    # A value shared twice inside one list counts twice.
    twice = "a: &x [1, 2]\nb: [*x, *x]\n"  # 1 + (1 + 3) + (1 + 1 + 3 + 3) = 13
    assert parse_yaml(twice, "g.yaml", max_nodes=13) is not None
    assert "once aliases are expanded" in refusal(twice, max_nodes=12)


def test_a_recursive_alias_is_refused_where_it_starts() -> None:
    assert refusal("a: &a [*a]\n") == (
        "g.yaml: YAML refused (line 1, column 4): an alias refers to a value that contains it; "
        f"memlab reads at most 100000 values, {_LIMITS}"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "a: [1\n",
            "(line 2, column 1): while parsing a flow sequence expected ',' or ']', but got "
            "'<stream end>'",
        ),
        (
            "a: 1\n---\nb: 2\n",
            "(line 2, column 1): expected a single document in the stream but found another "
            "document",
        ),
        ("a: *nope\n", "(line 1, column 4): found undefined alias 'nope'"),
        (
            "x: !!python/object:os.system ls",
            "(line 1, column 4): could not determine a constructor for the tag "
            "'tag:yaml.org,2002:python/object:os.system'",
        ),
    ],
    ids=["syntax", "two documents", "undefined alias", "unsafe tag"],
)
def test_invalid_yaml_is_one_line_with_its_position(text: str, expected: str) -> None:
    assert refusal(text) == f"g.yaml: not valid YAML {expected}"


def test_a_long_problem_is_cut_to_one_short_line() -> None:
    message = refusal("a: *" + "n" * 500 + "\n")
    assert message.startswith("g.yaml: not valid YAML (line 1, column 4): found undefined alias")
    problem = message.split("): ", 1)[1]
    assert len(problem) == 200 and problem.endswith("...")


def test_the_file_readers_name_the_file_and_what_it_is(tmp_path: Path) -> None:
    path = tmp_path / "g.yaml"
    path.write_text("a: [1\n", encoding="utf-8")
    with pytest.raises(YamlInputError) as info:
        read_yaml(path)
    assert str(info.value).startswith(f"{path}: not valid YAML (line 2, column 1)")
    missing = tmp_path / "missing.yaml"
    with pytest.raises(YamlInputError) as info:
        read_yaml(missing)
    assert str(info.value) == f"{missing}: cannot read YAML file: No such file or directory"
    long_path = tmp_path / ("d" * 200) / ("f" * 200)
    with pytest.raises(YamlInputError) as info:
        read_yaml(long_path)
    shown = str(long_path)[:297] + "..."  # a path is cut to 300 characters
    assert str(info.value) == f"{shown}: cannot read YAML file: No such file or directory"
    with pytest.raises(YamlInputError) as info:
        read_text_limited(tmp_path, what="prompt file")
    assert str(info.value) == (
        f"{tmp_path}: cannot read prompt file: it is a directory, not a regular file"
    )
    path.write_text("a: 1\n", encoding="utf-8")
    assert read_yaml(path, what="grid", max_bytes=5).data == {"a": 1}
    with pytest.raises(YamlInputError, match=r"cannot read grid: .*\b4\b"):
        read_yaml(path, what="grid", max_bytes=4)
    outside = tmp_path / "out.yaml"
    outside.write_text("a: 1\n", encoding="utf-8")
    (tmp_path / "inner").mkdir()
    with pytest.raises(YamlInputError, match="outside"):
        read_yaml(outside, inside=tmp_path / "inner")
    assert read_yaml(outside, inside=tmp_path).data == {"a": 1}


def test_key_lines_maps_every_nested_value_to_its_line() -> None:
    text = "axes:\n  prompt: [a, b]\n  seeds:\n    - 1\n    - 2\nname: g\n"
    assert key_lines(parse_yaml(text, "g.yaml").node) == {
        "axes": 2,
        "axes.prompt": 2,
        "axes.prompt[0]": 2,
        "axes.prompt[1]": 2,
        "axes.seeds": 4,
        "axes.seeds[0]": 4,
        "axes.seeds[1]": 5,
        "name": 6,
    }
    assert key_lines(None) == {}
    # Keys that are not scalars have no path; a shared value keeps one path (walked once).
    assert key_lines(yaml.compose("? [k]\n: v\nz: 1\n")) == {"z": 3}
    shared = key_lines(parse_yaml("c: 3\na: &s {x: 1}\nb: *s\n", "g.yaml").node)
    assert shared in (  # the line of the anchor; the walk goes on past the second visit
        {"c": 1, "a": 2, "a.x": 2},
        {"c": 1, "b": 2, "b.x": 2},
    )
