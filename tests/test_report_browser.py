"""Open a generated report in headless Chromium: charts load, no errors, hostile text stays text.

Chromium is driven through the DevTools protocol over a websocket (``websocket-client``), with
background networking, sync, component updates and QUIC off, so the test makes no network
requests. ``scripts/install_chromium.sh`` installs the browser (Debian package ``chromium``).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
import websocket  # websocket-client (dev extra)
from builders import marker_backend, one_turn, small_demo, update, write_owners

from memlab.cli.experiment.demo import DemoResult
from memlab.grids.grid import Grid
from memlab.reporting.figures import charts
from memlab.reporting.figures.overlay import Overlay
from memlab.reporting.report import build_report
from memlab.reporting.report_render import CHARTS
from memlab.sweeps.driver import sweep

CHROMIUM = shutil.which("chromium")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium is not on PATH; install it with scripts/install_chromium.sh",
)

SCRIPT = "<script>window.__pwned=1</script>"
IMG = '<img src=x onerror="window.__pwned=2">'
T0 = datetime(2025, 6, 2, 9, 0, tzinfo=UTC)
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-dev-shm-usage",
    "--mute-audio",
]


@pytest.fixture(scope="module")
def report_html(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A two-lane report whose dataset message, model reply and stored facts are hostile."""
    tmp = tmp_path_factory.mktemp("browser")
    owner = {
        "user_id": "mallory",
        "sessions": [
            one_turn("m-1", T0, f"My name is {SCRIPT} and I like {IMG} [s:1]", "Sure."),
            one_turn("m-2", T0 + timedelta(days=1), f"Again {SCRIPT} {IMG} [s:2]", "Sure."),
        ],
    }
    dataset = tmp / "hostile.jsonl"
    write_owners(dataset, [owner])
    replies = {
        "[s:1]": update((f"Name is {SCRIPT}", 0.9), (f"Likes {IMG}", 0.8)),
        "[s:2]": f"Sorry! {SCRIPT} {IMG}",  # a failed parse: shown raw in "Worst failures"
    }

    backend = marker_backend(replies)
    run = sweep(
        dataset,
        Grid.from_mapping(
            {
                "name": "hostile",
                "replay_mode": "per_session",
                "axes": {"fact_confidence_threshold": [0.7, 0.85]},
            }
        ),
        runs_dir=tmp / "runs",
        backend_factory=lambda spec: backend,
        progress=False,
    )
    html = build_report([run], tmp / "report").html
    source = html.read_text(encoding="utf-8")
    assert SCRIPT not in source and IMG not in source  # the static check, before any browser
    return html


# --- a minimal DevTools-protocol client ---------------------------------------------------------


class Browser:
    """Headless Chromium with one page, driven over the DevTools protocol."""

    def __init__(self, profile: Path) -> None:
        assert CHROMIUM is not None
        self.profile = profile
        self.proc = subprocess.Popen(
            [
                CHROMIUM,
                *CHROMIUM_FLAGS,
                f"--user-data-dir={profile}",
                "--remote-debugging-port=0",
                "--remote-debugging-address=127.0.0.1",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # its own process group, so cleanup reaches the renderers
        )
        self.ids = itertools.count(1)
        self.events: list[dict[str, Any]] = []
        port = self._wait_for_port(timeout=15)
        targets = json.loads(
            urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=5).read()
        )
        page = next(t for t in targets if t["type"] == "page")
        self.ws = websocket.create_connection(
            page["webSocketDebuggerUrl"], timeout=10, suppress_origin=True
        )
        for method in ("Runtime.enable", "Log.enable", "Page.enable"):
            self.call(method)

    def _wait_for_port(self, timeout: float) -> int:
        port_file = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"chromium exited early with code {self.proc.returncode}")
            with contextlib.suppress(OSError, ValueError, IndexError):
                return int(port_file.read_text().splitlines()[0])
            time.sleep(0.05)
        raise TimeoutError("chromium did not open its DevTools port")

    def _receive(self) -> dict[str, Any]:
        message: dict[str, Any] = json.loads(self.ws.recv())
        if "method" in message:
            self.events.append(message)
        return message

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        ident = next(self.ids)
        self.ws.send(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            message = self._receive()
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result

    def open(self, url: str, timeout: float = 10) -> None:
        """Navigate and wait for the load event (all images loaded or failed by then)."""
        self.events.clear()
        self.call("Page.navigate", url=url)
        deadline = time.monotonic() + timeout
        while not any(e["method"] == "Page.loadEventFired" for e in self.events):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{url} did not finish loading")
            self._receive()

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and error log entries since the last open()."""
        found = []
        for event in self.events:
            params = event.get("params", {})
            if event["method"] == "Runtime.consoleAPICalled" and params.get("type") == "error":
                found.append(" ".join(str(a.get("value")) for a in params.get("args", [])))
            elif event["method"] == "Runtime.exceptionThrown":
                found.append(str(params["exceptionDetails"].get("text")))
            elif event["method"] == "Log.entryAdded" and params["entry"]["level"] == "error":
                found.append(str(params["entry"].get("text")))
        return found

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.ws.close()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=5)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    instance = Browser(tmp_path_factory.mktemp("chromium-profile"))
    try:
        yield instance
    finally:
        instance.close()


# --- tests ------------------------------------------------------------------------------------


def test_harness_detects_executed_markup(browser: Browser, tmp_path: Path) -> None:
    """The checks below can fail: an unescaped page runs the payload and logs the broken image."""
    control = tmp_path / "control.html"
    control.write_text(f"<!DOCTYPE html><html><body>{IMG}</body></html>", encoding="utf-8")
    browser.open(control.as_uri())
    assert browser.evaluate("window.__pwned") == 2
    assert browser.evaluate("Array.from(document.images).every(i => i.naturalWidth > 0)") is False
    assert browser.errors(), "a missing image should be logged as an error"


OPEN_ALL = "document.querySelectorAll('details').forEach(d => d.open = true)"
"""Unfold every folded section (innerText is the rendered text: folded text is not in it)."""


def test_report_loads_cleanly_and_shows_hostile_text_as_text(
    browser: Browser, report_html: Path
) -> None:
    started = time.monotonic()
    browser.open(report_html.as_uri())
    assert browser.errors() == []
    # Nine charts for one run, less those with nothing to draw (a line of text each).
    assert 0 < browser.evaluate("document.images.length") < 9
    assert "Not drawn (nothing to show)" in browser.evaluate("document.body.innerText")
    browser.evaluate(OPEN_ALL)
    assert browser.evaluate(
        "Array.from(document.images).every(i => i.complete && i.naturalWidth > 0)"
    )
    assert browser.evaluate("Array.from(document.images).every(i => i.src.startsWith('data:'))")
    assert browser.evaluate("window.__pwned === undefined")
    assert browser.evaluate("document.scripts.length") == 0
    text = browser.evaluate("document.body.innerText")
    # dataset message (conversation), model reply (raw reply) and stored facts (fact diff)
    assert f"Again {SCRIPT} {IMG} [s:2]" in text
    assert f"Sorry! {SCRIPT} {IMG}" in text
    assert f"Likes {IMG}" in text
    assert time.monotonic() - started < 10


def test_dumped_dom_has_no_live_markup(report_html: Path, tmp_path: Path) -> None:
    assert CHROMIUM is not None
    done = subprocess.run(
        [
            CHROMIUM,
            *CHROMIUM_FLAGS,
            f"--user-data-dir={tmp_path / 'profile'}",
            "--dump-dom",
            report_html.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    dom = done.stdout

    class Elements(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.tags: list[tuple[str, dict[str, str | None]]] = []

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            self.tags.append((tag, dict(attrs)))

    parser = Elements()
    parser.feed(dom)
    tags = [tag for tag, _ in parser.tags]
    assert "script" not in tags
    images = [attrs for tag, attrs in parser.tags if tag == "img"]
    assert 0 < len(images) < 9  # charts with nothing to draw are a line of text
    assert all(str(a.get("src", "")).startswith("data:image/png;base64,") for a in images)
    assert not any("onerror" in attrs for _, attrs in parser.tags)
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in dom
    assert '&lt;img src=x onerror="window.__pwned=2"&gt;' in dom


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> DemoResult:
    """The main job, its real-model part answered by a scripted stand-in."""
    from memlab.backends.scripted import ScriptedBackend

    tmp = tmp_path_factory.mktemp("demo")
    backend = ScriptedBackend(
        [update("Works as a paediatric nurse at St Mary's")], repeat_last=True
    )
    return small_demo(tmp, backend)


@pytest.fixture(scope="module")
def demo_html(demo: DemoResult) -> Path:
    """The main job's report."""
    return demo.paths.html


@pytest.fixture
def screen(browser: Browser) -> Iterator[Browser]:
    """The browser with a 1,400 x 900 px window."""
    browser.call(
        "Emulation.setDeviceMetricsOverride", width=1400, height=900, deviceScaleFactor=1,
        mobile=False,
    )  # fmt: skip
    try:
        yield browser
    finally:
        browser.call("Emulation.clearDeviceMetricsOverride")


def test_demo_report_renders_both_parts_inside_the_page(
    browser: Browser, demo: DemoResult, demo_html: Path
) -> None:
    browser.open(demo_html.as_uri())
    assert browser.errors() == []
    intro = browser.evaluate("document.querySelector('ul.intro').innerText")
    assert intro.startswith("Part 1") and "Part 2" in intro and "simulated" in intro
    headings = browser.evaluate(
        "Array.from(document.querySelectorAll('h2')).map(h => h.innerText).join('|')"
    )
    # One chart set, the three runs overlaid (real lanes first, the simulated ones marked).
    charts_heading = [h for h in headings.split("|") if h.startswith("Charts: ")]
    assert len(charts_heading) == 1 and charts_heading[0].endswith(" overlaid")
    for name in ("demo-free", "demo-bounded", "demo-sim"):
        assert name in charts_heading[0], name
    overlay = Overlay.of([*demo.real, demo.simulated])
    drawn = sum(charts.empty_reason(chart(overlay)) is None for _, row in CHARTS for chart in row)
    assert browser.evaluate("document.images.length") == drawn
    # Every chart's numbers are text too, folded under it.
    assert browser.evaluate("document.querySelectorAll('figure details table').length") == drawn
    assert browser.evaluate(
        "Array.from(document.images).every(i => i.complete && i.naturalWidth > 0)"
    )
    browser.evaluate(OPEN_ALL)
    text = browser.evaluate("document.body.innerText")
    assert "[simulated] thr=0.5 max=10" in text
    # The fact diff shows the pair that differs most (the real lanes store the same fact).
    diff = text.split("Fact-level diff", 1)[1]
    assert "A = demo-sim: [simulated] thr=0.5 max=10; B = demo-sim:" in diff
    assert "the one whose final memories differ most" in diff
    # Prompt diffs colour their added and removed lines.
    assert browser.evaluate("document.querySelectorAll('pre.diff span.add').length") > 0
    assert browser.evaluate("document.querySelectorAll('pre.diff span.del').length") > 0


def test_demo_report_first_screen_answers_and_the_page_is_short(
    screen: Browser, demo_html: Path
) -> None:
    """At 1,400 x 900 px the first screen holds what was compared, the verdict and the
    biggest prompt change; the page is under 12,000 px."""
    screen.open(demo_html.as_uri())
    top = "(s) => document.querySelector(s).getBoundingClientRect()"
    fold = screen.evaluate(f"({top})('details.section').top")
    assert fold <= 900, f"the first folded section starts at {fold} px"
    for selector in ("h1", "ul.compared", "#verdict", "table.verdict"):
        assert screen.evaluate(f"({top})('{selector}').bottom") <= 900, selector
    text = screen.evaluate("document.body.innerText")
    assert "Biggest prompt change" in text.split("Metrics")[0]
    height = screen.evaluate("document.documentElement.scrollHeight")
    assert height < 12_000, f"the page is {height} px tall"
    assert screen.evaluate(
        "document.documentElement.scrollWidth <= document.documentElement.clientWidth"
    )


def test_demo_report_tables_and_charts_fit_the_width_unfolded(
    screen: Browser, demo_html: Path
) -> None:
    """Every section unfolded at 1,400 px: no table or chart runs past the right edge, and no
    chart is drawn larger than its pixels (blurred) or at less than half of them."""
    screen.open(demo_html.as_uri())
    screen.evaluate(OPEN_ALL)
    width = screen.evaluate("document.documentElement.clientWidth")
    assert screen.evaluate("document.documentElement.scrollWidth") <= width
    overflowing = screen.evaluate(
        "Array.from(document.querySelectorAll('table, pre')).filter(t => "
        f"t.getBoundingClientRect().right > {width} || t.scrollWidth > t.clientWidth + 1)"
        ".map(t => t.innerText.slice(0, 60))"
    )
    assert overflowing == []
    sizes = screen.evaluate(
        "Array.from(document.images).map(i => [i.getBoundingClientRect().right, i.width, "
        "i.naturalWidth])"
    )
    assert sizes and all(right <= width for right, _, _ in sizes)
    assert all(natural / 2 <= shown <= natural for _, shown, natural in sizes), sizes


_INTERVAL = re.compile(r"\[(-?[\d.]+), (-?[\d.]+)\]")


def test_the_verdict_holds_only_significant_rows_and_every_one(
    screen: Browser, demo_html: Path
) -> None:
    """The verdict tables list exactly the significant rows of the comparisons (whose
    intervals exclude 0); robust rows are Holm-significant primaries; no table mixes real and
    simulated configurations."""
    screen.open(demo_html.as_uri())
    rows = screen.evaluate(
        "Array.from(document.querySelectorAll('table.verdict tbody tr'))"
        ".map(tr => Array.from(tr.cells).map(c => c.textContent))"
    )
    assert rows, "the demo's simulated part has significant differences"
    for *_, delta, _owners, robust in rows:
        lo, hi = (float(v) for v in _INTERVAL.search(delta).groups())  # type: ignore[union-attr]
        assert lo > 0 or hi < 0, delta
        assert "not significant" not in delta and "no clear difference" not in delta
        assert (robust == "robust") == delta.endswith(", significant"), (delta, robust)
    verdicts = screen.evaluate(
        "Array.from(document.querySelectorAll('table')).filter(t => "
        "Array.from(t.tHead ? t.tHead.rows[0].cells : []).some(c => c.textContent === 'verdict'))"
        ".flatMap(t => { const i = Array.from(t.tHead.rows[0].cells)"
        ".findIndex(c => c.textContent === 'verdict');"
        " return Array.from(t.tBodies[0].rows).map(r => r.cells[i].textContent); })"
    )
    significant = [v for v in verdicts if v.removesuffix(" (exploratory)") in ("better", "worse")]
    assert len(verdicts) > len(significant) > 0
    assert len(rows) == len(significant)
    # Real and simulated lanes never share a table (nor its ★).
    for table in screen.evaluate(
        "Array.from(document.querySelectorAll('table')).filter(t => t.tHead && "
        "t.tHead.rows[0].cells[1] && t.tHead.rows[0].cells[1].textContent === 'configuration')"
        ".map(t => Array.from(t.tBodies[0].rows).map(r => r.cells[1].textContent))"
    ):
        kinds = {"[simulated]" in cell for cell in table}
        assert len(kinds) == 1, table


def test_demo_charts_keep_their_labels_whole_and_apart(demo: DemoResult) -> None:
    """Every drawn chart of the demo, measured at the report's resolution: no label clipped,
    none covering another, no whisker through a label."""
    from chart_layout import layout_problems

    from memlab.reporting.report_render import REPORT_DPI

    found = {}
    for run in [*demo.real, demo.simulated]:
        for _, row in CHARTS:
            for chart in row:
                fig = chart(run)
                if charts.empty_reason(fig) is None:
                    found[f"{run.name}: {chart.__name__}"] = layout_problems(fig, REPORT_DPI)
    assert len(found) > 10
    assert {name: problems for name, problems in found.items() if problems} == {}


def test_demo_charts_fit_their_axes_to_the_data(demo: DemoResult) -> None:
    """One injection budget: bars per configuration, not points stacked at one x; caps far
    above the stored facts: a linear axis fitted to the data, the caps named in the title;
    sessions numbered from 0 as in the tables."""
    coverage = charts.injection_coverage_chart(demo.simulated).axes[0]
    assert demo.simulated.summary["max_injection_tokens"].nunique() == 1
    bars = [p for p in coverage.patches if p.get_width() > 0]
    assert len(bars) == len(demo.simulated.lanes)
    assert "max_injection_tokens" not in coverage.get_xlabel()
    for run in demo.real:
        growth = charts.fact_growth_chart(run).axes[0]
        top = float(run.sessions["facts"].max())
        assert growth.get_yscale() == "linear"
        assert growth.get_ylim()[1] <= 1.2 * top
        assert "not reached" in growth.get_title()
        first = int(run.sessions["session_index"].min())
        assert min(line.get_xdata()[0] for line in growth.lines) == first
