"""Untrusted datasets, grids, caches and replies (issue 17): one test group per defect."""

from __future__ import annotations

import json
import os
import stat
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from builders import (
    locomo_sample,
    marker_backend,
    one_turn,
    sweep_scripted,
    update,
    write_owners,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from memlab.backends.caching.cache import (
    CacheCorruptError,
    CachedBackend,
    CacheError,
    CacheMode,
    entry_path,
)
from memlab.backends.caching.cache_admin import cache_stats, prune_cache
from memlab.backends.scripted import ScriptedBackend
from memlab.core.base import redact as redact_module
from memlab.core.base.atomic import atomic_write_text, default_file_mode
from memlab.core.base.jsontext import MAX_JSON_DEPTH, JsonDepthError, loads_json, nesting_path
from memlab.core.base.redact import REDACTED, redact, redact_text
from memlab.core.base.yamlio import MAX_YAML_NODES, YamlInputError, parse_yaml, read_yaml
from memlab.core.pipeline.config import ConfigError, MemoryConfig
from memlab.core.pipeline.llm import CompletionRequest, GenerationParams, OutputMode
from memlab.core.pipeline.storage import CorruptMemoryError, JsonFileStorage, clear_storage_cache
from memlab.core.prompt_template import PromptError
from memlab.core.prompts import PromptRegistry
from memlab.datasets.loader import validate_dataset
from memlab.datasets.locomo import LocomoFormatError, convert_locomo, import_locomo
from memlab.errors import excerpt, one_line
from memlab.grids.grid import Grid, GridError
from memlab.reporting.markdown import md_code_block, md_escape
from memlab.reporting.report import build_report
from memlab.sweeps.driver import sweep
from memlab.sweeps.plan import load_grid

T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)


def bomb(levels: int = 9) -> str:
    """A YAML "billion laughs": 9**levels strings from a few hundred bytes."""
    lines = ['l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        lines.append(f"l{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


# --- item 3: bounded YAML and bounded messages ------------------------------------------------


def test_alias_bomb_is_refused_quickly_with_a_short_message() -> None:
    text = bomb()
    assert len(text) < 500
    started = time.perf_counter()
    with pytest.raises(YamlInputError) as info:
        parse_yaml(text, "g.yaml")
    assert time.perf_counter() - started < 2.0
    message = str(info.value)
    assert "once aliases are expanded" in message and len(message) < 400
    assert "\n" not in message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a: &a [*a]\n", "contains it"),
        ("a: " + "[" * 5000 + "]" * 5000 + "\n", "levels deep"),
        ("a: " + "[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1) + "\n", "levels deep"),
        ("a: [" + ",".join(["1"] * (MAX_YAML_NODES + 1)) + "]\n", "values"),
        ("a: [1\n", "line 2"),
    ],
    ids=["recursive alias", "5000 levels", "101 levels", "too many values", "syntax"],
)
def test_yaml_limits(text: str, expected: str) -> None:
    with pytest.raises(YamlInputError, match=r"g\.yaml") as info:
        parse_yaml(text, "g.yaml")
    assert expected in str(info.value)


def test_ordinary_anchors_and_merge_keys_still_load() -> None:
    data = parse_yaml("base: &b {max_facts: 50}\nother: {<<: *b, seed: 1}\n", "g.yaml").data
    assert data == {"base": {"max_facts": 50}, "other": {"max_facts": 50, "seed": 1}}
    levels = MAX_JSON_DEPTH - 1  # lists inside the top-level mapping: exactly at the limit
    assert parse_yaml("a: " + "[" * levels + "]" * levels + "\n", "g.yaml").data is not None


def test_large_yaml_files_are_refused_before_parsing(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_text("a: 1\n" + "#" * 5_000_000 + "\n", encoding="utf-8")
    with pytest.raises(YamlInputError, match="bytes"):
        read_yaml(path)


def test_every_yaml_reader_is_bounded(tmp_path: Path) -> None:
    grid = tmp_path / "grid.yaml"
    grid.write_text(bomb() + "name: g\naxes: {prompt: *l8}\n", encoding="utf-8")
    with pytest.raises(GridError, match="aliases") as grid_error:
        load_grid(grid)
    config = tmp_path / "memory.yaml"
    config.write_text(bomb() + "max_facts: *l8\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="aliases") as config_error:
        MemoryConfig.from_yaml(config)
    prompts = tmp_path / "prompts.yaml"
    prompts.write_text(bomb() + "mine: *l8\n", encoding="utf-8")
    with pytest.raises(PromptError, match="aliases") as prompt_error:
        PromptRegistry().load_file(prompts)
    for error in (grid_error, config_error, prompt_error):
        assert len(str(error.value)) < 800


def test_grid_errors_quote_a_bounded_excerpt_of_a_huge_shared_value() -> None:
    shared: list[Any] = ["x" * 1000] * 9
    for _ in range(8):
        shared = [shared] * 9  # 9**9 strings if expanded; repr() would never finish
    started = time.perf_counter()
    with pytest.raises(GridError) as info:
        Grid.from_mapping({"name": "g", "base": {"max_facts": shared}})
    assert time.perf_counter() - started < 2.0
    assert len(str(info.value)) < 500


def test_excerpt_and_one_line_bound_any_value() -> None:
    assert len(excerpt("x" * 10_000)) <= 80
    assert len(excerpt({"k": list(range(10_000))}, 50)) <= 50
    assert one_line("a\nb\n\nc") == "a | b | c"
    assert len(one_line("y" * 100_000, 100)) == 100


# --- item 10: JSON depth, the same limit for validation and replay -----------------------------


def test_loads_json_limits_depth_with_a_path() -> None:
    text = '{"a":' * (MAX_JSON_DEPTH + 5) + "1" + "}" * (MAX_JSON_DEPTH + 5)
    with pytest.raises(JsonDepthError) as info:
        loads_json(text)
    assert info.value.where.startswith("a.a.a")
    with pytest.raises(JsonDepthError) as deep:
        loads_json("[" * 10_000 + "]" * 10_000)  # json.loads itself would recurse too far
    assert deep.value.path is None
    at_limit = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert nesting_path(loads_json(at_limit)) is None


def _owner_line(user_id: Any = "u1", **session_changes: Any) -> dict[str, Any]:
    session = one_turn("t1", T0, "I like green tea.", **session_changes)
    return {"user_id": user_id, "sessions": [session]}


def test_deep_tool_call_args_are_a_dataset_error_naming_the_field(tmp_path: Path) -> None:
    line = _owner_line()
    line["sessions"][0]["messages"][1]["tool_calls"] = [
        {"id": "c1", "name": "f", "args": {"q": "__DEEP__"}}
    ]
    text = json.dumps(line).replace('"__DEEP__"', '{"a":' * 900 + "1" + "}" * 900)
    path = tmp_path / "d.jsonl"
    path.write_text(text + "\n", encoding="utf-8")
    (error,) = validate_dataset(path)
    assert error.line == 1
    assert error.field.startswith("sessions[0].messages[1].tool_calls[0]")
    assert "nested more than" in error.message


def test_deep_memory_file_is_preserved_as_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "memory.json"
    path.write_text("[" * 10_000 + "]" * 10_000, encoding="utf-8")
    clear_storage_cache()
    with pytest.raises(CorruptMemoryError) as info:
        JsonFileStorage(path).load()
    assert "nested more than" in str(info.value)
    assert info.value.preserved_path.read_text("utf-8").startswith("[[[")


# --- item 1: unsafe owner ids are dataset errors -----------------------------------------------


@pytest.mark.parametrize(
    "user_id",
    ["../../etc/x", "/tmp/abs", "conv-26/Caroline", "..", ".hidden", "a\x00b", "x" * 300, "a b"],
)
def test_unsafe_user_ids_are_errors_naming_file_line_field(tmp_path: Path, user_id: str) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps(_owner_line("ok")) + "\n" + json.dumps(_owner_line(user_id)) + "\n")
    errors = validate_dataset(path)
    assert [(e.line, e.field) for e in errors] == [(2, "user_id")]
    assert str(errors[0]).startswith(f"{path}:2: user_id: ")
    assert len(str(errors[0])) < 400


# --- item 6: cache integrity -------------------------------------------------------------------


def _request(text: str) -> CompletionRequest:
    return CompletionRequest(
        messages=[{"role": "user", "content": text}],
        params=GenerationParams(max_tokens=16),
        mode=OutputMode.FREE,
    )


@pytest.fixture
def recorded(tmp_path: Path) -> Iterator[tuple[Path, Path, Path]]:
    """A cache with entries for requests "one" and "two": (cache dir, entry one, entry two)."""
    backend = ScriptedBackend(function=lambda r: f"answer to {r.messages[-1]['content']}")
    cached = CachedBackend(backend, tmp_path / "cache")
    cached.complete(_request("one"))
    cached.complete(_request("two"))
    one = entry_path(tmp_path / "cache", cached.key_for(_request("one")))
    two = entry_path(tmp_path / "cache", cached.key_for(_request("two")))
    yield tmp_path / "cache", one, two


def _fresh(cache_dir: Path, mode: CacheMode = CacheMode.READ_WRITE) -> CachedBackend:
    backend = ScriptedBackend(function=lambda r: f"fresh {r.messages[-1]['content']}")
    return CachedBackend(backend, cache_dir, mode)


def test_an_entry_holding_another_request_is_not_served(
    recorded: tuple[Path, Path, Path],
) -> None:
    cache_dir, one, two = recorded
    one.write_bytes(two.read_bytes())  # right file name, another request's content
    cached = _fresh(cache_dir)
    assert cached.complete(_request("one")).text == "fresh one"
    assert cached.counters.corrupt == 1
    aside = list(one.parent.glob(one.name + ".corrupt-*"))
    assert len(aside) == 1 and aside[0].read_bytes() == two.read_bytes()  # kept, not lost
    assert json.loads(one.read_text("utf-8"))["completion"]["text"] == "fresh one"


@pytest.mark.parametrize(
    "content", [b"\xff\xfe", b"{not json", b"[" * 5000, b'{"format": 1}'], ids=str
)
def test_corrupt_entries_are_moved_aside_never_overwritten(
    recorded: tuple[Path, Path, Path], content: bytes
) -> None:
    cache_dir, one, _ = recorded
    one.write_bytes(content)
    cached = _fresh(cache_dir)
    assert cached.complete(_request("one")).text == "fresh one"
    (aside,) = one.parent.glob(one.name + ".corrupt-*")
    assert aside.read_bytes() == content
    stats = cache_stats(cache_dir)
    assert stats.entries == 2 and stats.corrupt_files == [str(aside)]
    assert prune_cache(cache_dir, model="nobody").removed == [str(aside)]


def test_read_only_mode_reports_a_corrupt_entry_and_leaves_it(
    recorded: tuple[Path, Path, Path],
) -> None:
    cache_dir, one, _ = recorded
    one.write_bytes(b"\xff")
    with pytest.raises(CacheCorruptError, match="not UTF-8"):
        _fresh(cache_dir, CacheMode.READ_ONLY).complete(_request("one"))
    assert one.read_bytes() == b"\xff"
    assert not list(one.parent.glob("*.corrupt-*"))


def test_io_problems_are_clear_cache_errors(
    recorded: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    cache_dir, one, _ = recorded
    one.unlink()
    one.mkdir()
    with pytest.raises(CacheError, match="cannot be read"):
        _fresh(cache_dir).complete(_request("one"))
    a_file = tmp_path / "file"
    a_file.write_text("x", encoding="utf-8")
    with pytest.raises(CacheError, match="is a file"):
        _fresh(a_file)
    with pytest.raises(CacheError, match="is a file"):
        cache_stats(a_file)


# --- item 11: permissions follow the umask; secrets redacted everywhere ------------------------


@pytest.mark.parametrize("umask", [0o077, 0o027, 0o002])
def test_new_memory_stores_follow_the_umask(tmp_path: Path, umask: int) -> None:
    old = os.umask(umask)
    try:
        store = JsonFileStorage(tmp_path / "m" / "memory.json")
        store.save(store.load())
        atomic_write_text(tmp_path / "report.md", "x")
        assert default_file_mode() == 0o666 & ~umask
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "m" / "memory.json").stat().st_mode) == 0o666 & ~umask
    assert stat.S_IMODE((tmp_path / "report.md").stat().st_mode) == 0o666 & ~umask


def test_redact_removes_headers_and_secret_values_only() -> None:
    secret = "sk-live-0123456789abcdef"
    text = f'Authorization: Bearer {secret} {{"api_key": "{secret}"}} x-api-key=abcdefgh123'
    cleaned = redact_text(text, [secret])
    assert secret not in cleaned and "abcdefgh123" not in cleaned
    assert cleaned.count(REDACTED) == 3
    prose = "authorization: pending; my api key is lost; cookie: chocolate"
    assert redact_text(prose, []) == prose
    record = {"reply": f"echo {secret}", "n": 1}
    assert redact(record, [secret]) == {"reply": f"echo {REDACTED}", "n": 1}
    assert redact({"ok": "x"}, [secret]) == {"ok": "x"}


def test_secrets_echoed_by_a_server_reach_no_run_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-test-abcdefghijklmnop"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    echo = f"Echo of your request headers: Authorization: Bearer {secret}; X-Api-Key: {secret}"
    backend = marker_backend({"[leak]": echo, "[ok]": update("Likes tea")})
    owner = {
        "user_id": "u1",
        "sessions": [
            one_turn("t1", T0, "hello [leak]"),
            one_turn("t2", T0 + timedelta(days=1), "tea [ok]"),
        ],
    }
    dataset = tmp_path / "d.jsonl"
    write_owners(dataset, [owner])
    run = sweep(
        dataset,
        Grid.from_mapping({"name": "leak", "replay_mode": "per_session"}),
        runs_dir=tmp_path / "runs",
        backend_factory=lambda spec: backend,
        cache_dir=tmp_path / "cache",
        progress=False,
    )
    assert run.calls["reply"].str.contains("REDACTED").any()  # the failed reply is kept
    written = [p for root in (tmp_path / "runs", tmp_path / "cache") for p in root.rglob("*")]
    leaking = [p for p in written if p.is_file() and secret in p.read_text("utf-8", "replace")]
    assert leaking == []


# --- item 8: Markdown escaping -----------------------------------------------------------------

LINK = "[click](javascript:alert(1))"
IMAGE = "![](http://tracker.example/p.png)"


def test_md_escape_makes_markup_inert() -> None:
    mistune = pytest.importorskip("mistune")
    render = mistune.create_markdown(plugins=["table", "url", "strikethrough"])
    for text in (LINK, IMAGE, "<img src=x onerror=alert(1)>", "see https://evil.example", "*b*"):
        html = render(md_escape(text))
        assert "<a " not in html and "<img" not in html and "<em>" not in html, html
    assert md_escape("fact_confidence_threshold") == "fact_confidence_threshold"
    assert md_escape("a\n# heading") == "a # heading"  # one line: "#" starts nothing here
    assert md_escape("# heading") == "\\# heading" and md_escape("1. x") == "1\\. x"
    assert md_escape("0.7 (t >= 0.5)") == "0.7 (t >= 0.5)"
    block = md_code_block("x\n````\ny")
    assert block[0] == block[-1] == "`````"


def test_summary_escapes_title_and_data(tmp_path: Path) -> None:
    mistune = pytest.importorskip("mistune")
    backend = marker_backend({"[s]": f"not json {LINK} {IMAGE}"})
    owner = {"user_id": "u1", "sessions": [one_turn("t1", T0, f"hi [s] {LINK} {IMAGE}")]}
    dataset = tmp_path / "d.jsonl"
    write_owners(dataset, [owner])
    run = sweep_scripted(
        dataset, {"name": "md", "replay_mode": "per_session"}, backend, tmp_path / "runs"
    )
    paths = build_report([run], tmp_path / "report", title=f"Report {LINK} {IMAGE} <b>x</b>")
    markdown = paths.markdown.read_text("utf-8")
    html = mistune.create_markdown(plugins=["table", "url", "strikethrough"])(markdown)
    assert "<a " not in html and "<img" not in html and "<b>" not in html
    assert markdown.splitlines()[0].startswith("# Report \\[click\\]")


# --- item 9: LoCoMo shapes ---------------------------------------------------------------------


def _locomo(tmp_path: Path, data: Any) -> Path:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_an_observation_given_as_a_string_is_an_error(tmp_path: Path) -> None:
    sample = locomo_sample()
    sample["observation"]["session_1_observation"]["Ann"] = ["Ann lives in Lisbon"]
    with pytest.raises(LocomoFormatError, match=r"Ann\[0\]: expected a \[text, evidence\]"):
        convert_locomo(_locomo(tmp_path, [sample]))
    sample["observation"]["session_1_observation"]["Ann"] = "Ann lives in Lisbon"
    with pytest.raises(LocomoFormatError, match="expected a list"):
        convert_locomo(_locomo(tmp_path, [sample]))


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda s: s["conversation"]["session_1"].append("hello"), "expected a turn object"),
        (lambda s: s.update(observation=["x"]), "observation: expected an object"),
        (
            lambda s: s["conversation"]["session_1"][0].update(blip_caption="c", img_url=7),
            "img_url: expected a URL",
        ),
        (lambda s: s["conversation"].update(speaker_b="Ann"), "both speakers"),
        (lambda s: s["conversation"].update(speaker_a=""), "speaker_a: expected a non-empty"),
        (lambda s: s["conversation"]["session_1"][0].update(text=5), "text: expected a string"),
        (lambda s: s.update(sample_id=None), "sample_id"),
    ],
    ids=["turn", "observations", "img_url", "speakers", "empty speaker", "text", "sample id"],
)
def test_malformed_locomo_shapes_are_errors(tmp_path: Path, mutate: Any, expected: str) -> None:
    sample = locomo_sample()
    mutate(sample)
    with pytest.raises(LocomoFormatError, match=r"locomo\.json") as info:
        convert_locomo(_locomo(tmp_path, [sample]))
    assert expected in str(info.value)
    assert len(str(info.value)) < 400


def test_duplicate_sample_ids_write_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    with pytest.raises(LocomoFormatError, match="duplicate sample id"):
        import_locomo(_locomo(tmp_path, [locomo_sample(), locomo_sample()]), out)
    assert not out.exists()


def test_out_may_not_be_the_source(tmp_path: Path) -> None:
    source = _locomo(tmp_path, [locomo_sample()])
    before = source.read_bytes()
    link = tmp_path / "link.json"
    link.symlink_to(source)
    for dest in (source, tmp_path / "." / "locomo.json", link):
        with pytest.raises(LocomoFormatError, match="source file"):
            import_locomo(source, dest)
    assert source.read_bytes() == before


def test_imported_ids_are_safe_file_names(tmp_path: Path) -> None:
    sample = locomo_sample(**{"conversation.speaker_b": "B/../b"})
    sample["sample_id"] = "../conv 1"
    sample["conversation"]["session_1"][1]["speaker"] = "B/../b"
    out = tmp_path / "out.jsonl"
    import_locomo(_locomo(tmp_path, [sample]), out)
    assert validate_dataset(out) == []
    ids = [json.loads(line)["user_id"] for line in out.read_text("utf-8").splitlines()]
    assert all("/" not in i and not i.startswith(".") for i in ids) and len(set(ids)) == 2


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "Authorization",
                "AUTHORIZATION",
                "authorİzation",
                "Proxy-Authorization",
                "X-Api-Key",
                "API_KEY",
                "api-Key",
                "apı_key",
                ": ",
                "=",
                '"',
                "'",
                " ",
                "Bearer ",
                "basic ",
                "sk-0123456789",
                "abcdefgh",
                "é",
                "\\",
                "\n",
                "token",
            ]
        ),
        max_size=12,
    ).map("".join)
)
def test_redacting_headers_skips_the_search_only_where_it_cannot_match(text: str) -> None:
    """The word check before the header regexes changes no result (ASCII or not)."""
    expected = text
    for header in redact_module._HEADERS:
        expected = header.sub(lambda m: f"{m['name']}{m['sep']}{REDACTED}", expected)
    assert redact_text(text, []) == expected


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


_NESTED = st.recursive(
    st.none() | st.integers(),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=2), children)
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(_NESTED, st.integers(min_value=0, max_value=6))
def test_nesting_path_finds_exactly_the_values_nested_too_deep(value: Any, limit: int) -> None:
    path = nesting_path(value, limit)
    assert (path is None) == (_depth(value) <= limit)
    if path is not None:  # the path leads to a container at level limit + 1
        node = value
        for step in path:
            node = node[step]
        assert isinstance(node, dict | list) and len(path) == limit
