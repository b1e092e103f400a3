"""The parse ladder: table of realistic replies, each with its exact outcome per option set."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlab.core.jsondoc.contract import FACT_CATEGORIES, HISTORY_SECTIONS, USER_SECTIONS
from memlab.core.jsondoc.parsing import (
    FailureCategory,
    ParseOptions,
    ParseResult,
    Rung,
    parse_reply,
)


def _section(summary: str = "", update: bool = False) -> dict[str, Any]:
    return {"summary": summary, "shouldUpdate": update}


GOOD: dict[str, Any] = {
    "user": {
        "workContext": _section("Senior data engineer at Acme, building Spark pipelines.", True),
        "personalContext": _section(),
        "topOfMind": _section("Migrating the nightly ETL jobs to Airflow {v2}.", True),
    },
    "history": {
        "recentMonths": _section(),
        "earlierContext": _section(),
        "longTermBackground": _section(),
    },
    "newFacts": [
        {"content": "Prefers green tea over coffee", "category": "preference", "confidence": 0.9},
        {"content": "Uses Airflow at work", "category": "context", "confidence": 0.8},
    ],
    "factsToRemove": ["fact_0a1b2c3d", "fact_deadbeef"],
}
COMPACT = json.dumps(GOOD)
PRETTY = json.dumps(GOOD, indent=2)


def _variant(change: Any) -> dict[str, Any]:
    doc = copy.deepcopy(GOOD)
    change(doc)
    return doc


def _cut_after(text: str, marker: str, extra: int = 0) -> str:
    return text[: text.index(marker) + len(marker) + extra]


REMOVE_FIRST = json.dumps(
    {
        "factsToRemove": ["fact_0a1b2c3d"],
        "user": GOOD["user"],
        "history": GOOD["history"],
        "newFacts": GOOD["newFacts"],
    },
    indent=2,
)

OPTIONS = {
    "default": ParseOptions(),
    "strict": ParseOptions.strict_only(),
    "repair": ParseOptions(repair=True),
    "deerflow": ParseOptions.deerflow(),
}

# Outcome notation: "<category or ok>@<rung or ->" for default, strict_only, repair, deerflow.
OK_STRICT = ("ok@strict",) * 4
CASES: list[tuple[str, str, tuple[str, str, str, str]]] = [
    ("plain_compact", COMPACT, OK_STRICT),
    ("plain_pretty_padded", "\n\n  " + PRETTY + "\n  ", OK_STRICT),
    (
        "fence_json",
        f"```json\n{PRETTY}\n```",
        ("ok@lenient", "fenced@-", "ok@lenient", "ok@lenient"),
    ),
    ("fence_bare", f"```\n{PRETTY}\n```", ("ok@lenient", "fenced@-", "ok@lenient", "ok@lenient")),
    (
        "fence_one_line",
        f"```JSON{COMPACT}```",
        ("ok@lenient", "fenced@-", "ok@lenient", "ok@lenient"),
    ),
    (
        "prose_before",
        f"Here is the updated memory:\n\n{PRETTY}",
        ("ok@lenient", "prose_wrapped@-", "ok@lenient", "prose_wrapped@-"),
    ),
    (
        "prose_after",
        f"{PRETTY}\n\nI added two facts about the user's tools.",
        ("ok@lenient", "prose_wrapped@-", "ok@lenient", "prose_wrapped@-"),
    ),
    (
        "prose_around_fence",
        f"Sure! Here it is:\n```json\n{PRETTY}\n```\nLet me know if you need changes.",
        ("ok@lenient", "fenced@-", "ok@lenient", "prose_wrapped@-"),
    ),
    (
        "think_closed",
        "<think>\nThe user mentions {tea} and Airflow; update topOfMind.\n</think>\n\n" + PRETTY,
        ("ok@lenient", "think_block@-", "ok@lenient", "think_block@-"),
    ),
    (
        "think_then_fence",
        f"<think>short</think>\n```json\n{PRETTY}\n```",
        ("ok@lenient", "think_block@-", "ok@lenient", "think_block@-"),
    ),
    (
        "think_unclosed_then_json",
        "<think>\nOkay, the user works at Acme. Output:\n" + COMPACT,
        ("ok@lenient", "think_block@-", "ok@lenient", "think_block@-"),
    ),
    (
        "think_close_tag_only",
        "The opening tag was in the template.\n</think>\n" + COMPACT,
        ("ok@lenient", "think_block@-", "ok@lenient", "think_block@-"),
    ),
    (
        "think_unclosed_no_json",
        "<think>\nOkay, let me look at what the user said about",
        ("truncated@-",) * 4,
    ),
    ("json_only_inside_think", f"<think>{COMPACT}</think>", ("no_json@-",) * 4),
    (
        "truncated_mid_summary",
        _cut_after(PRETTY, "Senior data eng"),
        ("truncated@-",) * 4,
    ),
    (
        "truncated_mid_remove_array",
        _cut_after(PRETTY, '"fact_0a1b2c3d",'),
        ("truncated@-", "truncated@-", "ok@repair", "truncated@-"),
    ),
    (
        "truncated_mid_remove_id",
        _cut_after(COMPACT, '"fact_dead'),
        ("truncated@-", "truncated@-", "ok@repair", "truncated@-"),
    ),
    (
        "truncated_in_fence",
        "```json\n" + _cut_after(PRETTY, '"fact_0a1b2c3d"'),
        ("truncated@-", "truncated@-", "ok@repair", "truncated@-"),
    ),
    (
        "truncated_mid_fact_number",
        _cut_after(REMOVE_FIRST, '"confidence": 0.', 0),
        ("truncated@-", "truncated@-", "ok@repair", "truncated@-"),
    ),
    (
        "trailing_commas",
        PRETTY.replace('"fact_deadbeef"', '"fact_deadbeef",').replace("0.8\n", "0.8,\n"),
        ("invalid_json@-", "invalid_json@-", "ok@repair", "invalid_json@-"),
    ),
    (
        "trailing_comma_fenced",
        "```json\n" + COMPACT.replace("]}", "],}") + "\n```",
        ("invalid_json@-", "invalid_json@-", "ok@repair", "invalid_json@-"),
    ),
    (
        "single_quotes",
        COMPACT.replace('"', "'"),
        ("invalid_json@-", "invalid_json@-", "ok@repair", "invalid_json@-"),
    ),
    (
        "python_literals",
        COMPACT.replace("true", "True").replace("false", "False"),
        ("invalid_json@-", "invalid_json@-", "ok@repair", "invalid_json@-"),
    ),
    (
        "raw_newline_in_string",
        COMPACT.replace("Spark pipelines.", "Spark\npipelines."),
        ("invalid_json@-", "invalid_json@-", "ok@repair", "invalid_json@-"),
    ),
    (
        "missing_comma",
        COMPACT.replace(', "history"', ' "history"'),
        ("invalid_json@-",) * 4,
    ),
    (
        "should_update_as_string",
        json.dumps(_variant(lambda d: d["user"]["workContext"].update(shouldUpdate="true"))),
        ("schema_violation@strict",) * 4,
    ),
    (
        "summary_null",
        json.dumps(_variant(lambda d: d["history"]["recentMonths"].update(summary=None))),
        ("schema_violation@strict",) * 4,
    ),
    (
        "missing_top_level_key",
        json.dumps(_variant(lambda d: d.pop("factsToRemove"))),
        ("wrong_shape@-",) * 4,
    ),
    (
        "missing_section",
        json.dumps(_variant(lambda d: d["user"].pop("topOfMind"))),
        ("schema_violation@strict",) * 4,
    ),
    (
        "extra_top_level_key",
        json.dumps(_variant(lambda d: d.update(reasoning="because"))),
        ("schema_violation@strict",) * 4,
    ),
    (
        "nan_confidence",
        COMPACT.replace("0.9", "NaN"),
        ("schema_violation@strict",) * 4,
    ),
    (
        "infinity_confidence",
        COMPACT.replace("0.9", "Infinity"),
        ("schema_violation@strict",) * 4,
    ),
    (
        "numeric_string_confidence",
        COMPACT.replace("0.9", '"0.9"'),
        ("schema_violation@strict",) * 4,
    ),
    (
        "unknown_category_in_fence",
        "```json\n" + COMPACT.replace('"context"', '"hobby"') + "\n```",
        (
            "schema_violation@lenient",
            "fenced@-",
            "schema_violation@lenient",
            "schema_violation@lenient",
        ),
    ),
    ("empty", "", ("empty@-",) * 4),
    ("whitespace_only", " \n\t \n", ("empty@-",) * 4),
    ("refusal_prose", "I'm sorry, I can't help with that request.", ("no_json@-",) * 4),
    ("empty_fence", "```json\n```", ("no_json@-",) * 4),
    ("json_array", f"[{COMPACT}]", ("wrong_shape@-",) * 4),
    ("fenced_json_array", f"```json\n[{COMPACT}]\n```", ("wrong_shape@-",) * 4),
    ("json_string", '"No updates needed."', ("wrong_shape@-",) * 4),
    ("wrapped_in_envelope", json.dumps({"memory_update": GOOD}), ("wrong_shape@-",) * 4),
    (
        "second_object_has_keys",
        '{"analysis": "user switched teams"}\n' + COMPACT,
        ("ok@lenient", "prose_wrapped@-", "ok@lenient", "prose_wrapped@-"),
    ),
    (
        "prose_with_small_object",
        'The update is {"facts": []}.',
        ("wrong_shape@-",) * 4,
    ),
    (
        "chinese_content",
        json.dumps(
            _variant(
                lambda d: d["newFacts"].append(
                    {
                        "content": "喜欢喝绿茶，不喝咖啡",
                        "category": "preference",
                        "confidence": 0.95,
                    }
                )
            ),
            ensure_ascii=False,
        ),
        OK_STRICT,
    ),
    (
        "braces_inside_strings_with_prose",
        "Result: "
        + json.dumps(
            _variant(lambda d: d["newFacts"][0].update(content='Writes "{x}" and } { in templates'))
        ),
        ("ok@lenient", "prose_wrapped@-", "ok@lenient", "prose_wrapped@-"),
    ),
]


def _outcome(result: ParseResult) -> str:
    category = result.category.value if result.category is not None else "ok"
    rung = result.rung.value if result.rung is not None else "-"
    return f"{category}@{rung}"


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
@pytest.mark.parametrize("mode", list(OPTIONS))
def test_reply_table(mode: str, text: str, expected: tuple[str, str, str, str]) -> None:
    result = parse_reply(text, OPTIONS[mode])
    assert _outcome(result) == expected[list(OPTIONS).index(mode)]
    # A failure never carries data; a success always does.
    assert (result.data is not None) is result.ok
    assert (result.category is None) is result.ok
    if not result.ok:
        assert result.error
    json.dumps(result.to_dict())  # records are JSON-serialisable


def test_table_is_large_enough() -> None:
    assert len(CASES) >= 30


@pytest.mark.parametrize(
    ("text", "wrappers"),
    [
        (f"```json\n{PRETTY}\n```", ("fence",)),
        (f"Intro\n```json\n{PRETTY}\n```", ("fence", "prose")),
        (f"<think>x</think>{COMPACT}", ("think",)),
        (f"<think>x {COMPACT}", ("think", "prose")),
        (f"<think>x</think>```\n{COMPACT}\n```", ("think", "fence")),
        (f"{COMPACT} trailing", ("prose",)),
        (COMPACT, ()),
    ],
)
def test_wrappers_recorded(text: str, wrappers: tuple[str, ...]) -> None:
    result = parse_reply(text)
    assert result.ok
    assert result.wrappers == wrappers
    assert result.data == GOOD


def test_lenient_data_equals_the_embedded_object() -> None:
    text = '<think>The draft {"user": 1}</think>\nSure:\n```json\n' + PRETTY + "\n```\nBye"
    result = parse_reply(text)
    assert result.ok and result.rung is Rung.LENIENT
    assert result.data == GOOD


def test_schema_violation_lists_every_pointer_and_keyword() -> None:
    doc = _variant(lambda d: d["newFacts"][0].update(confidence="0.9"))
    doc["newFacts"][1]["category"] = "hobby"
    doc["user"]["topOfMind"]["shouldUpdate"] = "yes"
    result = parse_reply(json.dumps(doc))
    assert result.category is FailureCategory.SCHEMA_VIOLATION
    assert result.rung is Rung.STRICT
    assert result.data is None
    assert [(v.pointer, v.keyword) for v in result.violations] == [
        ("/newFacts/0/confidence", "type"),
        ("/newFacts/1/category", "enum"),
        ("/user/topOfMind/shouldUpdate", "type"),
    ]
    assert "/newFacts/0/confidence [type]" in result.error


def test_non_finite_confidence_violations() -> None:
    nan = parse_reply(COMPACT.replace("0.9", "NaN"))
    assert [(v.pointer, v.keyword) for v in nan.violations] == [
        ("/newFacts/0/confidence", "finite")
    ]
    inf = parse_reply(COMPACT.replace("0.9", "-Infinity"))
    assert {v.keyword for v in inf.violations} == {"finite", "minimum"}


def test_repair_drops_incomplete_trailing_element() -> None:
    result = parse_reply(_cut_after(COMPACT, '"fact_dead'), ParseOptions(repair=True))
    assert result.ok and result.rung is Rung.REPAIR
    assert result.data is not None
    assert result.data["factsToRemove"] == ["fact_0a1b2c3d"]  # never a half id
    assert result.repairs == ("truncation",)


def test_repair_drops_a_partial_fact_rather_than_storing_half_of_it() -> None:
    text = _cut_after(REMOVE_FIRST, "Uses Airfl")
    result = parse_reply(text, ParseOptions(repair=True))
    assert result.ok and result.data is not None
    assert [f["content"] for f in result.data["newFacts"]] == ["Prefers green tea over coffee"]


def test_repair_records_what_it_fixed() -> None:
    text = COMPACT.replace('"', "'").replace("true", "True").replace("]}", "],}")
    result = parse_reply(text, ParseOptions(repair=True))
    assert result.ok and result.rung is Rung.REPAIR
    assert result.repairs == ("python_literals", "single_quotes", "trailing_comma")
    assert result.data == GOOD


def test_repair_revalidates() -> None:
    text = COMPACT.replace("0.9", "'high'").replace('"fact_deadbeef"]', '"fact_deadbeef",]')
    result = parse_reply(text, ParseOptions(repair=True))
    assert result.category is FailureCategory.SCHEMA_VIOLATION
    assert result.rung is Rung.REPAIR
    assert [(v.pointer, v.keyword) for v in result.violations] == [
        ("/newFacts/0/confidence", "type")
    ]


def test_repair_without_lenient_requires_a_bare_reply() -> None:
    options = ParseOptions(lenient=False, repair=True)
    bare = parse_reply(COMPACT.replace("]}", "],}"), options)
    assert bare.ok and bare.rung is Rung.REPAIR
    wrapped = parse_reply("Update: " + COMPACT.replace("]}", "],}"), options)
    assert not wrapped.ok


def test_validate_off_checks_shape_only() -> None:
    options = ParseOptions(validate=False)
    loose = parse_reply(COMPACT.replace("0.9", '"0.9"'), options)
    assert loose.ok and loose.data is not None
    assert loose.data["newFacts"][0]["confidence"] == "0.9"
    assert parse_reply('{"user": {}}', options).category is FailureCategory.WRONG_SHAPE


def test_options_reject_unknown_wrapper() -> None:
    with pytest.raises(ValueError, match="unknown wrappers"):
        ParseOptions(strip=frozenset({"yaml"}))


def test_option_presets() -> None:
    assert ParseOptions.deerflow().to_dict() == {
        "lenient": True,
        "repair": False,
        "validate": True,
        "strip": ["fence"],
    }
    strict = ParseOptions.strict_only()
    assert (strict.lenient, strict.repair, strict.validate) == (False, False, True)


def test_result_to_dict() -> None:
    record = parse_reply("```json\n" + COMPACT.replace("0.9", "2") + "\n```").to_dict()
    assert record["ok"] is False
    assert record["rung"] == "lenient"
    assert record["category"] == "schema_violation"
    assert record["wrappers"] == ["fence"]
    assert record["violations"][0]["pointer"] == "/newFacts/0/confidence"
    assert record["violations"][0]["keyword"] == "maximum"
    assert record["data"] is None


def test_non_string_reply_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="reply text"):
        parse_reply(None)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- property

_text = st.text(max_size=40)
_sections = st.fixed_dictionaries({"summary": _text, "shouldUpdate": st.booleans()})
_facts = st.lists(
    st.fixed_dictionaries(
        {
            "content": st.text(min_size=1, max_size=40).filter(lambda s: s.strip() != ""),
            "category": st.sampled_from(FACT_CATEGORIES),
            "confidence": st.one_of(
                st.floats(min_value=0.0, max_value=1.0, allow_nan=False), st.sampled_from([0, 1])
            ),
        },
        optional={"sourceError": _text},
    ),
    max_size=5,
)
_updates = st.fixed_dictionaries(
    {
        "user": st.fixed_dictionaries({name: _sections for name in USER_SECTIONS}),
        "history": st.fixed_dictionaries({name: _sections for name in HISTORY_SECTIONS}),
        "newFacts": _facts,
        "factsToRemove": st.lists(_text, max_size=5),
    }
)


@settings(max_examples=150, deadline=None)
@given(update=_updates, ensure_ascii=st.booleans(), indent=st.sampled_from([None, 2]))
def test_any_valid_update_round_trips_strictly(
    update: dict[str, Any], ensure_ascii: bool, indent: int | None
) -> None:
    result = parse_reply(json.dumps(update, ensure_ascii=ensure_ascii, indent=indent))
    assert result.ok, result.error
    assert result.rung is Rung.STRICT
    assert result.data == update
    assert result.wrappers == ()
