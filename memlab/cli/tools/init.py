"""``memlab init ci``: write a ready CI workflow (GitHub Actions) for a project using memlab.

The workflow installs memlab, runs the notebooks under nbval, replays the grid from the
committed response cache in read-only mode (a prompt never recorded fails instead of calling a
model), gates the run against a committed baseline run with a ``--tolerance`` sized to the
dataset's owners, and appends the report's Markdown summary to the job summary.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

from memlab.errors import MemlabError

__all__ = ["COMMANDS", "SPREAD", "InitError", "register", "tolerance_for", "workflow_text"]


class InitError(MemlabError, ValueError):
    """A project file cannot be written as asked (``path``: the file or input at fault)."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path


COMMANDS: dict[str, str] = {
    "init": "write project files: 'memlab init ci' writes a CI workflow (GitHub Actions)",
}
"""The commands this module adds, with their line in `memlab --help`."""

SPREAD = 0.25
"""The per-owner standard deviation of a rate's paired delta the tolerance is sized for (a
rate's own spread across owners is at most 0.5; paired deltas of two prompts on the same owners
spread less). The gate measures the real spread and says when its MDE is larger."""

_EXAMPLE = """examples:
  memlab init ci --grid grids/nightly.yaml --baseline runs/baseline --cache-dir cache
  memlab init ci --dataset personas --out ci/memlab.yml --force
"""


def register(subparsers: Any) -> None:
    """Add the ``init`` command and its ``ci`` sub-command."""
    p = subparsers.add_parser(
        "init",
        help=COMMANDS["init"],
        description="Write project files for memlab.",
        epilog=_EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="what", metavar="WHAT", required=True)
    ci = sub.add_parser(
        "ci",
        help="a GitHub Actions workflow: notebooks under nbval, the sweep from the committed "
        "cache (read-only), the gate against a baseline run, the summary as the job summary",
        description="Write a GitHub Actions workflow that installs memlab, runs the notebooks "
        "under nbval, replays GRID from the committed response cache in read-only mode, gates "
        "the run against the committed BASELINE run with a --tolerance sized to the dataset's "
        "owners, and appends the report's summary.md to the job summary.",
        epilog=_EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ci.add_argument(
        "--out",
        default=".github/workflows/memlab.yml",
        help="where to write the workflow (default: .github/workflows/memlab.yml)",
    )
    ci.add_argument("--force", action="store_true", help="overwrite an existing file")
    ci.add_argument(
        "--grid", default="grid.yaml", help="the grid file CI sweeps (default: grid.yaml)"
    )
    ci.add_argument(
        "--dataset",
        help="the dataset whose owners size the tolerance (default: the grid's dataset)",
    )
    ci.add_argument(
        "--baseline",
        default="runs/baseline",
        help="the committed baseline run directory (default: runs/baseline)",
    )
    ci.add_argument(
        "--cache-dir", default="cache", help="committed response cache (default: cache)"
    )
    ci.add_argument(
        "--notebooks", default="notebooks", help="notebooks run under nbval (default: notebooks)"
    )
    ci.add_argument(
        "--install",
        default="memlab[local,notebooks]",
        help="what pip installs (default: memlab[local,notebooks])",
    )
    ci.set_defaults(func=_ci)


def tolerance_for(owners: int, *, alpha: float = 0.05, power: float = 0.80) -> float:
    """The smallest regression a paired test on ``owners`` owners detects with ``power`` when
    the delta's per-owner spread is :data:`SPREAD` (memlab's MDE), rounded up to a point;
    ``inf`` when no paired test on so few owners can reach ``alpha``."""
    from memlab.scoring.inference.paired_tests import min_detectable_effect

    mde = float(
        min_detectable_effect([SPREAD / math.sqrt(owners)], owners, alpha=alpha, power=power)[0]
    )
    return mde if math.isinf(mde) else math.ceil(mde * 100) / 100


def _owners(args: argparse.Namespace) -> tuple[str, int]:
    """The dataset's name and the number of owners a sweep of the grid replays."""
    from memlab.datasets import load_dataset, resolve_dataset
    from memlab.grids.grid import Grid
    from memlab.grids.owners import select_owners
    from memlab.sweeps.plan import load_grid

    grid: Grid | None = load_grid(args.grid) if Path(args.grid).is_file() else None
    spec: str | None = args.dataset or (grid.dataset if grid is not None else None)
    if spec is None:
        raise InitError(args.grid, "no such grid file; give --grid PATH or --dataset NAME")
    # The grid's own dataset path is relative to its folder.
    local = Path(grid.base_dir, spec) if grid is not None and args.dataset is None else None
    path = local if local is not None and local.is_file() else resolve_dataset(spec)
    owners = load_dataset(path)
    selected = select_owners(owners, grid) if grid is not None else owners
    return spec, len(selected)


def workflow_text(
    *,
    grid: str,
    baseline: str,
    cache_dir: str,
    notebooks: str,
    install: str,
    tolerance: float,
    comment: str,
) -> str:
    """The workflow's YAML."""
    summary = "reports/ci"
    return f"""\
# memlab: notebooks, the sweep from the committed cache, the gate and the job summary.
# Written by `memlab init ci`; edit freely.
{comment}
name: memlab

# Quoted: YAML 1.1 readers take a bare on for the boolean true.
"on":
  pull_request:
  push:
    branches: [main]

permissions:
  contents: read

jobs:
  memlab:
    runs-on: ubuntu-latest
    timeout-minutes: 60
    env:
      # A prompt or setting never recorded in the cache fails instead of calling a model.
      MEMLAB_CACHE_MODE: read_only
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.11"
          cache: pip
      - name: Install memlab
        run: python -m pip install "{install}"
      - name: Notebooks under nbval
        run: python -m pytest --nbval --nbval-current-env {notebooks}
      - name: Sweep from the committed cache (read-only)
        run: >-
          memlab sweep {grid} --cache-dir {cache_dir} --cache-mode read_only
          --runs-dir runs --name candidate --no-progress
      - name: Report
        if: ${{{{ !cancelled() }}}}
        run: |
          memlab report {baseline} runs/candidate -o {summary}
          cat {summary}/summary.md >> "$GITHUB_STEP_SUMMARY"
      - name: Gate against the baseline
        run: >-
          memlab gate runs/candidate --baseline {baseline}
          --no-significant-regression --tolerance {tolerance:g}
"""


def _ci(args: argparse.Namespace) -> int:
    out = Path(args.out)
    if out.exists() and not args.force:
        raise InitError(str(out), "exists; give --force to overwrite it, or --out PATH")
    dataset, owners = _owners(args)
    tolerance = tolerance_for(owners)
    if math.isinf(tolerance):
        raise InitError(
            dataset,
            f"{owners} owner(s): no paired test can detect a regression with so few; "
            "replay more owners (the grid's owners or max_owners)",
        )
    comment = (
        f"# --tolerance {tolerance:g}: the minimum detectable effect (80% power, alpha 0.05) of\n"
        f"# a paired test on the {owners} owners of {dataset}, for a per-owner spread of the\n"
        f"# delta of {SPREAD:g}. The gate measures the real spread: when its MDE is larger it\n"
        "# fails saying so ('cannot detect a regression of ...'). To see the MDE of your runs:\n"
        f"#   memlab report {args.baseline} -o /tmp/mde   (its statistics state the minimum\n"
        "#   detectable effect with these owners); set --tolerance to it, or add owners."
    )
    text = workflow_text(
        grid=args.grid,
        baseline=args.baseline,
        cache_dir=args.cache_dir,
        notebooks=args.notebooks,
        install=args.install,
        tolerance=tolerance,
        comment=comment,
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out} (gate tolerance {tolerance:g} for {owners} owners of {dataset})")
    return 0
