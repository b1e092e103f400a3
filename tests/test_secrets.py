"""Secrets stay in memory: a server on 127.0.0.1 that echoes the API key (plain, JSON-escaped,
in the Authorization header it repeats, in error bodies) and a password in the base URL reach
no byte memlab writes and no line it shows, with the thread and the Dask executors."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from fake_openai import SECRET, HostileServer
from hostile import PASSWORD, leaks

from memlab.backends.remote.openai_compat import OpenAICompatibleBackend
from memlab.backends.remote.retry import RetryPolicy
from memlab.cli.main import main
from memlab.core.base.redact import REDACTED, RedactingFilter, redact, redact_text
from memlab.grids.grid import Grid
from memlab.sweeps.driver import IncompleteSweepError, sweep

pytestmark = pytest.mark.integration  # real HTTP requests to a loopback server

GRID = Grid.from_mapping({"name": "echo", "base": {"backend": "openai:probe-model"}})
EXECUTORS = [
    pytest.param(None, id="threads"),
    pytest.param("dask-local:1", id="dask", marks=pytest.mark.dask),
]


@pytest.fixture(params=EXECUTORS)
def executor(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str | None:
    """The executor under test, with the secret key in the environment (also the workers')."""
    if request.param is not None:
        pytest.importorskip("distributed")
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    value: str | None = request.param
    return value


def _sweep(tmp_path: Path, executor: str | None, grid: Grid = GRID) -> Any:
    return sweep(
        "smoke",
        grid,
        runs_dir=tmp_path / "runs",
        cache_dir=tmp_path / "cache",
        executor=executor,
        progress=False,
    )


def test_an_echoed_key_reaches_memory_redacted_and_no_file(
    executor: str | None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    with HostileServer("echo") as server, caplog.at_level(logging.DEBUG):
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        run = _sweep(tmp_path, executor)
        assert server.requests > 0
    facts = run.final_facts(next(iter(run.lanes)))
    # The echoed facts were stored, with the key in each of its three forms redacted.
    contents = set(facts["content"])
    assert f"Uses key {REDACTED}" in contents
    assert "Escaped key [REDACTED]" in contents
    assert any(c.startswith("Header was Bearer") and REDACTED in c for c in contents)
    out, err = capfd.readouterr()
    assert leaks(tmp_path, [out, err, caplog.text]) == []


@pytest.mark.parametrize("mode", ["status:401", "status:500"])
def test_keys_in_error_bodies_and_url_passwords_reach_no_file_or_line(
    executor: str | None,
    mode: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    grid = GRID.model_copy(update={"max_owners": 1, "max_sessions": 1})
    with HostileServer(mode) as server, caplog.at_level(logging.DEBUG):
        port = server.httpd.server_address[1]
        monkeypatch.setenv("OPENAI_BASE_URL", f"http://probe-user:{PASSWORD}@127.0.0.1:{port}/v1")
        with pytest.raises(IncompleteSweepError) as failed:
            _sweep(tmp_path, executor, grid)
    if mode == "status:500":  # retried: every attempt got a body that echoes the key
        assert server.requests >= 5
    message = str(failed.value)
    assert mode.split(":")[1] in message and REDACTED in message
    out, err = capfd.readouterr()
    assert leaks(tmp_path, [out, err, caplog.text, message]) == []


def test_the_command_line_shows_no_secret_in_errors_or_logs(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with HostileServer("status:401") as server, caplog.at_level(logging.DEBUG):
        port = server.httpd.server_address[1]
        monkeypatch.setenv("OPENAI_BASE_URL", f"http://probe-user:{PASSWORD}@127.0.0.1:{port}/v1")
        code = main(["-vv", "run", "smoke", "--backend", "openai:m", "--no-progress"])
    out, err = capsys.readouterr()
    assert code == 1 and "401" in err
    assert leaks(tmp_path, [out, err, caplog.text]) == []


def test_a_key_given_in_code_is_redacted_like_one_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    key = "sk-given-in-code-0123456789"
    with HostileServer("status:401") as server:
        backend = OpenAICompatibleBackend(
            "m", base_url=server.base_url, api_key=key, retry=RetryPolicy(max_attempts=1)
        )
        assert key not in repr(backend)
    assert redact_text(f"echo {key}") == f"echo {REDACTED}"
    assert redact({"a": [f"x{key}y"]}) == {"a": [f"x{REDACTED}y"]}


def test_a_log_record_is_redacted_by_the_filter() -> None:
    record = logging.LogRecord("memlab", logging.WARNING, __file__, 1, "key %s in %s", (
        SECRET, f"https://u:{PASSWORD}@h/v1"), None)  # fmt: skip
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_API_KEY", SECRET)
        assert RedactingFilter().filter(record)
    shown = record.getMessage()
    assert SECRET not in shown and PASSWORD not in shown
    assert shown == f"key {REDACTED} in https://{REDACTED}@h/v1"


def test_redaction_keeps_json_valid_and_catches_escaped_forms() -> None:
    escaped_key = "".join(f"\\u{ord(c):04x}" for c in SECRET)
    reply = '{"content": "' + escaped_key + '", "other": "' + SECRET.upper() + '"}'
    cleaned = redact_text(reply, [SECRET])
    assert json.loads(cleaned)["content"] == REDACTED
    assert SECRET.upper() in cleaned  # another value: not a secret
    twice = json.dumps(reply)  # the reply stored as a string inside a JSON record
    assert escaped_key.replace("\\", "\\\\") not in redact_text(twice, [SECRET])
