"""The README's first commands give a working Jupyter, and the README names every notebook."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def extras() -> dict[str, list[str]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return dict(project["optional-dependencies"])


def requirement_names(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=\[; ]", r, maxsplit=1)[0].lower() for r in requirements}


def test_the_demo_installs_jupyter_and_the_readme_says_how_to_open_the_notebooks() -> None:
    notebooks = requirement_names(extras()["notebooks"])
    assert {"jupyterlab", "ipykernel", "ipywidgets", "nbval"} <= notebooks
    demo = (ROOT / "scripts" / "demo.sh").read_text(encoding="utf-8")
    (installed,) = re.findall(r"^MEMLAB_EXTRAS=(\S+) bash scripts/setup.sh$", demo, re.M)
    assert "notebooks" in installed.split(",") and "local" in installed.split(",")
    # The dev tools include the notebooks' (the tests run them under nbval).
    dev_extras = [r for r in extras()["dev"] if r.startswith("memlab[")]
    assert any("notebooks" in r.split("[")[1].rstrip("]").split(",") for r in dev_extras)
    setup = README.split("## What is inside")[0]
    assert "bash scripts/demo.sh" in setup
    assert setup.index("bash scripts/demo.sh") < setup.index(".venv/bin/jupyter lab notebooks/")


def test_the_readme_names_every_notebook() -> None:
    stems = sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))
    assert len(stems) >= 6
    tree = README.split("## What is inside")[1].split("```")[1]
    listed = re.search(r"^notebooks/\s+(.*?)\n(?=\S)", tree, re.M | re.S)
    assert listed is not None
    numbers = set(re.findall(r"\b(\d\d) ", listed.group(1)))
    assert numbers == {stem[:2] for stem in stems}
    section = README.split("## Notebooks")[1].split("\n## ")[0]
    bullets = re.findall(r"^- `([^`]+)`:", section, re.M)
    assert bullets == stems
