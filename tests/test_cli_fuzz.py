"""The command line against the fuzz table (``tests/fuzz_table.py``): every hostile input
ends in one clear line, changes nothing outside its target, leaks no secret, claims no
result it does not have, and stays bounded (see the table's docstring)."""

from __future__ import annotations

import contextlib
import logging
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from fake_openai import SECRET, HostileServer
from fuzz_table import CASES, MAX_LINE, MAX_STDERR, Case, materialise
from fuzz_table_more import KINDS, MORE_CASES
from hostile import (
    MAX_RSS_BYTES,
    MAX_SECONDS,
    PASSWORD,
    hollow_runs,
    leaks,
    manifests,
    read_only,
    run_process,
    tree,
)

from memlab.cli.main import main
from memlab.core.pipeline.llm import allow_model_requests

INTERRUPT_S = 30.0
"""Longest time from Ctrl-C to the exit. The hostile server never answers and the client's
request timeout is 60 s or more, so an exit within this bound shows that Ctrl-C, not a reply
or a timeout, ended the command; the bound is wide so that machine load cannot fail it."""


def _params() -> list[Any]:
    params = []
    for case in CASES + MORE_CASES:
        marks = [pytest.mark.xfail(reason=case.pending, strict=True)] if case.pending else []
        params.append(pytest.param(case, id=case.id, marks=marks))
    return params


def test_the_table_is_large_enough() -> None:
    assert len(CASES) >= 150
    everything = CASES + MORE_CASES
    assert len({case.id for case in everything}) == len(everything)
    # QA, the tiered memory, plugins and the LoCoMo importer: 40 rows at least, each kind.
    kinds = Counter(KINDS[case.id] for case in MORE_CASES)
    assert len(MORE_CASES) >= 40 and set(kinds) == {"qa", "tiered", "plugins", "locomo"}
    assert sum(case.bomb for case in CASES) >= 15
    assert sum(bool(case.server) for case in CASES) >= 10


@pytest.mark.parametrize("case", _params())
def test_hostile_input_gives_one_clear_line(
    case: Case,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    sandbox, outside = tmp_path / "sandbox", tmp_path / "outside"
    sandbox.mkdir()
    outside.mkdir()
    (outside / "sentinel.txt").write_text("must stay", encoding="utf-8")
    monkeypatch.chdir(sandbox)
    monkeypatch.setenv("MEMLAB_HOME", str(sandbox / "home"))
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with contextlib.ExitStack() as stack:
        modes = case.server.split(">")
        server = stack.enter_context(HostileServer(modes[0])) if case.server else None
        if server is not None:  # the backend talks to the hostile loopback server only
            stack.enter_context(allow_model_requests())
        values = {"outside": outside, "sandbox": sandbox, "password": PASSWORD}
        if server is not None:
            values.update(server=server.base_url, port=server.httpd.server_address[1])
            monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        for name, value in case.env.items():
            monkeypatch.setenv(name, value.format(**values))
        materialise(case, sandbox, outside)
        if server is not None:
            server.mode = modes[-1]
        if case.read_only and not stack.enter_context(read_only(sandbox / case.read_only)):
            pytest.skip("this file system cannot make a directory read-only for this user")
        capsys.readouterr()
        caplog.clear()
        before = tree(tmp_path, sandbox)
        claims = manifests(sandbox)
        argv = [a.format(**values) for a in case.argv]
        code, out, err = _run(case, argv, sandbox, server, capsys, caplog)
    (sandbox / ".stdout").write_text(out, encoding="utf-8")

    assert tree(tmp_path, sandbox) == before, "files outside the sandbox changed"
    assert (outside / "sentinel.txt").read_text(encoding="utf-8") == "must stay"
    assert "Traceback" not in out + err
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
    assert leaks(tmp_path, [out, err, caplog.text]) == [], "a secret was written or shown"
    assert hollow_runs(sandbox, claims) == [], "a run is complete without results"
    assert len(err) <= MAX_STDERR
    assert all(len(line) <= MAX_LINE for line in (out + err).splitlines())
    assert code == case.exit, f"exit {code}: {err or out}"
    if case.exit == 2:
        lines = [line for line in err.splitlines() if line.strip()]
        if case.own_process:  # the real process also shows log lines; one error line
            lines = [line for line in lines if line.startswith("error:")]
        assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert case.expect in out + err
    if case.check is not None:
        case.check(sandbox)


def _run(
    case: Case,
    argv: list[str],
    sandbox: Path,
    server: HostileServer | None,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> tuple[int, str, str]:
    """Run the command in-process or as a process (bounds and Ctrl-C checked there)."""
    if not case.own_process:
        with caplog.at_level(logging.WARNING):
            code = main(argv)
        out, err = capsys.readouterr()
        return code, out, err
    interrupt = None
    if case.interrupt:
        assert server is not None, "an interrupt row needs a server to hold its request"
        interrupt = lambda: server.requests > 0  # noqa: E731 - polled by run_process
    done = run_process(argv, sandbox, dict(os.environ), interrupt_when=interrupt)
    if case.bomb:
        assert done.rss_bytes < MAX_RSS_BYTES, f"peak RSS {done.rss_bytes / 2**20:.0f} MiB"
        assert done.code != -9, f"still running after {done.seconds:.0f} s: killed"
        assert done.cpu_seconds < MAX_SECONDS, f"took {done.cpu_seconds:.1f} s of CPU"
    if case.interrupt:
        assert done.interrupted_after is not None, "the command ended before Ctrl-C"
        assert done.interrupted_after < INTERRUPT_S, (
            f"{done.interrupted_after:.1f} s after Ctrl-C; stderr ends: {done.err[-4000:]}"
        )
    return done.code, done.out, done.err
