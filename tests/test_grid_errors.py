"""Bad grids fail when loaded, before any replay: exit 2, one line naming the file, the line
and the key path, with the known choices; prompt files from grids and the command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from memlab.cli.main import main

GOOD_TEMPLATE = "Memory:\n{current_memory}\nConversation:\n{conversation}\nJSON only.\n"

# (grid file text, expected "line: key" or key, expected words in the message)
BAD_GRIDS: list[tuple[str, str, str]] = [
    ("name: g\naxes:\n  prompt: [default, mnie]\n", ":3: axes.prompt[1]", "known prompts: default"),
    ("name: g\nbase:\n  prompt: nope\n", ":3: base.prompt", "unknown prompt 'nope'"),
    ("name: g\nbase:\n  merge: fancy\n", ":3: base.merge", "known strategies"),
    ("name: g\naxes:\n  merge: [baseline, fancy]\n", ":3: axes.merge[1]", "known strategies"),
    (
        "name: g\nbase:\n  merge: near_duplicate\n  merge_params: {sim: 0.9}\n",
        ":4: base.merge_params",
        "bad parameters",
    ),
    ("name: g\nbase:\n  backend: 'gpt:4'\n", ":3: base.backend", "known prefixes"),
    ("name: g\naxes:\n  backend: [scripted, 'nope:x']\n", ":3: axes.backend[1]", "known prefixes"),
    ("name: g\nbase:\n  output_mode: xml\n", ":3: base.output_mode", "free"),
    ("name: g\naxes:\n  parse: [default, loose]\n", ":3: axes.parse[1]", "strict_only"),
    (
        "name: g\naxes:\n  memory: [deerflow, tierd]\n",
        ":3: axes.memory[1]",
        "unknown memory design 'tierd'; known designs: deerflow, tiered, procedural",
    ),
    ("name: g\nbase:\n  memory: 3\n", ":3: base.memory", "string"),
    (
        "name: g\nqa:\n  answer_backend: scripted\n  conditions: [memory, psychic]\n",
        ":4: qa.conditions",
        "unknown condition 'psychic'; conditions: memory, none, full_context, gold_memory",
    ),
    (
        "name: g\naxes:\n  injection_policy: [recency, newest]\n",
        ":3: axes.injection_policy[1]",
        "unknown injection policy 'newest'; known policies: confidence, recency, relevance, "
        "relevance_embeddings",
    ),
    (
        "name: g\nbase:\n  memory: tiered\n  tiered: {importance_treshold: 0.6}\n",
        ":4: base.tiered.importance_treshold",
        "known keys: working_tokens, summary_tokens, importance_threshold",
    ),
    (
        "name: g\nbase:\n  memory: tiered\n  tiered:\n    recall_k: many\n",
        ":5: base.tiered.recall_k",
        "valid integer",
    ),
    (
        "name: g\nbase: {memory: tiered}\naxes:\n  tiered: [{}, {decay_per_day: 2}]\n",
        ":4: axes.tiered[1].decay_per_day",
        "less than 1",
    ),
    ("name: g\nbase:\n  tiered: {recall_k: 5}\n", ":3: base.tiered", "memory: tiered only"),
    ("name: g\nprompts: [missing.txt]\n", ":2: prompts[0]", "does not exist"),
    ("name: g\nprompts: [noconv.txt]\n", ":2: prompts[0]", "{conversation}"),
    ("name: g\nbase:\n  max_facts: many\n", ":3: base.max_facts", "integer"),
    ("name: g\nbase:\n  max_facts: 5\n", ":3: base.max_facts", "greater than or equal to 10"),
    ("name: g\naxes:\n  max_facts: 100\n", ":3: axes.max_facts", "list"),
    ("name: g\ncolour: red\n", ":2: colour", "unknown key"),
    ("name: g\nbase:\n  colour: red\n", ":3: base.colour", "unknown setting"),
    ("name: g\naxes:\n  colour: [red]\n", ":3: axes.colour", "unknown axis"),
    ("name: g\ndataset: nowhere.jsonl\n", ":2: dataset", "nowhere.jsonl"),
    ("name: ../../escape\n", ":1: name", "cannot be a directory name"),
    ("name: ''\n", ":1: name", "cannot be a directory name"),
    ("name: g\naxes: [1, 2]\n", ":2: axes", "dictionary"),
    ("- just\n- a list\n", "", "mapping at the top level"),
    ("name: g\naxes: {prompt: [default\n", "", "not valid YAML"),
]


@pytest.mark.parametrize(("text", "where", "words"), BAD_GRIDS)
def test_bad_grid_exits_2_with_one_located_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, where: str, words: str
) -> None:
    (tmp_path / "noconv.txt").write_text("Memory: {current_memory}\n", encoding="utf-8")
    grid = tmp_path / "grid.yaml"
    grid.write_text(text, encoding="utf-8")
    code = main(["sweep", str(grid), "--runs-dir", str(tmp_path / "runs"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith(f"error: {grid}{where}")
    assert words in err
    assert err.count("\n") == 1 and len(err) < 700
    assert not (tmp_path / "runs").exists()  # nothing was written


def test_no_traceback_from_the_command(tmp_path: Path) -> None:
    grid = tmp_path / "grid.yaml"
    grid.write_text("name: g\nbase:\n  merge: fancy\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "memlab", "sweep", str(grid), "--runs-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert f"{grid}:3: base.merge: unknown merge strategy 'fancy'" in done.stderr


def test_grid_prompt_files_run_through_memlab_sweep(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "mine.txt").write_text(GOOD_TEMPLATE, encoding="utf-8")
    grid = tmp_path / "grid.yaml"
    grid.write_text(
        json.dumps(
            {
                "name": "mine",
                "dataset": "smoke",
                "prompts": ["prompts/mine.txt"],
                "base": {"backend": "scripted"},
                "axes": {"prompt": ["default", "mine"]},
            }
        ),
        encoding="utf-8",
    )
    code = main(["sweep", str(grid), "--runs-dir", str(tmp_path / "runs"), "--no-progress"])
    out = capsys.readouterr().out
    assert code == 0
    assert "prompt=mine" in out and "prompt=default" in out
    assert "new (2)" in out  # lane status: both smoke owners replayed, because new
    lanes = sorted(p.name for p in (tmp_path / "runs" / "mine" / "lanes").iterdir())
    assert [lane.split("-")[0] for lane in lanes] == ["default", "mine"]


def test_run_takes_a_prompt_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prompt = tmp_path / "mine.txt"
    prompt.write_text(GOOD_TEMPLATE, encoding="utf-8")
    code = main(
        [
            "run",
            "smoke",
            "--prompt",
            str(prompt),
            "--backend",
            "scripted",
            "--runs-dir",
            str(tmp_path / "runs"),
            "--no-progress",
        ]
    )
    assert code == 0
    info = json.loads(next((tmp_path / "runs" / "run" / "lanes").glob("*/config.json")).read_text())
    assert info["prompt"]["name"] == "mine"
    assert info["prompt"]["template"] == GOOD_TEMPLATE
    assert "prompt" in capsys.readouterr().out


def test_sweep_adds_prompt_files_from_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prompt = tmp_path / "extra.txt"
    prompt.write_text(GOOD_TEMPLATE, encoding="utf-8")
    grid = tmp_path / "grid.yaml"
    grid.write_text("name: x\nbase: {backend: scripted}\naxes: {prompt: [extra]}\n")
    args = ["sweep", str(grid), "--runs-dir", str(tmp_path / "runs"), "--no-progress"]
    assert main(args) == 2
    assert "unknown prompt 'extra'" in capsys.readouterr().err
    assert main([*args, "--prompts", str(prompt)]) == 0


def test_run_scores_with_the_matcher_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["run", "smoke", "--runs-dir", str(tmp_path / "runs"), "--no-progress"]
    assert main([*args, "--name", "lex", "--matcher", "lexical"]) == 0
    environment = json.loads((tmp_path / "runs" / "lex" / "environment.json").read_text())
    assert environment["matcher"]["name"] == "lexical"
    assert main([*args, "--name", "bad", "--matcher", "nope"]) == 2
    assert "unknown matcher 'nope'" in capsys.readouterr().err
