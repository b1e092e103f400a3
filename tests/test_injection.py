"""format_memory_for_injection and offline token counting (SPEC §1.9)."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

from memlab.core.pipeline.config import MemoryConfig
from memlab.core.pipeline.injection import (
    CharCounter,
    Injection,
    TiktokenCounter,
    format_memory_for_injection,
    get_token_counter,
    render_injection,
    truncate_to_tokens,
)


def section(summary: str) -> dict[str, str]:
    return {"summary": summary, "updatedAt": "2025-03-01T09:00:00Z"}


def fact(content: str, confidence: float, category: str = "preference") -> dict[str, Any]:
    return {"id": f"fact_{abs(hash(content)) % 10**8:08d}", "content": content,
            "category": category, "confidence": confidence}  # fmt: skip


MEMORY: dict[str, Any] = {
    "version": "1.0",
    "user": {
        "workContext": section("Data engineer at a logistics startup."),
        "personalContext": section(""),
        "topOfMind": section("Migrating pipelines to Airflow."),
    },
    "history": {
        "recentMonths": section("Asked about DAG scheduling."),
        "earlierContext": section(""),
        "longTermBackground": section("Studied physics."),
    },
    "facts": [
        fact("Likes concise answers", 0.8),
        fact("Uses Python 3.12", 0.95, "knowledge"),
        fact("Lives in Lyon", 0.9, "context"),
    ],
}


def test_tiktoken_counter_is_offline_cl100k() -> None:
    counter = get_token_counter("tiktoken")
    assert isinstance(counter, TiktokenCounter)
    assert counter.count("hello world") == 2
    assert counter.count("") == 0
    assert counter.count("<|endoftext|>") > 1  # special tokens are counted as plain text
    assert get_token_counter("tiktoken") is counter


def test_char_counter_and_unknown_kind() -> None:
    counter = get_token_counter("char")
    assert isinstance(counter, CharCounter)
    assert [counter.count(t) for t in ("", "a", "abcd", "abcde")] == [0, 1, 1, 2]
    with pytest.raises(ValueError, match="'tiktoken' or 'char'"):
        get_token_counter("words")


def test_full_format() -> None:
    text = format_memory_for_injection(MEMORY)
    assert text == (
        "User Context:\n"
        "- Work: Data engineer at a logistics startup.\n"
        "- Current Focus: Migrating pipelines to Airflow.\n"
        "\n"
        "History:\n"
        "- Recent: Asked about DAG scheduling.\n"
        "- Background: Studied physics.\n"
        "\n"
        "Facts:\n"
        "- [knowledge | 0.95] Uses Python 3.12\n"
        "- [context | 0.90] Lives in Lyon\n"
        "- [preference | 0.80] Likes concise answers"
    )


def test_empty_sections_omitted() -> None:
    only_facts = {"user": {"workContext": section("")}, "history": {}, "facts": MEMORY["facts"]}
    text = format_memory_for_injection(only_facts)
    assert text.startswith("Facts:\n- [knowledge | 0.95]")
    assert "User Context" not in text and "History" not in text
    no_facts = {**MEMORY, "facts": []}
    assert "Facts" not in format_memory_for_injection(no_facts)
    only_history = {"history": {"earlierContext": section("Used Java before.")}}
    assert format_memory_for_injection(only_history) == "History:\n- Earlier: Used Java before."


def test_empty_memory_gives_empty_string() -> None:
    assert format_memory_for_injection({}) == ""
    assert format_memory_for_injection(None) == ""
    blank = {"user": {"workContext": section("  ")}, "history": {}, "facts": [fact(" ", 0.9)]}
    assert format_memory_for_injection(blank) == ""


def test_ties_keep_document_order_and_bad_facts_skipped() -> None:
    memory = {
        "facts": [
            fact("first", 0.7),
            "not a fact",
            {"content": "no confidence"},
            fact("second", 0.7),
            {"content": "weird confidence", "confidence": "high", "category": "goal"},
        ]
    }
    lines = format_memory_for_injection(memory).splitlines()[1:]
    assert lines == [
        "- [preference | 0.70] first",
        "- [preference | 0.70] second",
        "- [context | 0.00] no confidence",
        "- [goal | 0.00] weird confidence",
    ]


@pytest.mark.parametrize("kind", ["tiktoken", "char"])
def test_facts_added_while_they_fit(kind: str) -> None:
    counter = get_token_counter(kind)
    facts = [fact(f"Fact number {i} about something memorable", 1 - i / 100) for i in range(40)]
    memory = {"user": {"workContext": section("Engineer.")}, "facts": facts}
    full = format_memory_for_injection(memory, max_tokens=100_000, token_counting=kind)
    assert full.count("\n- [") == 40
    budget = counter.count(full) // 2
    text = format_memory_for_injection(memory, max_tokens=budget, token_counting=kind)
    assert counter.count(text) <= budget
    assert not text.endswith("...")  # facts were dropped, nothing was cut
    kept = [line for line in text.splitlines() if line.startswith("- [")]
    assert 0 < len(kept) < 40
    # The highest-confidence facts are the ones kept, in order.
    assert kept == [line for line in full.splitlines() if line.startswith("- [")][: len(kept)]
    # One more fact would not have fit.
    next_line = full.splitlines()[len(text.splitlines())]
    assert counter.count(text + "\n" + next_line) > budget


@pytest.mark.parametrize("kind", ["tiktoken", "char"])
def test_hard_cut_when_summaries_exceed_budget(kind: str) -> None:
    counter = get_token_counter(kind)
    memory = {"user": {"workContext": section("word " * 500)}, "facts": [fact("x", 0.9)]}
    text = format_memory_for_injection(memory, max_tokens=100, token_counting=kind)
    assert text.endswith("...")
    assert text.startswith("User Context:\n- Work: word word")
    assert counter.count(text) <= 100
    assert counter.count(text) >= 90  # the cut uses (nearly) the whole budget
    assert "Facts" not in text


def test_truncate_to_tokens_edges() -> None:
    counter = CharCounter()
    assert truncate_to_tokens("short", 10, counter) == "short"
    assert truncate_to_tokens("abcdefghijkl", 2, counter) == "abcde..."
    assert truncate_to_tokens("abcdefghijkl", 0, counter) == ""


def test_tiktoken_loads_without_network(tmp_path: Any) -> None:
    # A fresh interpreter with sockets disabled and an empty tiktoken cache.
    code = (
        "import socket\n"
        "def refuse(*a, **k):\n"
        "    raise OSError('network access attempted')\n"
        "socket.socket.connect = refuse\n"
        "socket.create_connection = refuse\n"
        "from memlab.core.pipeline.injection import get_token_counter\n"
        "print(get_token_counter('tiktoken').count('hello world'))\n"
    )
    env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "2"


# --- the budget's edges ------------------------------------------------------------------------

WORK = "User Context:\n- Work: Engineer."
LINES = [
    "- [knowledge | 0.95] Uses Python 3.12",
    "- [context | 0.90] Lives in Lyon",
    "- [preference | 0.80] Likes concise answers",
]


@pytest.mark.parametrize("kind", ["tiktoken", "char"])
@pytest.mark.parametrize("base", [WORK, ""], ids=["summary", "facts-only"])
def test_facts_are_kept_while_their_counted_lines_fit(kind: str, base: str) -> None:
    # The budget rule: the summaries, the "Facts:" heading and each fact's line ("\n" + line)
    # are counted apart; a fact is kept while that running sum fits.
    counter = get_token_counter(kind)
    memory = {"facts": MEMORY["facts"]}
    if base:
        memory["user"] = {"workContext": section("Engineer.")}
    heading = "\n\nFacts:" if base else "Facts:"
    costs = [counter.count("\n" + line) for line in LINES]
    budget = counter.count(base) + counter.count(heading) + sum(costs)
    every = render_injection(memory, budget, token_counting=kind)
    text = (base + "\n\n" if base else "") + "Facts:\n" + "\n".join(LINES)
    assert (every.text, every.tokens, every.dropped) == (text, counter.count(text), ())
    # One token less: the lowest-confidence fact goes, and nothing is cut.
    short = render_injection(memory, budget - 1, token_counting=kind)
    assert short.injected == every.injected[:2] and short.dropped == every.injected[2:]
    assert short.text == text.rsplit("\n", 1)[0]


def test_a_fact_whose_text_is_exactly_the_budget_is_kept() -> None:
    # Char counting: "Facts:" (6 characters) and "\n- [context | 0.95] Loves hiking" (32)
    # make 38 characters, 10 tokens, and the counted parts 2 + 8 = 10 as well.
    memory = {"facts": [fact("Loves hiking", 0.95, "context")]}
    kept = render_injection(memory, 10, token_counting="char")
    assert (kept.text, kept.tokens, kept.dropped) == (
        "Facts:\n- [context | 0.95] Loves hiking",
        10,
        (),
    )


def test_the_defaults_are_the_configs_budget_and_tiktoken() -> None:
    default = MemoryConfig()
    assert render_injection(MEMORY) == render_injection(
        MEMORY, default.max_injection_tokens, token_counting=default.token_counting
    )
    # A summary of exactly the default budget (char counting) is kept whole; one more is cut.
    budget = default.max_injection_tokens
    prefix = len("User Context:\n- Work: ")
    for size, cut in ((budget, False), (budget + 1, True)):
        memory = {"user": {"workContext": section("x" * (4 * size - prefix))}}
        for text in (
            render_injection(memory, token_counting="char").text,
            format_memory_for_injection(memory, token_counting="char"),
        ):
            assert text.endswith("...") is cut and CharCounter().count(text) <= budget


def test_an_empty_memory_injects_nothing_at_zero_tokens() -> None:
    assert render_injection({}) == Injection("", 0)
    assert render_injection(None, 10) == Injection("", 0)


def test_a_fresh_tiktoken_counter_counts() -> None:
    assert TiktokenCounter().count("hello world") == 2


def test_truncation_when_only_the_ellipsis_budget_is_left() -> None:
    # One char token is four characters: "..." and one character of the text.
    assert truncate_to_tokens("abcdefgh", 1, CharCounter()) == "a..."
    tiktoken = get_token_counter("tiktoken")
    assert tiktoken.count("...") == 1
    assert truncate_to_tokens("Supercalifragilistic", 1, tiktoken) == "..."


def test_odd_facts_are_shown_with_defaults_and_the_rest_still_listed() -> None:
    memory = {
        "facts": [
            {"content": "   ", "confidence": 0.99},  # nothing to show: skipped, not the end
            {"content": "not a number", "confidence": float("nan"), "category": "goal"},
            {"content": "infinite", "confidence": float("inf")},
            {"content": "blank category", "confidence": 0.5, "category": "  "},
            {"content": "flag", "confidence": True},
        ]
    }
    lines = format_memory_for_injection(memory).splitlines()[1:]
    assert lines == [
        "- [context | 0.50] blank category",
        "- [goal | 0.00] not a number",
        "- [context | 0.00] infinite",
        "- [context | 0.00] flag",
    ]


def _tiered_view(episodes: str) -> dict[str, Any]:
    return {
        "user": {"topOfMind": section("Planning a move to Lisbon.")},
        "history": {"recentMonths": section(episodes)},
        "facts": [fact(f"fact number {i} about the user", 0.9 - i / 100) for i in range(6)],
    }


def test_history_last_puts_the_episodes_after_the_facts_and_cuts_them_first() -> None:
    """The tiered layout (the seed's: summary, semantic memories, episodes): the episodes
    take no budget from the facts and are what the budget cuts."""
    memory = _tiered_view("went hiking -> noted " * 200)
    first = render_injection(memory, 200)
    last = render_injection(memory, 200, history_last=True)
    assert "Facts:" not in first.text and len(first.dropped) == 6  # History ate the budget
    assert last.text.index("User Context:") < last.text.index("Facts:")
    assert last.text.index("Facts:") < last.text.index("History:")
    assert len(last.injected) == 6 and last.text.endswith("...")
    assert last.tokens == get_token_counter("tiktoken").count(last.text) <= 200
    short = render_injection(_tiered_view("went hiking -> noted"), 2000, history_last=True)
    assert short.text.endswith("History:\n- Recent: went hiking -> noted")
    tight = render_injection(memory, 60, history_last=True)
    assert 0 < len(tight.injected) < 6 and tight.tokens <= 60  # the facts fill it first
    assert tight.text.index("Facts:") < tight.text.index("History:") and tight.text.endswith("...")
