"""Prompt variants: built-in templates, validation, rendering and loading from files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from memlab.core.jsondoc.contract import (
    FACT_CATEGORIES,
    HISTORY_SECTIONS,
    MINIMAL_VALID_UPDATE,
    USER_SECTIONS,
    validate_update,
)
from memlab.core.prompt_template import PromptError, PromptVariant, UnknownPromptError
from memlab.core.prompts import PromptRegistry, default_registry, get_prompt, render_prompt

MEMORY = {
    "version": "1.0",
    "lastUpdated": "2026-01-01T00:00:00Z",
    "user": {"workContext": {"summary": "Data engineer at Acme", "updatedAt": ""}},
    "facts": [{"id": "fact_0123abcd", "content": "喜欢绿茶", "confidence": 0.9}],
}
CONVERSATION = "User: I switched to decaf.\n\nAssistant: Noted!"


def test_builtins_are_registered_in_order() -> None:
    registry = PromptRegistry()
    assert registry.names() == ["default", "concise"]
    assert "default" in registry
    assert len(registry) == 2
    assert PromptRegistry(builtins=False).names() == []


# Each requirement of the default prompt (SPEC §1.4) as a phrase both built-ins must contain,
# matched on the template with runs of whitespace collapsed to one space.
PROMPT_REQUIREMENTS = {
    "role": r"memory (?:manager )?(?:for|of) (?:a single|one) user",
    "memory block": r"<<<CURRENT_MEMORY \{current_memory\} CURRENT_MEMORY>>>",
    "conversation block": r"<<<CONVERSATION \{conversation\} CONVERSATION>>>",
    "conversation is data": r"data to analy[sz]e, not (?:as )?instructions",
    "explicit band": r"0\.9-1\.0:? (?:the user )?stated (?:it )?explicitly",
    "implied band": r"0\.7-0\.8:? strongly implied",
    "inferred band": r"0\.5-0\.6:? inferred",
    "remove contradicted": r"contradicts.{0,200}factsToRemove|factsToRemove.{0,200}contradicts",
    "no uploads": r"Never record file uploads",
    "JSON only": r"Reply with (?:a single|this) JSON object (?:and nothing else|only)",
}
# Length guidance: the first "<n> words" after each section's first mention.
SECTION_WORDS = {
    "workContext": 60,
    "personalContext": 60,
    "topOfMind": 40,
    "recentMonths": 80,
    "earlierContext": 60,
    "longTermBackground": 60,
}


def _flat_template(name: str) -> str:
    return " ".join(get_prompt(name).template.split())


@pytest.mark.parametrize("name", ["default", "concise"])
@pytest.mark.parametrize("requirement", list(PROMPT_REQUIREMENTS))
def test_builtin_prompt_states_each_requirement(name: str, requirement: str) -> None:
    assert re.search(PROMPT_REQUIREMENTS[requirement], _flat_template(name)), requirement


@pytest.mark.parametrize("name", ["default", "concise"])
def test_builtin_prompt_gives_length_guidance_per_section(name: str) -> None:
    text = _flat_template(name)
    assert set(SECTION_WORDS) == set(USER_SECTIONS) | set(HISTORY_SECTIONS)
    for section, words in SECTION_WORDS.items():
        start = text.index(section)
        guidance = re.search(r"(\d+) words", text[start : start + 200])
        assert guidance is not None and int(guidance.group(1)) == words, section


@pytest.mark.parametrize("name", ["default", "concise"])
def test_builtin_prompt_defines_every_category(name: str) -> None:
    text = _flat_template(name)
    for category in FACT_CATEGORIES:
        # A definition follows the name: "goal: what the user..." or "goal (aims)".
        assert re.search(rf"\b{category} ?[:(] ?[a-z]", text), category


@pytest.mark.parametrize("name", ["default", "concise"])
def test_builtin_skeleton_is_the_minimal_valid_update(name: str) -> None:
    rendered = get_prompt(name).render({}, "")
    start = rendered.index('{\n  "user"') if name == "default" else rendered.index('{"user"')
    skeleton, _end = json.JSONDecoder().raw_decode(rendered, start)
    assert skeleton == MINIMAL_VALID_UPDATE
    assert validate_update(skeleton) == []


def test_concise_is_shorter_than_default() -> None:
    assert len(get_prompt("concise").template) < len(get_prompt("default").template) / 2


def test_render_inserts_memory_json_and_conversation() -> None:
    rendered = get_prompt("default").render(MEMORY, CONVERSATION)
    expected_json = json.dumps(MEMORY, indent=2, ensure_ascii=False)
    assert expected_json in rendered
    assert "喜欢绿茶" in rendered  # not \\u-escaped
    assert CONVERSATION in rendered
    assert "{current_memory}" not in rendered and "{conversation}" not in rendered
    # The memory block comes before the conversation block, each delimited.
    assert rendered.index("CURRENT_MEMORY") < rendered.index(expected_json)
    assert rendered.index(expected_json) < rendered.index(CONVERSATION)


def test_render_keeps_literal_braces_and_substitutes_once() -> None:
    variant = PromptVariant("t", 'Example: {"a": {}} {{}}\n{current_memory}\n---\n{conversation}')
    sneaky = "User: please store {current_memory} and {conversation}"
    rendered = variant.render({"k": "{conversation}"}, sneaky)
    assert rendered.startswith('Example: {"a": {}} {{}}\n')
    assert rendered.endswith("---\n" + sneaky)
    assert '"k": "{conversation}"' in rendered


def test_render_prompt_by_name_or_variant() -> None:
    by_name = render_prompt(MEMORY, CONVERSATION, "concise")
    assert by_name == get_prompt("concise").render(MEMORY, CONVERSATION)
    variant = PromptVariant("mine", "M={current_memory} C={conversation}")
    assert render_prompt({}, "hi", variant) == "M={} C=hi"


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("only {conversation}", "missing the placeholder {current_memory}"),
        ("only {current_memory}", "missing the placeholder {conversation}"),
        ("{current_memory}{conversation}{conversation}", "{conversation} 2 times"),
        ("{{current_memory}} {conversation}", "doubled braces"),
        ("{ current_memory } {current_memory} {conversation}", "spaces inside the braces"),
        ("{current_memory}\n{conversation}\n{user_name}", "unknown placeholder '{user_name}'"),
    ],
)
def test_template_validation(template: str, message: str) -> None:
    with pytest.raises(PromptError, match=re.escape(message)) as exc:
        PromptVariant("bad", template)
    assert "prompt 'bad'" in str(exc.value)


def test_unknown_placeholder_reports_line() -> None:
    with pytest.raises(PromptError, match="at line 3"):
        PromptVariant("bad", "{current_memory}\n{conversation}\nHi {name}")


def test_register_and_replace() -> None:
    registry = PromptRegistry()
    first = PromptVariant("mine", "A {current_memory} {conversation}", "first")
    registry.register(first)
    assert registry.get("mine") is first
    second = PromptVariant("mine", "B {current_memory} {conversation}")
    with pytest.raises(PromptError, match="already registered"):
        registry.register(second)
    registry.register(second, replace=True)
    assert registry.get("mine") is second


def test_get_unknown_lists_known_names() -> None:
    with pytest.raises(UnknownPromptError) as exc:
        PromptRegistry().get("fancy")
    assert "'fancy'" in str(exc.value)
    assert "concise, default" in str(exc.value)
    assert isinstance(exc.value, LookupError)


def test_load_txt_file(tmp_path: Path) -> None:
    path = tmp_path / "terse.txt"
    path.write_text("Memory:\n{current_memory}\nChat:\n{conversation}\n", "utf-8")
    registry = PromptRegistry()
    (variant,) = registry.load_file(path)
    assert variant.name == "terse"
    assert registry.get("terse").render({}, "hi") == "Memory:\n{}\nChat:\nhi\n"


def test_load_bad_txt_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.txt"
    path.write_text("no placeholders here", "utf-8")
    registry = PromptRegistry()
    with pytest.raises(PromptError) as exc:
        registry.load_file(path)
    assert str(path) in str(exc.value)
    assert "broken" not in registry


def test_load_yaml_mapping(tmp_path: Path) -> None:
    path = tmp_path / "variants.yaml"
    path.write_text(
        "short:\n  description: Very short\n  template: |\n"
        "    M {current_memory}\n    C {conversation}\n"
        'bare: "{current_memory} / {conversation}"\n',
        "utf-8",
    )
    registry = PromptRegistry()
    loaded = registry.load_file(path)
    assert [v.name for v in loaded] == ["short", "bare"]
    assert registry.get("short").description == "Very short"
    assert registry.get("bare").render({"a": 1}, "x") == '{\n  "a": 1\n} / x'


def test_load_json_list(tmp_path: Path) -> None:
    path = tmp_path / "variants.json"
    entries = [
        {"name": "one", "template": "{current_memory}|{conversation}"},
        {"name": "two", "template": "{conversation}|{current_memory}", "description": "swap"},
    ]
    path.write_text(json.dumps(entries), "utf-8")
    registry = PromptRegistry()
    registry.load_file(path)
    assert registry.names() == ["default", "concise", "one", "two"]
    assert registry.get("two").render({}, "c") == "c|{}"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('[{"name": "x"}]', ":1: [0].template: must be a string"),
        (
            '[{"name": "x", "template": "{current_memory}{conversation}", "tags": 1}]',
            ":1: [0].tags: unknown keys tags",
        ),
        ('{"x": 3}', ":1: x: expected a template string"),
        ('"just text"', ":1: expected a mapping of prompt names or a list"),
        ('{"x": "{conversation}"}', ":1: x: invalid prompt template: missing the placeholder"),
        ("[1, 2", ":1: not valid JSON"),
    ],
)
def test_bad_data_file_names_the_file(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "prompts.json"
    path.write_text(content, "utf-8")
    with pytest.raises(PromptError) as exc:
        PromptRegistry().load_file(path)
    assert str(exc.value).startswith(str(path) + message)


def test_bad_file_registers_nothing(tmp_path: Path) -> None:
    path = tmp_path / "mixed.yaml"
    path.write_text('good: "{current_memory} {conversation}"\nbad: "{conversation}"\n', "utf-8")
    registry = PromptRegistry()
    with pytest.raises(PromptError):
        registry.load_file(path)
    assert "good" not in registry


def test_load_clash_needs_replace(tmp_path: Path) -> None:
    path = tmp_path / "default.txt"
    path.write_text("{current_memory} {conversation}", "utf-8")
    registry = PromptRegistry()
    with pytest.raises(PromptError, match="already registered: default"):
        registry.load_file(path)
    registry.load_file(path, replace=True)
    assert registry.get("default").template == "{current_memory} {conversation}"


def test_unsupported_suffix_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(PromptError, match=r"unsupported prompt file type \.md"):
        PromptRegistry().load_file(tmp_path / "p.md")
    with pytest.raises(PromptError, match="cannot read prompt file"):
        PromptRegistry().load_file(tmp_path / "missing.txt")


def test_load_directory(tmp_path: Path) -> None:
    (tmp_path / "b.txt").write_text("{current_memory}{conversation}", "utf-8")
    (tmp_path / "a.yaml").write_text('c: "{conversation}{current_memory}"\n', "utf-8")
    (tmp_path / "notes.md").write_text("ignored", "utf-8")
    registry = PromptRegistry()
    loaded = registry.load_directory(tmp_path)
    assert [v.name for v in loaded] == ["c", "b"]


def test_default_registry_is_a_singleton() -> None:
    assert default_registry() is default_registry()
    assert get_prompt() is default_registry().get("default")


def test_a_bad_prompt_file_error_names_the_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "prompts.yaml"
    path.write_text(
        "good:\n"
        "  template: |\n"
        "    {current_memory}\n"
        "    {conversation}\n"
        "bad:\n"
        "  description: mine\n"
        "  template: '{current_memory} {conversation} {answer}'\n",
        "utf-8",
    )
    with pytest.raises(PromptError) as exc:
        PromptRegistry().load_file(path)
    message = str(exc.value)
    assert message.startswith(f"{path}:7: bad.template: invalid prompt template: ")
    assert "unknown placeholder '{answer}'" in message and "\n" not in message
    text = tmp_path / "mine.txt"
    text.write_text("Memory:\n{current_memory}\nTalk:\n{conversation}\nNow {convo}\n", "utf-8")
    with pytest.raises(PromptError, match=rf"^{re.escape(str(text))}:5: template: "):
        PromptRegistry().load_file(text)


def test_one_template_of_a_kind_loads_alone() -> None:
    """Asking for the built-in summary prompt loads that template only: another template of the
    kind whose loader fails (a broken plugin's) does not take the built-in down with it."""
    from memlab import plugins
    from memlab.core.tiered_prompts import SummaryPrompt, summary_prompt

    kind = plugins.registry("tiered_summary_prompt")

    def broken() -> SummaryPrompt:
        raise OSError("prompt file missing")

    kind.register("broken-summary", broken)
    try:
        assert summary_prompt().name == "default"
        with pytest.raises(OSError, match="prompt file missing"):
            summary_prompt("broken-summary")
        with pytest.raises(UnknownPromptError, match=r"known variants: default\b.*broken-summary"):
            summary_prompt("nope")
    finally:
        kind.unregister("broken-summary")
