"""``memlab ab``: two prompts replayed, compared paired, one verdict per primary metric.

The expected directions come from the simulated profile's declared prompt effects (its YAML,
read here with ``yaml.safe_load``), never from memlab's output; the simulated model is a test
instrument (``sim:attentive`` reads the update prompt, ``sim:careful`` ignores it).
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import yaml

import memlab
from memlab.cli.main import main
from memlab.reporting.compare.prompt_ab import OUTCOMES, WIDTH, ABResult
from memlab.scoring.qa.qa_metrics import judged_metrics

ROOT = Path(__file__).resolve().parent.parent
SELF_ONLY = ROOT / "notebooks" / "prompts" / "self_only.txt"
PRIMARY_TITLES = {
    "parse_failure_rate": "parse failure rate",
    "recall": "recall",
    "precision_macro": "precision (macro)",
    "qa_accuracy": "QA accuracy",
}
IGNORED = "the backend ignores prompts"


def _declared(name: str) -> dict[str, Any]:
    path = resources.files("memlab.simulation") / "profiles" / f"{name}.yaml"
    data: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return data


def _expected_directions() -> dict[str, str]:
    """What the attentive profile's declared effect does to the primary metrics when its
    phrase is in the template: proposing more of the revealed facts raises recall, inventing
    fewer raises precision."""
    profile = _declared("attentive")
    (effect,) = profile["prompt_effects"]
    assert effect["when_contains"].lower() in SELF_ONLY.read_text("utf-8").lower()
    changed = effect["set"]
    found = {}
    if changed["propose_rate"] != profile["propose_rate"]:
        up = changed["propose_rate"] > profile["propose_rate"]
        found["recall"] = "better" if up else "worse"
    if changed["invent_rate"] != profile["invent_rate"]:
        fewer = changed["invent_rate"] < profile["invent_rate"]
        found["precision_macro"] = "better" if fewer else "worse"
    return found


def _verdicts(out: str) -> dict[str, str]:
    """Primary metric column -> the verdict word of its line in the verdict block."""
    block = out.split("verdict per primary metric (baseline -> candidate):\n", 1)[1]
    found = {}
    for metric, title in PRIMARY_TITLES.items():
        match = re.search(
            rf"^  {re.escape(title)} +\S+ -> \S+: ({'|'.join(OUTCOMES)})\b", block, re.M
        )
        if match:
            found[metric] = match.group(1)
    return found


def _ab(runs: Path, backend: str, *extra: str) -> list[str]:
    return [
        "ab",
        "default",
        str(SELF_ONLY),
        "--dataset",
        "personas",
        "--backend",
        backend,
        "--runs-dir",
        str(runs),
        "--no-progress",
        *extra,
    ]


def _fits(out: str, runs: Path) -> None:
    """Every line fits WIDTH, a run's path excepted (the text cannot choose where runs are):
    measured with ``runs`` as the four letters "RUNS"."""
    wide = [line for line in out.splitlines() if len(line.replace(str(runs), "RUNS")) > WIDTH]
    assert not wide, wide


# --- the acceptance: the declared effect found, a blind backend named -----------------------


def test_ab_on_the_prompt_aware_profile_finds_the_declared_effect(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = _expected_directions()
    assert expected == {"recall": "better", "precision_macro": "better"}
    code = main(_ab(tmp_path, "sim:attentive", "--qa"))
    out = capsys.readouterr().out
    assert code == 0, out
    verdicts = _verdicts(out)
    for metric, direction in expected.items():
        assert verdicts[metric] == direction, out
    # One verdict per primary metric, QA accuracy among them, and they are the last lines.
    assert set(verdicts) == set(PRIMARY_TITLES)
    assert out.rstrip().splitlines()[-1].startswith("  QA accuracy ")
    assert "inconclusive" not in out
    assert out.startswith("[simulated] A/B on personas: default (")
    _fits(out, tmp_path)


def test_where_a_line_breaks_does_not_depend_on_where_the_profile_file_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A ``sim:`` backend given as a profile file names its path in the header: the same A/B
    with the file at a short and at a long path prints the same lines, the paths aside."""
    profile = resources.files("memlab.simulation") / "profiles" / "attentive.yaml"
    outs = []
    for folder in ("p", "p" + "-deeper" * 20):
        path = tmp_path / folder / "attentive.yaml"
        path.parent.mkdir()
        path.write_text(profile.read_text(encoding="utf-8"), encoding="utf-8")
        runs = tmp_path / f"runs-{len(folder)}"
        code = main(_ab(runs, f"sim:{path}"))
        out = capsys.readouterr().out
        assert code in (0, 1), out
        assert f"backend sim:{path}" in out  # the sentinel: the path is printed
        outs.append(out.replace(str(path), "PROFILE").replace(str(runs), "RUNS"))
    assert outs[0] == outs[1]


def test_ab_on_a_profile_that_ignores_prompts_is_inconclusive_and_the_gate_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_ab(tmp_path, "sim:careful", "--qa", "--name", "blind")) == 1
    out = capsys.readouterr().out
    verdicts = _verdicts(out)
    assert set(verdicts) == set(PRIMARY_TITLES)
    assert set(verdicts.values()) == {"inconclusive"}, out
    block = out.split("verdict per primary metric", 1)[1]
    for title in PRIMARY_TITLES.values():
        line = re.search(rf"^  {re.escape(title)} .*$", block, re.M)
        assert line is not None and f"inconclusive: {IGNORED}" in line.group(0)
    _fits(out, tmp_path)

    # The two runs are ordinary runs: the gate on them fails, naming the reason.
    base, cand = tmp_path / "blind-base", tmp_path / "blind-candidate"
    gate = ["gate", str(cand), "--baseline", str(base), "--no-significant-regression"]
    assert main(gate) == 1
    out = capsys.readouterr().out
    assert any(
        line.startswith("FAILED inconclusive: ") and IGNORED in line for line in out.splitlines()
    )
    # Each metric's own line says so too, as its A/B verdict does, not "ok ... no change".
    assert main([*gate, "--tolerance", "0.5"]) == 1
    lines = [ln for ln in capsys.readouterr().out.splitlines() if not ln.startswith("FAILED")]
    run = memlab.load_run(cand)
    (label,) = (run.label(lane) for lane in run.lanes)
    for metric in PRIMARY_TITLES:
        assert f"inconclusive: {label}: {metric}: {IGNORED}" in lines, lines
    assert not [ln for ln in lines if ln.startswith("ok ")], lines

    # compare's tables: the reason concerns the whole comparison, so every metric of the
    # lane reads inconclusive with it, not "no change", in the main table (narrow and wide)...
    said = f"inconclusive: {IGNORED}"
    for wide in ([], ["--wide"]):
        assert main(["compare", str(base), str(cand), *wide]) == 0
        out = capsys.readouterr().out
        compared = int(re.findall(r"; (\d+) comparisons$", out, re.M)[0])
        rows = [ln for ln in out.split("memory QA under every judge")[0].splitlines() if said in ln]
        assert len(rows) == compared, out
        assert not re.search(r"\bno change\s+\d", out), out  # no verdict cell says no change
    # ... and in the table of QA verdicts under every judge, under each judge and in summary.
    judged = out[out.index("memory QA under every judge") :].splitlines()[1:]
    judges = sum(column.startswith("verdict:") for column in judged[0].split())
    assert judges >= 2, judged
    for line in judged[1:]:
        cells = line.split(maxsplit=3 + judges)
        assert cells[2] in judged_metrics(), line
        assert cells[3 : 3 + judges] == ["inconclusive"] * judges, line
        assert line.endswith(said), line
    assert {line.split()[2] for line in judged[1:]} == set(judged_metrics()), judged

    # The report: every row of its statistics section and of its QA differences under every
    # judge says so too, in the Markdown summary and the HTML page.
    paths = memlab.build_report([memlab.load_run(base), run], tmp_path / "report")
    lines = paths.markdown.read_text(encoding="utf-8").splitlines()
    header = next(ln for ln in lines if ln.startswith("| configuration |"))
    column = [c.strip() for c in header.split("|")].index("verdict")
    verdict_cells = [
        ln.split("|")[column].strip() for ln in lines if ln.startswith(f"| {cand.name}: ")
    ]
    assert len(verdict_cells) == compared and set(verdict_cells) == {said}, lines
    robust = lines[lines.index("### Differences against the baseline, under every judge") + 2 :]
    robust = [[c.strip() for c in ln.split("|")[1:-1]] for ln in robust[: robust.index("")]][2:]
    assert {row[3] for row in robust} == set(judged_metrics()), robust
    assert all(row[4:] == ["inconclusive"] * judges + [said] for row in robust), robust
    page = paths.html.read_text(encoding="utf-8")
    assert page.count(f"<td>{said}</td>") == compared + len(robust), page
    assert "<td>no change</td><td>no change</td>" not in page  # no raw verdict beside delta

    # --allow-inconclusive: exit 0, the verdicts still say inconclusive (replays reused).
    assert (
        main(_ab(tmp_path, "sim:careful", "--qa", "--name", "blind", "--allow-inconclusive")) == 0
    )
    assert set(_verdicts(capsys.readouterr().out).values()) == {"inconclusive"}


# --- smaller runs: owners, tolerance, the library ---------------------------------------------


def test_too_few_owners_for_any_test_is_inconclusive(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_ab(tmp_path, "sim:attentive", "--max-owners", "3")) == 1
    out = capsys.readouterr().out
    verdicts = _verdicts(out)
    assert set(verdicts) == {"parse_failure_rate", "recall", "precision_macro"}
    # A paired sign-flip test on 3 owners has a smallest p-value of 2 / 2**3 = 0.25 > 0.05.
    assert "no test possible: 3 owners" in out
    assert verdicts["recall"] == "inconclusive"


def test_the_owners_that_would_detect_the_tolerance_are_the_gates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A tolerance smaller than the minimum detectable effect: the metric is inconclusive,
    naming how many owners would detect it, from the same power computation as the gate's."""
    args = _ab(
        tmp_path, "sim:attentive", "--name", "tight", "--tolerance", "parse_failure_rate=0.01"
    )
    assert main(args) == 1
    out = capsys.readouterr().out
    said = re.search(
        r"parse failure rate .*inconclusive: too few owners: cannot detect a regression of "
        r"1\.0 pts with "
        r"(\d+) owners \(MDE ([\d.]+) pts\): about (\d+) owners would detect it",
        out.replace("\n    ", " "),
    )
    assert said is not None, out
    owners, mde, needed = int(said.group(1)), float(said.group(2)), int(said.group(3))
    assert owners == 14 and mde > 1.0
    # The MDE shrinks as 1 / sqrt(n): more than owners * (mde / tolerance)^2 / 2 are needed.
    assert needed > owners * (mde / 1.0) ** 2 / 2
    # The other metrics, held to no tolerance, get a verdict.
    assert _verdicts(out)["recall"] == _verdicts(out)["precision_macro"] == "better"
    gate = ["gate", str(tmp_path / "tight-candidate"), "--baseline", str(tmp_path / "tight-base")]
    gate += ["--no-significant-regression", "parse_failure_rate", "--tolerance", "0.01"]
    assert main(gate) == 1
    assert f"about {needed} owners would detect it" in capsys.readouterr().out


def test_the_library_gives_the_same_verdicts(tmp_path: Path) -> None:
    result = memlab.ab(
        "default",
        SELF_ONLY,
        backend="sim:attentive",
        max_owners=8,
        runs_dir=tmp_path,
        progress=False,
    )
    assert isinstance(result, ABResult)
    assert [v.metric for v in result.verdicts] == [
        "parse_failure_rate",
        "recall",
        "precision_macro",
    ]
    assert result.baseline.path == tmp_path / "ab-default-vs-self_only-base"
    assert result.candidate.path == tmp_path / "ab-default-vs-self_only-candidate"
    lines = result.lines()
    _fits("\n".join(lines), tmp_path)
    # The text ends with the verdicts, one per primary metric, in order (wrapped lines joined).
    block = "\n".join(lines).split("verdict per primary metric (baseline -> candidate):\n")[1]
    said = re.sub(r"\n {4}", " ", block).splitlines()
    assert [line.split()[0] for line in said] == [v.title.split()[0] for v in result.verdicts]
    for line, found in zip(said, result.verdicts, strict=True):
        assert line.endswith(f"{found.baseline} -> {found.candidate}: {found.text}")
    for found in result.verdicts:
        assert found.outcome in ("better", "worse", "no difference", "inconclusive")
        assert str(found).startswith(f"{found.title}: ")


# --- bad input: one line, exit 2 ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["nosuchprompt", "default", "--backend", "sim:careful"], "nosuchprompt"),
        (["default", "missing/prompt.txt", "--backend", "sim:careful"], "missing/prompt.txt"),
        (["default", "concise", "--backend", "sim:nosuchprofile"], "nosuchprofile"),
        (["default", "concise", "--backend", "sim:careful", "--judges", "strict"], "--qa"),
        (["default", "concise", "--backend", "sim:careful", "--tolerance", "x"], "--tolerance"),
        (["default", "concise"], "--backend"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], says: str
) -> None:
    code = main(["ab", *extra, "--runs-dir", str(tmp_path), "--no-progress"])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and says in lines[0], lines
