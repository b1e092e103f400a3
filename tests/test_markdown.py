"""Markdown from untrusted values: the cut at ``limit``, each escape's exact output, tables."""

from __future__ import annotations

import pytest

from memlab.reporting.markdown import md_code_block, md_escape, md_table_head, md_table_row


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("abcd", 4, "abcd"),  # exactly at the limit: kept whole
        ("abcde", 4, "abc…"),  # one over: cut to limit - 1 and an ellipsis, limit in total
        ("abcdefgh", 2, "a…"),
        ("abc", 0, "…"),  # nothing fits: the ellipsis alone
        ("abc", None, "abc"),
    ],
)
def test_the_limit_cuts_to_that_many_characters_with_an_ellipsis(
    text: str, limit: int | None, expected: str
) -> None:
    assert md_escape(text, limit) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("_x_", "\\_x\\_"),  # "_" at a word edge can start emphasis
        ("snake_case_name", "snake_case_name"),  # inside a word it cannot
        ("see www.evil.example", "see www\\.evil.example"),  # GitHub links a bare www.
        ("wwwx.example", "wwwx.example"),
        ("go to http://x.example", "go to http\\://x.example"),
        ("a*b`c", "a\\*b\\`c"),
        ("- item", "\\- item"),
        ("12) x", "12\\) x"),
        ("===", "\\==="),
    ],
)
def test_each_escape_is_exact(text: str, expected: str) -> None:
    assert md_escape(text) == expected


def test_table_rows_have_the_pipe_layout_and_render_as_a_table() -> None:
    head = md_table_head(["run", "rate"])
    row = md_table_row(["a", md_escape("x|y")])
    assert head == ["| run | rate |", "|---|---|"]
    assert row == "| a | x\\|y |"
    mistune = pytest.importorskip("mistune")
    html = mistune.create_markdown(plugins=["table"])("\n".join([*head, row]))
    cells = [part.split("<", 1)[0] for part in html.split("<td>")[1:]]
    assert "<th>run</th>" in html and "<th>rate</th>" in html
    assert cells == ["a", "x|y"]


def test_a_code_block_fence_is_longer_than_any_backtick_run() -> None:
    assert md_code_block("plain", "  ", "diff") == ["  ```diff", "  plain", "  ```"]
    assert md_code_block("a ```` b")[0] == "`````"
