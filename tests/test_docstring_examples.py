"""Every example in memlab's docstrings runs: doctests, and each ``::`` literal block.

Literal blocks (reStructuredText ``::``) are found in every docstring of the package; each one
must have a check below that executes it or compares it with what the code does. A new
example without a check fails :func:`test_every_literal_block_has_a_check`.
"""

from __future__ import annotations

import ast
import doctest
import functools
import importlib
import json
import re
import textwrap
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

import memlab
from memlab.backends import registry as backend_registry
from memlab.backends.caching.cache import entry_path, request_key
from memlab.backends.remote.openai_compat import OpenAICompatibleBackend
from memlab.backends.scripted import ScriptedBackend
from memlab.core import prompts as prompts_module
from memlab.core.jsondoc.contract import TOP_LEVEL_KEYS, NewFact
from memlab.core.jsondoc.document import DOCUMENT_VERSION, create_empty_memory
from memlab.core.jsondoc.merge import apply_updates
from memlab.core.pipeline.config import ConfigError, MemoryConfig
from memlab.core.pipeline.injection import format_memory_for_injection
from memlab.core.pipeline.llm import CompletionRequest
from memlab.core.prompts import PromptRegistry
from memlab.runs.run import keep_table_copies
from memlab.sweeps.driver import sweep
from memlab.sweeps.plan import load_grid

PACKAGE = Path(memlab.__file__).resolve().parent
NOW = datetime(2025, 1, 6, 9, 12, tzinfo=UTC)


def _modules() -> list[str]:
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "__main__.py":
            continue  # importing it runs the command line
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def _docstrings(path: Path) -> Iterator[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node, clean=True)
            if doc:
                yield doc


def _literal_blocks(doc: str) -> Iterator[str]:
    """The indented blocks that follow a line ending in ``::``."""
    lines = doc.splitlines()
    for i, line in enumerate(lines):
        if not line.rstrip().endswith("::"):
            continue
        base = len(line) - len(line.lstrip())
        block: list[str] = []
        for following in lines[i + 1 :]:
            indent = len(following) - len(following.lstrip())
            if following.strip() and indent <= base:
                break
            block.append(following)
        yield textwrap.dedent("\n".join(block)).strip("\n")


@functools.cache  # parsing every module takes seconds; each parametrized case reads one block
def _all_blocks() -> dict[tuple[str, str], str]:
    """(module, first line of the block) -> block text, for every literal block."""
    found: dict[tuple[str, str], str] = {}
    for module in _modules():
        path = PACKAGE.parent / (module.replace(".", "/") + ".py")
        if not path.exists():
            path = path.with_suffix("") / "__init__.py"
        for doc in _docstrings(path):
            for block in _literal_blocks(doc):
                found[(module, block.splitlines()[0])] = block
    return found


# --- checks, one per literal block ------------------------------------------------------------


def check_grid_yaml(block: str, tmp_path: Path) -> None:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "mine.txt").write_text(
        "{current_memory}\n{conversation}\n", encoding="utf-8"
    )
    path = tmp_path / "grid.yaml"
    path.write_text(block, encoding="utf-8")
    grid = load_grid(path)  # rejects unknown keys, resolves prompt files and names
    lanes = grid.lanes()
    assert len(lanes) == 4
    assert grid.varying() == ["prompt", "output_mode"]
    assert {(lane.backend, lane.max_tokens) for lane in lanes} == {("scripted", 512)}


def check_qa_key(block: str, tmp_path: Path) -> None:
    from memlab.core.base.yamlio import parse_yaml
    from memlab.grids.qa_spec import QASpec

    spec = QASpec.model_validate(parse_yaml(block, "qa.yaml").data["qa"])
    assert spec.judges == ["lenient", "strict"] and spec.grader == "openai:gpt-4o-mini"
    assert spec.conditions == ["memory", "none", "full_context", "gold_memory"]


def check_tune_key(block: str, tmp_path: Path) -> None:
    from memlab.core.base.yamlio import parse_yaml
    from memlab.reporting.tuning.tune_spec import Range, TuneSpec

    spec = TuneSpec.model_validate(parse_yaml(block, "tune.yaml").data["tune"])
    assert spec.prompts() == ["default", "prompts/self_only.txt"]
    assert spec.ranges()["max_facts"] == Range(low=20, high=200, step=20)
    assert spec.objective.metric == "recall" and spec.max_trials == 20
    assert spec.evolve is not None and spec.evolve.reflect_backend == "openai:gpt-4o-mini"
    assert spec.evolve.max_metric_calls == 40


def check_rate_limit_key(block: str, tmp_path: Path) -> None:
    from memlab.backends.remote.rate_limit import RateLimit
    from memlab.core.base.yamlio import parse_yaml
    from memlab.grids.rate_limit_spec import RateLimitSpec

    spec = RateLimitSpec.model_validate(parse_yaml(block, "grid.yaml").data["rate_limit"])
    # As the example says: every endpoint at 500 requests and 200,000 tokens a minute, the
    # one model at 60 requests with the grid-wide tokens.
    assert spec.limits() == {
        "openai:gpt-4o": RateLimit(60, 200_000),
        "*": RateLimit(500, 200_000),
    }


def check_sim_profile(block: str, tmp_path: Path) -> None:
    from memlab.simulation.profile import load_profile

    path = tmp_path / "mine.yaml"
    path.write_text(block, encoding="utf-8")
    profile = load_profile(path)
    assert profile.name == "mine" and profile.propose_rate == 0.8
    assert profile.reads_prompts and profile.for_template("Only facts the USER states")[1] == (
        "self-facts",
    )


def check_graph_model(block: str, tmp_path: Path) -> None:
    """The graph model drawn in the docstring is the one the graph's tables declare."""
    import re

    from memlab.memory.storage import graph

    tables = " ".join(vars(graph)["_TABLES"])
    for label in re.findall(r"\(:(\w+) \{", block):
        assert f"CREATE NODE TABLE {label}(" in tables, label
    hops = re.findall(r"\(:(\w+) \{\w+\}\)-\[:(\w+)\]->(?=\(:(\w+))", block)
    assert len(hops) == 2
    for src, rel, dst in hops:
        assert f"CREATE REL TABLE {rel}(FROM {src} TO {dst})" in tables, rel


def check_face_declaration(block: str, tmp_path: Path) -> None:
    from memlab._lazy import face_exports

    source = "from typing import TYPE_CHECKING\n\nfrom memlab._lazy import lazy_face\n\n" + block
    assert face_exports("memlab.scoring", source) == {"summarize": "memlab.scoring.metrics"}
    exec(compile(source, "face.py", "exec"), {"__name__": "memlab.scoring"})  # valid Python
    import memlab.scoring

    assert memlab.scoring.summarize.__module__ == "memlab.scoring.metrics"  # as memlab declares it


def check_calibration_pair(block: str, tmp_path: Path) -> None:
    from memlab.matching.calibration import bundled_pair_files

    shown = json.loads(" ".join(block.split()))
    lines = [line for path in bundled_pair_files() for line in path.read_text("utf-8").splitlines()]
    assert shown in [json.loads(line) for line in lines]


def check_labelling_form(block: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from memlab.matching.matcher_audit import AuditRow, AuditSheet, read_sheet

    monkeypatch.chdir(tmp_path)
    Path("runs/demo").mkdir(parents=True)
    row = AuditRow(
        "a001",
        "accepted",
        1,
        "default",
        True,
        1.0,
        "same text",
        "lane",
        "ann",
        0,
        "Lives in Leeds",
        "Lives in Leeds",
    )
    AuditSheet([row]).write("runs/demo/matcher_audit.csv")
    namespace: dict[str, Any] = {}
    exec(block, namespace)
    namespace["form"].answer(True)
    assert read_sheet("runs/demo/matcher_audit.csv").rows[0].label is True


def check_run_layout(block: str, tmp_path: Path) -> None:
    """Every listed path exists in a real run directory with memory QA, and every file there
    is listed."""
    grid = {
        "name": "layout",
        "owners": ["amara"],
        "base": {"backend": "sim:careful"},
        "qa": {"answer_backend": "sim:careful", "judges": ["strict"], "conditions": ["memory"]},
    }
    run = sweep("personas", memlab.Grid.from_mapping(grid), runs_dir=tmp_path, progress=False)
    keep_table_copies(run.path)  # as the sweep command does
    patterns = [line.split()[0] for line in block.splitlines() if line and not line[0].isspace()]
    globs = [re.sub(r"<[a-z_]+>", "*", pattern) for pattern in patterns]
    for pattern in globs:
        assert list(run.path.glob(pattern)), f"{pattern} is not in a run directory"
    files = [p.relative_to(run.path) for p in run.path.rglob("*") if p.is_file()]
    unlisted = [str(f) for f in files if not any(f.match(g) for g in globs)]
    assert unlisted == []


def check_llama_server(block: str, tmp_path: Path) -> None:
    class FakeServer:  # the real one starts llama.cpp (an integration test covers it)
        model_alias = "smollm2"
        base_url = "http://127.0.0.1:1/v1"

        def __enter__(self) -> FakeServer:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

    namespace: dict[str, Any] = {
        "LlamaServer": lambda **kwargs: FakeServer(),
        "OpenAICompatibleBackend": OpenAICompatibleBackend,
    }
    exec(block, namespace)
    backend = namespace["backend"]
    assert isinstance(backend, OpenAICompatibleBackend) and backend.model == "smollm2"


def check_register_backend(block: str, tmp_path: Path) -> None:
    class MyBackend(ScriptedBackend):
        def __init__(self, arg: str, **options: Any) -> None:
            super().__init__(["hi"], model=arg, **options)

    try:
        namespace = {"register_backend": backend_registry.register_backend, "MyBackend": MyBackend}
        exec(block, namespace)
        backend = backend_registry.resolve_backend("mybackend:m1")
        assert isinstance(backend, MyBackend) and backend.model == "m1"
    finally:
        backend_registry.BACKENDS.unregister("mybackend")


def check_cache_layout(block: str, tmp_path: Path) -> None:
    key = request_key(
        "scripted", "m", CompletionRequest(messages=[{"role": "user", "content": "x"}])
    )
    expected = block.replace("<cache_dir>", str(tmp_path))
    expected = expected.replace("<first 2 hex digits>", key[:2]).replace("<sha256>", key)
    assert str(entry_path(tmp_path, key)) == expected


def check_injection_shape(block: str, tmp_path: Path) -> None:
    memory = create_empty_memory(NOW)
    for group in ("user", "history"):
        for name in memory[group]:
            memory[group][name] = {"summary": f"about {name}", "updatedAt": ""}
    memory["facts"] = [
        {
            "id": "fact_00000001",
            "content": "Likes tea",
            "category": "preference",
            "confidence": 0.95,
        }
    ]
    text = format_memory_for_injection(memory, 2000)
    pattern = "\n".join(re.escape(line).replace(r"\.\.\.", ".+") for line in block.splitlines())
    assert re.fullmatch(pattern, text), text


def check_contract_shape(block: str, tmp_path: Path) -> None:
    quoted = set(re.findall(r'"([^"]+)"', block))
    assert quoted == {*TOP_LEVEL_KEYS, *NewFact.model_fields, "fact_…"}


def check_config_error(block: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("memory.yaml").write_text(
        "memory:\n  enabled: true\n  debounce_seconds: 30\n  max_facts: 5\n", encoding="utf-8"
    )
    with pytest.raises(ConfigError) as exc:
        MemoryConfig.from_yaml("memory.yaml")
    assert exc.value.problems == [block]


def check_prompt_files(block: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(prompts_module, "_default_registry", PromptRegistry())
    Path("my_prompts").mkdir()
    Path("my_prompts/terse.txt").write_text("M {current_memory}\nC {conversation}\n", "utf-8")
    Path("my_prompts/variants.yaml").write_text(
        'short:\n  template: "{current_memory} / {conversation}"\n', "utf-8"
    )
    namespace: dict[str, Any] = {
        "default_registry": prompts_module.default_registry,
        "get_prompt": prompts_module.get_prompt,
        "memory": {"facts": []},
        "conversation": "User: hi",
    }
    exec(block, namespace)
    assert namespace["prompt"] == 'M {\n  "facts": []\n}\nC User: hi\n'
    assert prompts_module.get_prompt("short").render({}, "x") == "{} / x"


def check_document_shape(block: str, tmp_path: Path) -> None:
    memory = create_empty_memory(NOW)
    assert re.findall(r'^  "(\w+)"', block, re.MULTILINE) == list(memory)
    assert f'"version": "{DOCUMENT_VERSION}"' in block
    update = {
        "user": {},
        "history": {},
        "newFacts": [{"content": "Likes tea", "category": "preference", "confidence": 0.9}],
        "factsToRemove": [],
    }
    fact = apply_updates(memory, update, thread_id="t", now=NOW).memory["facts"][0]
    facts_line = block[block.index('"facts":') + len('"facts":') :]
    assert re.findall(r'"(\w+)":', facts_line) == list(fact)


def check_plugin_entry_point(block: str, tmp_path: Path) -> None:
    import tomllib

    from memlab.plugins import PLUGIN_GROUP

    declared = tomllib.loads(block)["project"]["entry-points"][PLUGIN_GROUP]
    assert declared == {"echo": "memlab_echo:register"}
    # The example plugin under tests/plugins/ is declared the same way.
    example = Path(__file__).parent / "plugins" / "memlab-echo" / "pyproject.toml"
    project = tomllib.loads(example.read_text(encoding="utf-8"))["project"]
    assert project["entry-points"][PLUGIN_GROUP] == declared


def check_judge_triple(block: str, tmp_path: Path) -> None:
    import memlab.qa

    shown = json.loads(" ".join(line.strip() for line in block.splitlines()))
    bundled = Path(memlab.qa.__file__).parent / "data" / "judge_calibration.jsonl"
    lines = bundled.read_text(encoding="utf-8").splitlines()
    same = [json.loads(line) for line in lines if f'"id": "{shown["id"]}"' in line]
    assert same == [shown]


def check_judge_audit_json(block: str, tmp_path: Path) -> None:
    import dataclasses

    from memlab.qa import load_judge_calibration
    from memlab.qa.qa_prompts import judge_prompts
    from memlab.scoring.qa.judge_audit import audit_backend

    bundled = load_judge_calibration()
    few = dataclasses.replace(bundled, triples=bundled.triples[:6])
    prompts = judge_prompts()
    audit = audit_backend("sim:careful", [prompts.get("lenient"), prompts.get("strict")], few)
    found = audit.to_json()
    # The keys the block shows, at each level it shows them, are the audit's.
    assert re.findall(r'\{"(\w+)": 1,', block) == ["judge_audit_format"]
    shown = set(re.findall(r'"(\w+)":', block))
    judged = found["judges"]["lenient"]
    known = {*found, *found["calibration"], *found["params"], *judged, *judged["on_topic_wrong"]}
    known |= {"name", *found["judges"], *judged["by_kind"]}
    assert shown <= known, shown - known
    tally = re.search(r"Every tally has the keys ``([^`]+)``", _module_doc("judge_audit"))
    assert tally is not None and set(tally.group(1).split()) <= set(judged["on_topic_wrong"])


def check_judge_audits_json(block: str, tmp_path: Path) -> None:
    """The keys the block shows are those of the file a real audit of a run's judges keeps."""
    import dataclasses

    from memlab.postrun.judge_audit_step import JUDGE_AUDITS, audit_run_judges
    from memlab.qa.judge_calibration import load_judge_calibration

    grid = {
        "name": "audited",
        "owners": ["amara"],
        "base": {"backend": "sim:careful"},
        "qa": {"answer_backend": "sim:careful", "judges": ["strict"], "conditions": ["memory"]},
    }
    run = sweep("personas", memlab.Grid.from_mapping(grid), runs_dir=tmp_path, progress=False)
    bundled = load_judge_calibration()
    audit_run_judges(run, calibration=dataclasses.replace(bundled, triples=bundled.triples[:6]))
    found = json.loads((run.path / JUDGE_AUDITS).read_text(encoding="utf-8"))
    assert re.findall(r'\{"(\w+)": 1,', block) == ["judge_audits_format"]
    (entry,) = found["audits"]
    known = {*found, *entry, *entry["backend_identity"], *entry["params"], *entry["calibration"]}
    shown = set(re.findall(r'"(\w+)":', block))
    assert shown <= known, shown - known
    assert entry["judge"] == "strict" and entry["backend"] == "sim:careful"


def _module_doc(name: str) -> str:
    import importlib

    return importlib.import_module(f"memlab.scoring.qa.{name}").__doc__ or ""


CHECKS: dict[tuple[str, str], Callable[..., None]] = {
    ("memlab.scoring.qa.judge_audit", '{"judge_audit_format": 1,'): check_judge_audit_json,
    ("memlab.postrun.judge_audit_step", '{"judge_audits_format": 1,'): check_judge_audits_json,
    (
        "memlab.qa.judge_calibration",
        '{"id": "part-001", "kind": "partial", "question": "Which two countries did Noor visit in',
    ): check_judge_triple,
    ("memlab.plugins", '[project.entry-points."memlab.plugins"]'): check_plugin_entry_point,
    ("memlab.grids.grid", "name: prompt-vs-mode"): check_grid_yaml,
    ("memlab.simulation.profile", "name: mine"): check_sim_profile,
    ("memlab._lazy", "if TYPE_CHECKING:"): check_face_declaration,
    (
        "memlab.memory.storage.graph",
        "(:Trigger {text})-[:ACTIVATES]->(:Procedure {name})-[:HAS_STEP]->(:Step {text})",
    ): check_graph_model,
    ("memlab.grids.qa_spec", "qa:"): check_qa_key,
    ("memlab.grids.rate_limit_spec", "rate_limit:"): check_rate_limit_key,
    ("memlab.reporting.tuning.tune_spec", "tune:"): check_tune_key,
    (
        "memlab.matching.calibration",
        '{"id": "polarity_flip-001", "style": "compact", "kind": "polarity_flip",',
    ): check_calibration_pair,
    ("memlab.matching.audit_form", "from memlab.matching.audit_form import labelling_form"): (
        check_labelling_form
    ),
    (
        "memlab.runs.rundir",
        "grid.yaml            the sweep definition as resolved (lanes listed)",
    ): check_run_layout,
    ("memlab.backends.local.llama_server", "with LlamaServer(n_threads=2) as server:"): (
        check_llama_server
    ),
    (
        "memlab.backends.registry",
        'register_backend("mybackend", lambda arg, **options: MyBackend(arg, **options))',
    ): check_register_backend,
    ("memlab.backends.caching.cache", "<cache_dir>/<first 2 hex digits>/<sha256>.json"): (
        check_cache_layout
    ),
    ("memlab.core.pipeline.injection", "User Context:"): check_injection_shape,
    (
        "memlab.core.jsondoc.contract",
        '{"user": {...3 sections...}, "history": {...3 sections...},',
    ): (check_contract_shape),
    (
        "memlab.core.pipeline.config",
        "memory.yaml: field 'max_facts': must be >= 10 (got 5) [line 4]",
    ): (check_config_error),
    ("memlab.core.prompts", "registry = default_registry()"): check_prompt_files,
    ("memlab.core.jsondoc.document", "{"): check_document_shape,
}


def test_every_literal_block_has_a_check() -> None:
    assert sorted(_all_blocks()) == sorted(CHECKS)


@pytest.mark.parametrize("key", list(CHECKS), ids=lambda key: key[0])
def test_literal_block(
    key: tuple[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    block = _all_blocks()[key]
    check = CHECKS[key]
    if "monkeypatch" in check.__code__.co_varnames:
        check(block, tmp_path, monkeypatch)
    else:
        check(block, tmp_path)


def test_doctests_pass() -> None:
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    examples = 0
    for name in _modules():
        module = importlib.import_module(name)
        # The finder skips objects imported from other modules: each is run once, at home.
        for test in finder.find(module, name, globs=vars(module).copy()):
            examples += len(test.examples)
            runner.run(test)
    results = runner.summarize(verbose=False)
    assert results.failed == 0
    assert examples >= 4  # ScriptedBackend and SeededFactIds at least
