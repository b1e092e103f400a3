"""``memlab init ci``: the workflow validates against GitHub's workflow schema, runs what it
promises, and its gate tolerance is the MDE of the dataset's owners."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest
import yaml
from scipy import stats

from memlab.cli.main import main
from memlab.cli.tools.init import SPREAD


def workflow_schema() -> dict[str, object]:
    """GitHub's workflow schema as check-jsonschema vendors it (a dev dependency), read as a
    file: importing the package is not needed."""
    spec = importlib.util.find_spec("check_jsonschema")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("check-jsonschema is not installed (pip install -e '.[dev]')")
    root = Path(next(iter(spec.submodule_search_locations)))
    path = root / "builtin_schemas" / "vendor" / "github-workflows.json"
    return dict(json.loads(path.read_text(encoding="utf-8")))


def power(delta: float, owners: int, alpha: float = 0.05) -> float:
    """Power of a two-sided paired t test on ``owners`` owners whose delta spreads SPREAD."""
    df = owners - 1
    critical = stats.t.ppf(1 - alpha / 2, df)
    shift = delta / (SPREAD / math.sqrt(owners)) / math.sqrt(owners / df)
    return float(stats.nct.sf(critical, df, shift) + stats.nct.cdf(-critical, df, shift))


def steps(workflow: dict[str, object]) -> list[dict[str, str]]:
    jobs = workflow["jobs"]
    assert isinstance(jobs, dict)
    return list(jobs["memlab"]["steps"])


def test_workflow_is_valid_and_does_what_it_says(tmp_path: Path) -> None:
    import jsonschema

    out = tmp_path / ".github" / "workflows" / "memlab.yml"
    args = ["init", "ci", "--dataset", "personas", "--out", str(out), "--grid", "g.yaml"]
    assert main([*args, "--baseline", "runs/base", "--cache-dir", "nbcache"]) == 0
    text = out.read_text(encoding="utf-8")
    workflow = yaml.safe_load(text)
    jsonschema.validate(workflow, workflow_schema())
    runs = "\n".join(step.get("run", "") for step in steps(workflow))
    assert "pytest --nbval" in runs
    assert "memlab sweep g.yaml --cache-dir nbcache --cache-mode read_only" in runs
    assert 'summary.md >> "$GITHUB_STEP_SUMMARY"' in runs
    gate = next(s["run"] for s in steps(workflow) if s.get("run", "").startswith("memlab gate"))
    assert "--baseline runs/base" in gate and "--no-significant-regression" in gate
    tolerance = float(gate.split("--tolerance")[1].split()[0])
    # personas has 14 owners: the tolerance is the smallest whole point with the power the
    # MDE promises (88%: 80% with memlab's margin for a two-test verdict).
    assert power(tolerance, 14) >= 0.88 > power(tolerance - 0.01, 14)
    assert f"--tolerance {tolerance:g}" in text.split("name: memlab")[0]  # the comment says why


def test_refuses_to_overwrite_without_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "memlab.yml"
    out.write_text("mine\n", encoding="utf-8")
    args = ["init", "ci", "--dataset", "personas", "--out", str(out)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--force" in err
    assert out.read_text(encoding="utf-8") == "mine\n"
    assert main([*args, "--force"]) == 0
    assert out.read_text(encoding="utf-8").startswith("# memlab")


def test_tolerance_follows_the_grids_owners_and_too_few_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    grid = tmp_path / "g.yaml"
    out = tmp_path / "w.yml"
    grid.write_text("name: g\ndataset: personas\nmax_owners: 10\n", encoding="utf-8")
    assert main(["init", "ci", "--grid", str(grid), "--out", str(out)]) == 0
    gate = next(
        s["run"] for s in steps(yaml.safe_load(out.read_text())) if "gate" in s.get("run", "")
    )
    tolerance = float(gate.split("--tolerance")[1].split()[0])
    assert power(tolerance, 10) >= 0.88 > power(tolerance - 0.01, 10)
    # 5 owners: the sign-flip test's smallest p-value is 2/32 > 0.05, nothing can be detected.
    grid.write_text("name: g\ndataset: personas\nmax_owners: 5\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["init", "ci", "--grid", str(grid), "--out", str(tmp_path / "x.yml")]) == 2
    err = capsys.readouterr().err
    assert "5 owner(s)" in err and err.count("\n") == 1
    assert not (tmp_path / "x.yml").exists()
