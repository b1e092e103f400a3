"""The report's first screen: the biggest prompt change is ranked and described by its effect
on the primary metrics, and no paragraph runs longer than three lines.

Runs of the simulated model (``sim:careful``), whose declared behaviour fixes what to expect:
its profile ignores prompt text, so a longer prompt changes only the tokens sent (not a primary
metric), and a higher confidence threshold drops the facts it proposes below it (recall, a
primary metric, falls).
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from memlab.cli.main import main
from memlab.core.prompts import PromptRegistry
from memlab.reporting.report import build_report
from memlab.runs.run import load_run

LINE = 100
"""Characters a line of the first screen is counted at."""


def _run(runs: Path, name: str, *extra: str) -> Path:
    argv = ["run", "personas", "--runs-dir", str(runs), "--name", name, "--no-progress", *extra]
    assert main(argv) == 0
    return runs / name


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    runs = tmp_path_factory.mktemp("first-screen")
    template = PromptRegistry().get("default").template
    long = template + "\n" + "\n".join(f"Note {i}: keep each fact short." for i in range(40))
    (runs / "wide.txt").write_text(long, "utf-8")
    edited = template.replace("Extract new, durable facts about the user", "Extract facts")
    assert edited != template
    (runs / "strict.txt").write_text(edited, "utf-8")
    _run(runs, "base", "--backend", "sim:careful")
    _run(runs, "wide", "--backend", "sim:careful", "--prompt", str(runs / "wide.txt"))
    strict = ["--backend", "sim:careful", "--prompt", str(runs / "strict.txt")]
    _run(runs, "strict", *strict, "--threshold", "0.9")
    return runs


@pytest.fixture(scope="module")
def report(runs: Path) -> tuple[str, str]:
    loaded = [load_run(runs / name) for name in ("base", "strict", "wide")]
    intro = (
        "Part 1: " + "the first part of this report compares three prompts " * 4 + "\n"
        "Part 2: " + "the second part names what the simulated model can show " * 4
    )
    paths = build_report(loaded, runs / "report", intro=intro)
    return paths.markdown.read_text("utf-8"), paths.html.read_text("utf-8")


def _value(runs: Path, name: str, column: str) -> float:
    return float(load_run(runs / name).summary[column].iloc[0])


def test_the_biggest_prompt_change_is_its_effect_on_the_primary_metrics(
    runs: Path, report: tuple[str, str]
) -> None:
    # The setting: the long prompt changes tokens per update a lot and no primary metric (the
    # profile ignores prompts); the short edit with a higher threshold lowers recall.
    assert _value(runs, "wide", "tokens_per_update") > _value(runs, "base", "tokens_per_update")
    for column in ("recall", "parse_failure_rate", "precision_macro"):
        assert _value(runs, "wide", column) == _value(runs, "base", column)
    drop = _value(runs, "strict", "recall") - _value(runs, "base", "recall")
    assert drop < 0
    markdown, html = report
    line = next(ln for ln in markdown.splitlines() if ln.startswith("Biggest prompt change"))
    assert "(by its effect on the primary metrics)" in line
    assert "strict: " in line and "wide" not in line  # the smaller edit, the larger effect
    assert f"its effect on the primary metrics: recall {drop * 100:+.1f} pts" in line
    assert "tokens" not in line  # a secondary metric is no part of the effect
    assert f"recall {drop * 100:+.1f} pts" in html.split("Biggest prompt change")[1][:400]


def _first_screen_markdown(markdown: str) -> list[str]:
    """The first screen's paragraphs, and the items of the lists above the verdict (the
    introduction, what was compared), each as one text; the verdict's list of reasons and its
    tables are no paragraphs."""
    screen = markdown.split("## Configurations", 1)[0]
    above, below = screen.split("\n## Verdict", 1)
    texts = []
    for part, items in ((above, True), (below, False)):
        for block in part.split("\n\n"):
            lines = block.strip().splitlines()
            if not lines or lines[0].startswith(("#", "|")):
                continue
            if lines[0].startswith("- "):
                texts += [line.removeprefix("- ") for line in lines] if items else []
            else:
                texts.append(" ".join(lines))
    return texts


def test_no_first_screen_paragraph_is_longer_than_three_lines(report: tuple[str, str]) -> None:
    markdown, html = report
    blocks = _first_screen_markdown(markdown)
    assert any(block.startswith("Part 2: ") for block in blocks)  # the intro is read
    assert any(block.startswith("Compared: ") for block in blocks)
    for block in blocks:
        assert len(textwrap.wrap(block, LINE)) <= 3, block
    screen = html.split("<h2>Metrics</h2>", 1)[0]
    paragraphs = re.findall(r"<p[^>]*>(.*?)</p>", screen, flags=re.S)
    items = re.findall(r"<ul class='(?:intro|compared)'>(.*?)</ul>", screen, flags=re.S)
    texts = [*paragraphs, *(i for group in items for i in re.findall(r"<li>(.*?)</li>", group))]
    assert any(text.startswith("Part 1: ") for text in texts)
    for text in texts:
        plain = re.sub(r"<[^>]+>", "", text)
        assert len(textwrap.wrap(plain, LINE)) <= 3, plain
