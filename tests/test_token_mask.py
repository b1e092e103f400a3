"""The llguidance constraint of the local backend: its grammar and its option (no model runs;
the real-model properties are in test_integration_llama.py)."""

from __future__ import annotations

import pytest

from memlab.backends.decoding.grammar import compile_grammar, longest_text_bytes
from memlab.backends.decoding.token_mask import _bounded_repeats, lark_grammar
from memlab.backends.local.llama_local import LocalLlamaBackend
from memlab.core.jsondoc.contract import SchemaBounds, bounded_schema, contract_schema
from memlab.core.pipeline.llm import BackendError

llguidance = pytest.importorskip("llguidance")

BOUNDS = [
    SchemaBounds(summary_chars=16, fact_chars=32, max_new_facts=1, max_removals=1),
    SchemaBounds(summary_chars=60, fact_chars=80, max_new_facts=3, max_removals=2),
]


def test_nested_optionals_become_one_bounded_repeat() -> None:
    body = r'"\"" (char (char (char)?)?)? "\"" [0-9] ([0-9] ([0-9])?)?'
    assert _bounded_repeats(body) == r'"\"" char{0,3} "\"" [0-9] [0-9]{0,2}'
    # Different items in a chain are not one repeat: left as they are.
    assert _bounded_repeats("(a (b)?)?") == "(a b{0,1})?"


@pytest.mark.parametrize("bounds", BOUNDS)
def test_the_lark_grammar_keeps_the_compact_grammars_language(bounds: SchemaBounds) -> None:
    """The rewrite keeps every rule's longest text (so the reply bound holds for both
    engines), and llguidance accepts the translated grammar."""
    gbnf = compile_grammar(bounded_schema(contract_schema(), bounds))
    flat = "\n".join(_bounded_repeats(line) for line in gbnf.splitlines())
    assert flat != gbnf and "(char (char" not in flat
    assert longest_text_bytes(flat) == longest_text_bytes(gbnf)
    grammar = llguidance.LLMatcher.grammar_from_lark(lark_grammar(gbnf))
    assert llguidance.LLMatcher.validate_grammar(grammar) == ""


def test_the_constraint_option_is_checked_and_part_of_the_identity(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("MEMLAB_LLAMA_CONSTRAINT", raising=False)
    default = LocalLlamaBackend()
    guided = LocalLlamaBackend(constraint="llguidance")
    assert default.constraint == "grammar" and guided.constraint == "llguidance"
    # The default engine keeps the identity it always had (committed caches stay valid).
    assert "constraint" not in default.identity()
    assert {**default.identity(), "constraint": "llguidance"} == guided.identity()
    with pytest.raises(BackendError, match=r"constraint must be one of grammar, llguidance"):
        LocalLlamaBackend(constraint="lazy")  # type: ignore[arg-type]
    monkeypatch.setenv("MEMLAB_LLAMA_CONSTRAINT", "llguidance")
    assert LocalLlamaBackend().constraint == "llguidance"
    monkeypatch.setenv("MEMLAB_LLAMA_CONSTRAINT", "fast")
    with pytest.raises(BackendError, match=r"MEMLAB_LLAMA_CONSTRAINT must be one of"):
        LocalLlamaBackend()
