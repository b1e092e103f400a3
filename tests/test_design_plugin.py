"""A third-party memory design is one package: ``tests/plugins/memlab-raw-turns``.

The package holds a memory design (``raw-turns``: every turn kept verbatim, the top-k turns
by lexical relevance read), a QA judge prompt (``same-words``), an injection policy
(``oldest-first``) and a QA condition (``first-fact``: the memory cut to its first fact).
The fixture installs it the way an installer does (the module, and a ``.dist-info`` whose
``entry_points.txt`` is the package's ``[project.entry-points]``) into a directory of its
own, so nothing outside this test sees it; ``memlab plugins`` and a simulated sweep with
memory QA then run in fresh processes that know the plugin only by its entry point. This is
the recipe of docs/architecture.md ("A new memory design").
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from memlab.datasets.registry import resolve_dataset
from memlab.grids.grid import Grid, GridError
from memlab.runs.run import load_run
from memlab.runs.rundir import RunDir
from memlab.sweeps.grid_check import check_grid

PLUGIN = Path(__file__).parent / "plugins" / "memlab-raw-turns"
OWNER, SESSIONS = "daniel", 5
TOP_K = 5  # the plugin's TOP_K, as its identity records it
KEEP_LAST = 12  # the design's option raw_turns.keep_last: the most turns kept
GRID = f"""name: raw
dataset: personas
owners: [{OWNER}]
max_sessions: {SESSIONS}
base:
  backend: "sim:careful"
  memory: raw-turns
  raw_turns: {{keep_last: {KEEP_LAST}}}
  injection_policy: oldest-first
qa:
  answer_backend: "sim:careful"
  judges: [same-words, strict]
  conditions: [memory, none, gold_memory, first-fact]
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The plugin installed into a directory of its own (module and dist-info)."""
    project = tomllib.loads((PLUGIN / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    root = tmp_path_factory.mktemp("site")
    shutil.copy(PLUGIN / "memlab_raw_turns.py", root)
    info = root / f"memlab_raw_turns-{project['version']}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n",
        encoding="utf-8",
    )
    points = project["entry-points"]["memlab.plugins"]
    lines = "".join(f"{name} = {value}\n" for name, value in points.items())
    (info / "entry_points.txt").write_text(f"[memlab.plugins]\n{lines}", encoding="utf-8")
    return root


def _memlab(site: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    paths = [str(site), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return subprocess.run(
        [sys.executable, "-m", "memlab", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(paths)},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


PLUGGED = (
    ("memory_design", "raw-turns"),
    ("judge_prompt", "same-words"),
    ("injection_policy", "oldest-first"),
    ("qa_condition", "first-fact"),
)


def test_memlab_plugins_lists_each_entry_of_the_plugin(site: Path, tmp_path: Path) -> None:
    origin = "[plugin raw-turns = memlab_raw_turns:register (memlab-raw-turns)]"
    for kind, name in PLUGGED:
        done = _memlab(site, "plugins", kind, cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        lines = {line.split()[0]: line for line in done.stdout.splitlines()[1:]}
        assert origin in lines[name]
    designs = _memlab(site, "plugins", "memory_design", cwd=tmp_path).stdout
    assert "deerflow" in designs and "tiered" in designs  # the built-ins, beside it
    conditions = _memlab(site, "plugins", "qa_condition", cwd=tmp_path).stdout
    assert "gold_memory" in conditions and "full_context" in conditions


def _dataset_owner() -> dict[str, object]:
    """The owner's record as the dataset file holds it (read without memlab)."""
    path = resolve_dataset("personas")
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["user_id"] == OWNER:
            return dict(record)
    raise AssertionError(f"{OWNER} is not in {path}")


def test_a_sweep_with_qa_replays_the_plugin_design_and_grades_with_its_judge(
    site: Path, tmp_path: Path
) -> None:
    (tmp_path / "grid.yaml").write_text(GRID, encoding="utf-8")
    done = _memlab(site, "sweep", "grid.yaml", "--no-progress", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    run = load_run(tmp_path / "runs" / "raw")
    [(lane_id, config)] = run.lanes.items()
    assert config.memory == "raw-turns"
    described = json.loads((run.path / "lanes" / lane_id / "config.json").read_text())
    assert described["config"]["memory"] == "raw-turns"
    assert described["config"]["raw_turns"] == {"keep_last": KEEP_LAST}  # the design's options
    assert described["identity"]["strategy"] == {
        "design": "raw-turns",
        "top_k": TOP_K,
        "keep_last": KEEP_LAST,
    }

    # The memory is the last KEEP_LAST raw turns the pipeline remembers: each human message
    # and each reply without tool calls, but for a message holding only an upload block and
    # its reply.
    owner = _dataset_owner()
    sessions = owner["sessions"][:SESSIONS]  # type: ignore[index]
    turns: list[dict[str, str]] = []
    upload_only = False
    for message in (m for s in sessions for m in s["messages"]):
        text = message["content"].strip()
        if message["role"] == "human":
            upload_only = text.startswith("<uploaded_files>") and text.endswith("</uploaded_files>")
            if not upload_only:
                turns.append(message)
        elif message["role"] == "ai" and not message.get("tool_calls"):
            if not upload_only and text:
                turns.append(message)
            upload_only = False
    record = RunDir(run.path).read_owner_record(lane_id, OWNER)
    assert record is not None
    facts = record["final_memory"]["facts"]
    assert len(turns) > KEEP_LAST
    kept = turns[-KEEP_LAST:]
    speakers = {"human": "User", "ai": "Assistant"}
    assert [f["content"] for f in facts] == [
        f"{speakers[t['role']]}: {t['content'].strip()}" for t in kept
    ]
    assert all(call.get("skipped") == "raw_turns_kept" for call in record["calls"])

    # Every question asked after a replayed session is answered under each condition and
    # graded by each judge, the plugin's among them.
    threads = {s["thread_id"] for s in sessions}
    asked = {q["id"] for q in owner["questions"] if q["after_session"] in threads}  # type: ignore[attr-defined]
    assert asked
    answers = run.qa_answers
    assert run.judges == ["same-words", "strict"]
    for condition in ("memory", "none", "gold_memory", "first-fact"):
        rows = answers[answers["condition"] == condition]
        assert sorted(rows["question_id"]) == sorted(asked)
    assert answers["error"].isna().all() and (answers["judge_errors"] == 0).all()
    # An abstention on an answerable question is wrong without a judge; every other answer
    # carries each judge's verdict.
    judged = answers[~(answers["abstained"] & (answers["kind"] == "answerable"))]
    assert len(judged) > 0
    for verdicts in judged["verdicts"]:
        assert set(verdicts) == {"same-words", "strict"}
        assert isinstance(verdicts["same-words"]["answer"], bool)
    memory = answers[answers["condition"] == "memory"]
    assert (memory["injected"].map(len) <= TOP_K).all()  # the design's read path
    assert (memory["injected"].map(len) > 0).any()

    # The plugin's condition: the memory at the question's point, cut to its first fact.
    snapshots = record["snapshots"]
    first = answers[answers["condition"] == "first-fact"]
    for index, injected in zip(first["session_index"], first["injected"], strict=True):
        facts_then = snapshots[index]["facts"]
        assert list(injected) == [f["id"] for f in facts_then[:1]]
    assert (first["injected"].map(len) == 1).any()

    # The plugin's policy: every injection audit offers the (design's top-k) facts to the
    # budget oldest first; the lexical order the design reads them in is not that.
    assert described["identity"]["injection"]["policy"] == {"name": "oldest-first"}
    created = {f["id"]: f["createdAt"] for snapshot in snapshots for f in snapshot["facts"]}
    spread = False
    for audit in (a for a in record["injections"] if a is not None):
        assert audit["policy"] == "oldest-first"
        offered = [created[i] for i in [*audit["injected"], *audit["dropped"]]]
        assert offered == sorted(offered)
        spread = spread or len(set(offered)) > 1
    assert spread


BAD_OPTIONS = [
    (
        "base:\n  memory: raw-turns\n  raw_turns: {keep_lst: 3}\n",
        ":4: base.raw_turns.keep_lst",
        "unknown key; known keys: keep_last",
    ),
    (
        "base: {memory: raw-turns}\naxes:\n  raw_turns: [{}, {keep_last: -1}]\n",
        ":4: axes.raw_turns[1].keep_last",
        "greater than or equal to 0",
    ),
    (
        "base:\n  raw_turns: {keep_last: 3}\n",
        ":3: base.raw_turns",
        "raw_turns options apply to memory: raw-turns only (this lane replays deerflow)",
    ),
    ("base:\n  raw_turn: {keep_last: 3}\n", ":3: base.raw_turn", "unknown setting"),
]


@pytest.mark.parametrize(("text", "where", "words"), BAD_OPTIONS)
def test_a_plugin_designs_options_are_checked_at_their_grid_key(
    site: Path, tmp_path: Path, text: str, where: str, words: str
) -> None:
    (tmp_path / "grid.yaml").write_text(f"name: bad\n{text}", encoding="utf-8")
    done = _memlab(site, "sweep", "grid.yaml", "--no-progress", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"grid.yaml{where}: " in done.stderr and words in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


LANES = """
import json
from memlab.grids.lane import LaneConfig
lanes = [{"memory": "raw-turns"}, {"memory": "raw-turns", "raw_turns": {}},
         {"memory": "raw-turns", "raw_turns": {"keep_last": 0}},
         {"memory": "raw-turns", "raw_turns": {"keep_last": 3}}]
configs = [LaneConfig.model_validate(lane) for lane in lanes]
print(json.dumps([[c.point_id, c.model_dump(mode="json"), c.settings()] for c in configs]))
"""


def test_a_lane_at_the_designs_default_options_is_written_as_if_it_had_none(
    site: Path, tmp_path: Path
) -> None:
    paths = [str(site), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    done = subprocess.run(
        [sys.executable, "-c", LANES],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(paths)},
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    (bare, empty, zero, three) = json.loads(done.stdout)
    assert bare[0] == empty[0] == zero[0] != three[0]  # point ids
    assert "raw_turns" not in bare[1] and bare[1] == empty[1] == zero[1]
    assert three[1]["raw_turns"] == {"keep_last": 3}
    # The design reads its options from the settings: {} at the defaults.
    assert bare[2]["raw_turns"] == {} and three[2]["raw_turns"] == {"keep_last": 3}


def test_a_lane_of_an_uninstalled_design_keeps_its_options_and_is_refused_when_run() -> None:
    # This process has not the plugin: a run replayed with it stays readable.
    base = {"memory": "raw-turns", "raw_turns": {"keep_last": 3}}
    grid = Grid.from_mapping({"name": "g", "base": base})
    [lane] = grid.lanes()
    assert lane.model_dump(mode="json")["raw_turns"] == {"keep_last": 3}
    assert lane.settings()["raw_turns"] == {"keep_last": 3}
    with pytest.raises(GridError, match=r"base\.memory: unknown memory design 'raw-turns'"):
        check_grid(grid)
