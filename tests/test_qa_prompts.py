"""QA prompt templates: built-ins, placeholder checks, content hashes, render and parse back."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from memlab.core.prompt_template import PromptError, PromptVariant, UnknownPromptError
from memlab.core.prompts import PromptRegistry, resolve_prompt, resolve_template
from memlab.qa.qa_prompts import AnswerPrompt, JudgePrompt, answer_prompts, judge_prompts


def test_builtins_are_registered_and_content_addressed() -> None:
    judges = judge_prompts()
    assert judges.names() == ["lenient", "strict"]
    assert answer_prompts().names() == ["default"]
    lenient, strict = judges.get("lenient"), judges.get("strict")
    assert lenient.sha256 != strict.sha256
    same_text = JudgePrompt("renamed", strict.template)
    assert same_text.sha256 == strict.sha256
    assert judge_prompts(builtins=False).names() == []
    # The update prompts keep their own registry.
    assert "lenient" not in PromptRegistry()
    with pytest.raises(UnknownPromptError, match="known variants: default"):
        answer_prompts().get("strict")


@pytest.mark.parametrize(
    ("template", "problem"),
    [
        ("Q: {question}", "missing the placeholder {memory}"),
        ("{memory} {question} {question}", "has the placeholder {question} 2 times"),
        ("{memory} {question} {answer}", "unknown placeholder '{answer}'"),
        ("{memory} {{question}}", "uses doubled braces"),
    ],
)
def test_answer_prompt_placeholders_are_checked(template: str, problem: str) -> None:
    with pytest.raises(PromptError, match=problem.replace("{", r"\{").replace("}", r"\}")):
        AnswerPrompt("mine", template)


def test_a_judge_prompt_needs_all_three_placeholders() -> None:
    with pytest.raises(PromptError, match=r"missing the placeholder \{gold_answer\}"):
        JudgePrompt("mine", "{question} {answer}")


def test_judge_prompt_files_load_into_their_registry(tmp_path: Path) -> None:
    path = tmp_path / "picky.txt"
    path.write_text("Q {question}\nR {gold_answer}\nA {answer}\n", encoding="utf-8")
    registry = judge_prompts()
    (loaded,) = registry.load_file(path)
    assert isinstance(loaded, JudgePrompt) and registry.get("picky") is loaded
    assert resolve_template(str(path), judge_prompts()).template == loaded.template
    assert resolve_template("strict", registry).name == "strict"
    inline = resolve_template("Grade {answer} to {question} given {gold_answer}", registry)
    assert inline.name == "inline"
    update_file = tmp_path / "update.txt"
    update_file.write_text("{current_memory} {conversation}", encoding="utf-8")
    with pytest.raises(PromptError, match="missing the placeholder"):
        judge_prompts().load_file(update_file)
    with pytest.raises(PromptError, match="a JudgePrompt, not a AnswerPrompt"):
        resolve_template(loaded, answer_prompts())
    assert isinstance(resolve_prompt("default"), PromptVariant)


def test_registry_copies_are_independent(tmp_path: Path) -> None:
    registry = judge_prompts()
    clone = registry.copy()
    clone.register(JudgePrompt("extra", "{question}{gold_answer}{answer}"))
    assert "extra" in clone and "extra" not in registry


_values = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60)


@given(question=_values, gold=_values, answer=_values)
def test_a_rendered_judge_prompt_parses_back(question: str, gold: str, answer: str) -> None:
    # A value holding the delimiter that follows it in the template is ambiguous.
    assume("QUESTION>>>" not in question and "REFERENCE>>>" not in gold)
    assume("ANSWER>>>" not in answer)
    for judge in (judge_prompts().get("lenient"), judge_prompts().get("strict")):
        parsed = judge.parse(judge.render(question, gold, answer))
        assert parsed == {"question": question, "gold_answer": gold, "answer": answer}


def test_parse_refuses_text_another_template_made() -> None:
    strict, lenient = judge_prompts().get("strict"), judge_prompts().get("lenient")
    text = strict.render("Where?", "Munich", "Berlin")
    assert strict.parse(text) == {"question": "Where?", "gold_answer": "Munich", "answer": "Berlin"}
    assert lenient.parse(text) is None
    assert answer_prompts().get("default").parse(text) is None
    messages = strict.messages("Where?", "Munich", "Berlin")
    assert messages == [{"role": "user", "content": text}]
