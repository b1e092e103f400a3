"""The default matcher with and without word embeddings is two matchers by name.

``default`` blends in the bundled word embeddings (``memlab[embeddings]``); on an install
without them (the demo's ``.[local,notebooks]``) the same call builds ``default-lexical``,
which reads some pairs differently. A run records the one that scored it, a comparison of a
run of each is refused as a different matcher, and a run read again on the other install
says which matcher it uses instead. The install without the extra is simulated the way
``tests/without_extras`` does for the notebooks: ``import wordllama`` fails.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from pathlib import Path

import pytest

from memlab.cli.main import main
from memlab.grids.grid import Grid
from memlab.matching.embeddings import WordLlamaEmbedder
from memlab.matching.matchers import default_matcher, resolve_matcher
from memlab.postrun.qa_step import run_matcher
from memlab.runs.run import Run, load_run
from memlab.scoring.comparing.comparability import MixedComparisonError
from memlab.scoring.comparing.comparison import compare
from memlab.sweeps.driver import sweep

# The run without the extra is the candidate: named first, with its matcher first.
DIFFERENT = (
    "without-embeddings: [simulated] default vs with-embeddings: [simulated] default: "
    "different matcher: default-lexical vs default"
)


@pytest.fixture
def without_embeddings(monkeypatch: pytest.MonkeyPatch) -> None:
    """``import wordllama`` fails and no model loaded earlier is reused."""
    monkeypatch.setitem(sys.modules, "wordllama", None)
    monkeypatch.setattr(WordLlamaEmbedder, "_models", {})


def _run(runs_dir: Path, name: str) -> Run:
    grid = {"name": name, "max_owners": 3, "max_sessions": 2, "base": {"backend": "sim:careful"}}
    return sweep("personas", Grid.from_mapping(grid), runs_dir=runs_dir, progress=False)


@pytest.mark.usefixtures("without_embeddings")
def test_without_the_extra_the_default_is_recorded_as_default_lexical(tmp_path: Path) -> None:
    assert resolve_matcher("default").name == "default-lexical"  # type: ignore[attr-defined]
    run = _run(tmp_path, "lexical")
    assert run.environment["matcher"]["name"] == "default-lexical"
    on_disk = json.loads((run.path / "environment.json").read_text(encoding="utf-8"))
    assert on_disk["matcher"]["name"] == "default-lexical"


def test_a_run_scored_by_default_read_without_the_extra_says_what_it_uses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    run = _run(tmp_path, "recorded")
    environment = run.path / "environment.json"
    data = json.loads(environment.read_text(encoding="utf-8"))
    data["matcher"]["name"] = "default"  # as a run made with the extra records it
    environment.write_text(json.dumps(data), encoding="utf-8")
    monkeypatch.setitem(sys.modules, "wordllama", None)
    monkeypatch.setattr(WordLlamaEmbedder, "_models", {})
    with caplog.at_level(logging.WARNING, logger="memlab.postrun.qa_step"):
        matcher = run_matcher(load_run(run.path))
    assert matcher.name == "default-lexical"  # type: ignore[attr-defined]
    warned = [r.getMessage() for r in caplog.records if r.name == "memlab.postrun.qa_step"]
    assert len(warned) == 1
    assert "scored by matcher 'default'" in warned[0] and "using 'default-lexical'" in warned[0]


@pytest.mark.needs_embeddings
def test_runs_with_and_without_the_extra_are_not_compared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert default_matcher().name == "default"
    full = _run(tmp_path, "with-embeddings")
    assert full.environment["matcher"]["name"] == "default"
    with monkeypatch.context() as patch:
        patch.setitem(sys.modules, "wordllama", None)
        patch.setattr(WordLlamaEmbedder, "_models", {})
        lexical = _run(tmp_path, "without-embeddings")
    assert lexical.environment["matcher"]["name"] == "default-lexical"
    with pytest.raises(MixedComparisonError, match=re.escape(DIFFERENT)):
        compare(full, lexical)
    assert main(["compare", str(full.path), str(lexical.path)]) == 2
    assert DIFFERENT in capsys.readouterr().err
    gate = ["gate", str(lexical.path), "--baseline", str(full.path)]
    assert main([*gate, "--no-significant-regression"]) == 2
    assert DIFFERENT in capsys.readouterr().err
    table = compare(full, lexical, allow_mixed=True, metrics=["recall"])
    assert len(table) == 1
