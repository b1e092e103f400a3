"""Edit a prompt (or any other input of a replay), rerun into the same run: only what changed
is replayed, the call rows carry the new prompt, and the run says why."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from builders import marker_backend, one_turn, update

from memlab.backends.scripted import ScriptedBackend
from memlab.runs.run import load_run
from memlab.sweeps.driver import sweep
from memlab.sweeps.plan import identity_changes, load_grid

T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
DAY = timedelta(days=1)

TEMPLATE = (
    "You manage the memory of one user. Version {version}.\n"
    "Memory:\n{current_memory}\n\nConversation:\n{conversation}\n\nReply with JSON only.\n"
)


def owners() -> list[dict[str, Any]]:
    return [
        {
            "user_id": user,
            "sessions": [
                one_turn(f"{user}-1", T0, f"I live in {city}."),
                one_turn(f"{user}-2", T0 + DAY, "I like tea."),
            ],
        }
        for user, city in (("ann", "Leeds"), ("bob", "Porto"))
    ]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "prompts").mkdir()
    set_version(tmp_path, "A")
    data = "".join(json.dumps(o) + "\n" for o in owners())
    (tmp_path / "data.jsonl").write_text(data, encoding="utf-8")
    write_grid(tmp_path)
    return tmp_path


def write_grid(root: Path, **base: Any) -> Path:
    grid = {
        "name": "loop",
        "dataset": "data.jsonl",
        "prompts": ["prompts/mine.txt"],
        "base": {"backend": "scripted", **base},
        "axes": {"prompt": ["default", "mine"]},
    }
    path = root / "grid.yaml"
    path.write_text(json.dumps(grid), encoding="utf-8")
    return path


REPLIES = {"Leeds": update("Lives in Leeds"), "Porto": update("Lives in Porto")}


def run_sweep(root: Path, backend: ScriptedBackend | None = None) -> tuple[Any, ScriptedBackend]:
    backend = backend or marker_backend(REPLIES)
    grid = load_grid(root / "grid.yaml")
    run = sweep(
        grid.dataset,
        grid,
        runs_dir=root / "runs",
        backend_factory=lambda spec: backend,
        progress=False,
    )
    return run, backend


def status(run: Any) -> dict[str, tuple[int, int, str]]:
    table = run.lane_status
    return {
        row["label"]: (int(row["reused"]), int(row["replayed"]), row["why"])
        for _, row in table.iterrows()
    }


def set_version(root: Path, version: str) -> None:
    text = TEMPLATE.replace("{version}", version)
    (root / "prompts" / "mine.txt").write_text(text, encoding="utf-8")


def test_unchanged_rerun_reuses_every_replay(workspace: Path) -> None:
    first, backend = run_sweep(workspace)
    assert backend.call_count == 8  # 2 lanes x 2 owners x 2 sessions
    assert status(first) == {"prompt=default": (0, 2, "new (2)"), "prompt=mine": (0, 2, "new (2)")}
    again, backend_again = run_sweep(workspace)
    assert backend_again.call_count == 0
    assert status(again) == {"prompt=default": (2, 0, ""), "prompt=mine": (2, 0, "")}
    assert list(again.lanes) == list(first.lanes)


@pytest.mark.parametrize("version", ["B", "two-and-more"], ids=["same-length", "longer"])
def test_an_edited_prompt_file_replays_its_lane_with_the_new_text(
    workspace: Path, version: str
) -> None:
    first, _ = run_sweep(workspace)
    set_version(workspace, version)
    second, backend = run_sweep(workspace)
    assert backend.call_count == 4  # only the "mine" lane, both owners
    assert all(f"Version {version}." in prompt for prompt in backend.prompts)
    assert status(second) == {
        "prompt=default": (2, 0, ""),
        "prompt=mine": (0, 2, "prompt text changed (2)"),
    }
    mine_before = next(i for i in first.lanes if i.startswith("mine-"))
    mine_after = next(i for i in second.lanes if i.startswith("mine-"))
    assert mine_before != mine_after  # the lane id is content-addressed
    calls = second.calls
    new_rows = calls[calls["lane_id"] == mine_after]
    old_rows = first.calls[first.calls["lane_id"] == mine_before]
    assert len(new_rows) == 4
    assert set(new_rows["prompt_sha256"]).isdisjoint(set(old_rows["prompt_sha256"]))
    if version == "B":
        assert sorted(new_rows["prompt_chars"]) == sorted(old_rows["prompt_chars"])
    assert second.lane_info(mine_after)["prompt"]["template"].count(f"Version {version}.") == 1
    # The loaded run is the new one: the old lane is not part of it.
    assert list(load_run(second.path).lanes) == list(second.lanes)


def test_changed_merge_and_generation_parameters_replay_and_say_why(workspace: Path) -> None:
    run_sweep(workspace)
    write_grid(workspace, merge="near_duplicate", merge_params={"similarity": 0.9})
    merged, backend = run_sweep(workspace)
    assert backend.call_count == 8
    assert set(status(merged).values()) == {(0, 2, "merge strategy or parameters changed (2)")}
    write_grid(workspace, merge="near_duplicate", merge_params={"similarity": 0.95})
    reparam, _ = run_sweep(workspace)
    assert set(status(reparam).values()) == {(0, 2, "merge strategy or parameters changed (2)")}
    write_grid(workspace, merge="near_duplicate", merge_params={"similarity": 0.95}, max_tokens=99)
    regen, _ = run_sweep(workspace)
    assert set(status(regen).values()) == {(0, 2, "generation parameters changed (2)")}


def test_a_dataset_edit_replays_only_the_edited_owner(workspace: Path) -> None:
    run_sweep(workspace)
    edited = owners()
    edited[1]["sessions"][1]["messages"][0]["content"] = "I like coffee."
    data = "".join(json.dumps(o) + "\n" for o in edited)
    (workspace / "data.jsonl").write_text(data, encoding="utf-8")
    run, backend = run_sweep(workspace)
    assert backend.call_count == 4  # bob under both lanes
    assert set(status(run).values()) == {(1, 1, "owner data changed (1)")}


def test_a_different_backend_model_replays_and_says_why(workspace: Path) -> None:
    def scripted(model: str) -> ScriptedBackend:
        return ScriptedBackend(function=marker_backend(REPLIES)._function, model=model)  # type: ignore[arg-type]

    run_sweep(workspace, scripted("m1"))
    run, backend = run_sweep(workspace, scripted("m2"))
    assert backend.call_count == 8
    assert set(status(run).values()) == {(0, 2, "backend model changed (2)")}


def test_a_local_model_is_identified_by_its_file_content(tmp_path: Path) -> None:
    from memlab.backends.identity import backend_identity
    from memlab.backends.local.llama_local import LocalLlamaBackend

    path = tmp_path / "tiny.gguf"
    path.write_bytes(b"GGUF" + b"\x00" * 60)
    first = backend_identity(LocalLlamaBackend(path))
    path.write_bytes(b"GGUF" + b"\x01" * 60)  # same name, same size, other weights
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000))
    second = backend_identity(LocalLlamaBackend(path))
    assert first["model_bytes"] == second["model_bytes"] == 64
    assert first["model_sha256"] != second["model_sha256"]
    assert identity_changes({"backend": first}, {"backend": second}) == ["backend model changed"]


def test_report_shows_the_prompt_diff_beside_the_lanes_deltas(workspace: Path) -> None:
    from memlab.reporting.report import build_report

    first, _ = run_sweep(workspace)
    set_version(workspace, "<b>B</b>")
    # Replies differ by prompt text: the edited prompt stores nothing for Leeds.
    replies = {"Version <b>B</b>": update(), **REPLIES}
    second, _ = run_sweep(workspace, marker_backend(replies))
    paths = build_report([first, second], workspace / "report")
    html = paths.html.read_text(encoding="utf-8")
    md = paths.markdown.read_text(encoding="utf-8")
    sha_a = first.prompt_sha(next(i for i in first.lanes if i.startswith("mine-")))
    sha_b = second.prompt_sha(next(i for i in second.lanes if i.startswith("mine-")))
    assert sha_a != sha_b
    # Configuration table: each prompt's short hash; same-name prompts get it in the label.
    assert f"prompt=mine [mine {sha_a}]" in html and f"prompt=mine [mine {sha_b}]" in html
    assert "<h2>Prompt changes</h2>" in html
    # The edited prompt's lane is diffed against its predecessor; the diff is escaped.
    assert "+You manage the memory of one user. Version &lt;b&gt;B&lt;/b&gt;." in html
    assert "<b>B</b>" not in html
    assert "## Prompt changes" in md and "```diff" in md
    heading = f"### loop: prompt=mine \\[mine {sha_b}\\]"  # labels are Markdown-escaped
    assert heading in md
    section = md.split("## Prompt changes")[1]
    block = section.split(heading)[1]
    # The edit is diffed against the earlier version of the same prompt file, not against
    # the default prompt of the first lane.
    assert "Against loop: prompt=mine: final facts -2, tokens / update -" in block
    assert f"--- mine ({sha_a}" in block and f"+++ mine ({sha_b}" in block
