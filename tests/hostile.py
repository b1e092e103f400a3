"""The invariants memlab keeps against hostile input, as checks both the fuzz table
(``tests/test_cli_fuzz.py``) and the long-running probe (``scripts/probe.py``) apply:

- nothing outside the target changes (:func:`tree` before and after);
- no secret reaches any byte written or any line shown (:func:`leaks`), in any of the forms a
  server may echo it (plain, JSON-escaped, escaped twice);
- no run says it is complete without the results to show for it (:func:`hollow_runs`);
- a process stays bounded (:func:`run_process` measures its peak RSS and time).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from fake_openai import SECRET, escaped

import memlab

__all__ = [
    "MAX_RSS_BYTES",
    "MAX_SECONDS",
    "PASSWORD",
    "SECRETS",
    "Finished",
    "hollow_runs",
    "leaks",
    "manifests",
    "read_only",
    "run_process",
    "tree",
]

PASSWORD = "pw-probe-5e8d1c7a"
"""A password given in a base URL (``http://user:PASSWORD@host``)."""
BASIC = base64.b64encode(f"probe-user:{PASSWORD}".encode()).decode()
"""The Basic credential of ``probe-user`` with :data:`PASSWORD`, as a server may echo it."""
SECRETS = (SECRET, PASSWORD, BASIC)

MAX_RSS_BYTES = 1024**3
"""Peak memory of one command on hostile input."""
MAX_SECONDS = 30.0
"""CPU time (user + system) of one command on hostile input. CPU time, not wall time: on a
loaded machine a bounded command waits for a core, while a runaway one burns CPU; a hang
(no CPU) meets ``run_process``'s wall-clock timeout and is killed."""


def _forms(secret: str) -> list[bytes]:
    once = escaped(secret)
    return [secret.encode(), once.encode(), once.replace("\\", "\\\\").encode()]


def leaks(root: Path, texts: Iterable[str] = ()) -> list[str]:
    """Where a secret appears: files under ``root`` (every byte) and the given texts."""
    forms = [form for secret in SECRETS for form in _forms(secret)]
    found: list[str] = []
    for path in sorted(root.rglob("*")):
        if path.is_symlink() or not path.is_file():
            continue
        data = path.read_bytes()
        if any(form in data for form in forms):
            found.append(str(path))
    for i, text in enumerate(texts):
        data = text.encode("utf-8", "surrogateescape")
        if any(form in data for form in forms):
            found.append(f"output {i}")
    return found


def tree(root: Path, skip: Path) -> dict[str, tuple[int, int]]:
    """Every file and directory under ``root`` except ``skip``: (size, mtime_ns), links
    not followed."""
    found: dict[str, tuple[int, int]] = {}
    for directory, dirs, files in os.walk(root):
        if Path(directory) == skip:
            dirs[:] = []
            continue
        for name in [*dirs, *files]:
            path = Path(directory) / name
            if path == skip:
                continue
            stat = path.lstat()
            found[str(path)] = (stat.st_size if name in files else 0, stat.st_mtime_ns)
    return found


def manifests(root: Path) -> dict[str, bytes]:
    """The run manifests under ``root`` by path (to tell later which ones memlab wrote); a
    QA step's ``RUN/qa/manifest.json`` describes answers, not replays, and is left out."""
    from memlab.runs.rundir import QA_MANIFEST

    found: dict[str, bytes] = {}
    for path in root.rglob("manifest.json"):
        if path.parent.name == QA_MANIFEST.parent.name and (path.parents[1] / "lanes").is_dir():
            continue
        if path.is_file() and not path.is_symlink():
            found[str(path)] = path.read_bytes()
    return found


def hollow_runs(root: Path, before: Mapping[str, bytes] | None = None) -> list[str]:
    """Runs under ``root`` whose manifest says complete although a replay has no finished
    record (missing, malformed, marked incomplete, or fewer calls than updates).

    ``before``: :func:`manifests` taken before the command; manifests it did not write or
    change (a hostile input planted by a test) are not memlab's claims and are skipped.
    """
    from memlab.runs.rundir import RunDir, record_problem
    from memlab.sweeps.execute import unfinished
    from memlab.sweeps.replay import OwnerReplay

    hollow: list[str] = []
    for name, content in manifests(root).items():
        if before is not None and before.get(name) == content:
            continue
        manifest_file = Path(name)
        try:
            manifest = json.loads(content)
        except (OSError, ValueError):
            continue
        if not isinstance(manifest, dict) or manifest.get("complete") is not True:
            continue
        run = manifest_file.parent
        owners, lanes = manifest.get("owners") or [], manifest.get("lanes") or []
        if not owners or not lanes:
            hollow.append(f"{run}: complete with no owners or lanes")
        for lane in lanes:
            for owner in owners:
                path = RunDir(run).record(lane, owner)
                try:
                    record = json.loads(path.read_text("utf-8"))
                except (OSError, ValueError):
                    hollow.append(f"{path}: missing")
                    continue
                fields = {k: record[k] for k in OwnerReplay.__dataclass_fields__ if k in record}
                problem = record_problem(record) or (
                    "" if record.get("complete") is True else "marked incomplete"
                )
                if problem or unfinished(OwnerReplay(**fields)):
                    hollow.append(f"{path}: {problem or unfinished(OwnerReplay(**fields))}")
    return hollow


@dataclass(frozen=True)
class Finished:
    """A command that ran as its own process."""

    code: int
    out: str
    err: str
    rss_bytes: int
    seconds: float
    cpu_seconds: float
    """User + system CPU time of the process."""
    interrupted_after: float | None = None
    """Seconds from SIGINT to the exit, when the command was interrupted."""


def run_process(
    argv: list[str],
    cwd: Path,
    env: Mapping[str, str] | None = None,
    *,
    timeout: float = 300.0,
    interrupt_when: Callable[[], bool] | None = None,
) -> Finished:
    """Run ``python -m memlab ARGV`` and measure its peak RSS (``wait4``) and time.

    ``interrupt_when``: polled every 50 ms; once true, the process gets SIGINT.
    """
    src = Path(memlab.__file__).resolve().parents[1]
    full_env = {**os.environ, **(env or {})}
    full_env["PYTHONPATH"] = f"{src}{os.pathsep}{full_env.get('PYTHONPATH', '')}"
    full_env["PYTHONFAULTHANDLER"] = "1"  # a hang killed at the timeout leaves its stacks
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.monotonic()
        proc = subprocess.Popen(
            [sys.executable, "-m", "memlab", *argv],
            cwd=cwd,
            env=full_env,
            stdout=out,
            stderr=err,
            stdin=subprocess.DEVNULL,
            # A test run started in the background by a shell ignores SIGINT, and a child
            # inherits that: Python then installs no Ctrl-C handler and the interrupt rows
            # would wait for the server. The command gets SIGINT as a terminal would give it.
            preexec_fn=_default_sigint,
        )
        sent: float | None = None
        status, usage, why = _wait(proc, started, timeout, interrupt_when)
        if why == "interrupt":
            sent = time.monotonic()
            proc.send_signal(signal.SIGINT)
            status, usage, why = _wait(proc, started, timeout, None)
        seconds = time.monotonic() - started
        hung = status is None or usage is None
        if hung:  # still running at the timeout
            # SIGABRT first: faulthandler writes every thread's stack to stderr, so the
            # failure shows where it hung; then kill.
            proc.send_signal(signal.SIGABRT)
            status, usage, why = _wait(proc, time.monotonic(), 5.0, None)
            if status is None or usage is None:
                proc.kill()
                _pid, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = -9
        code = -9 if hung else os.waitstatus_to_exitcode(status)  # -9: killed as hung
        out.seek(0)
        err.seek(0)
        return Finished(
            code=code,
            out=out.read().decode("utf-8", "replace"),
            err=err.read().decode("utf-8", "replace"),
            rss_bytes=usage.ru_maxrss * 1024,
            seconds=seconds,
            cpu_seconds=usage.ru_utime + usage.ru_stime,
            interrupted_after=None if sent is None else time.monotonic() - sent,
        )


def _default_sigint() -> None:
    """In the child before it runs: SIGINT back to its default action."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _wait(
    proc: subprocess.Popen[bytes],
    started: float,
    timeout: float,
    interrupt_when: Callable[[], bool] | None,
) -> tuple[int | None, resource.struct_rusage | None, str]:
    """Wait for ``proc`` with ``wait4``: (status, usage, ``"exited"``), or (None, None, why)
    when it is still running at the timeout or ``interrupt_when`` became true."""
    while time.monotonic() - started < timeout:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return status, usage, "exited"
        if interrupt_when is not None and interrupt_when():
            return None, None, "interrupt"
        time.sleep(0.05)
    return None, None, "timeout"


@contextlib.contextmanager
def read_only(path: Path) -> Iterator[bool]:
    """Make the directory ``path`` (and what is in it) read-only for this process, also as
    root (``chattr +i``); yields whether that worked, and undoes it afterwards."""
    directories = [path, *(p for p in path.rglob("*") if p.is_dir() and not p.is_symlink())]
    if os.geteuid() == 0:
        chattr = shutil.which("chattr")
        flagged = [
            d
            for d in directories
            if chattr
            and subprocess.run([chattr, "+i", str(d)], capture_output=True).returncode == 0
        ]
        try:
            yield _unwritable(path)
        finally:
            for d in flagged:
                subprocess.run([chattr or "chattr", "-i", str(d)], capture_output=True)
        return
    modes = {d: d.stat().st_mode for d in directories}
    for d in directories:
        d.chmod(0o555)
    try:
        yield _unwritable(path)
    finally:
        for d, mode in modes.items():
            d.chmod(mode)


def _unwritable(path: Path) -> bool:
    probe = path / ".write-probe"
    try:
        probe.write_text("x")
    except OSError:
        return True
    probe.unlink()
    return False
