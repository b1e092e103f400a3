"""One plugin path: registries, entry points, and a backend from an installed package.

``tests/plugins/memlab-echo`` is installed into the test environment by scripts/setup.sh (the
dev extra). memlab knows nothing of it but its ``memlab.plugins`` entry point: these tests run
``memlab run``, ``memlab sweep`` and a sweep on a local Dask cluster with its ``echo`` backend
in fresh processes, so nothing registered in this process helps.
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from memlab import plugins
from memlab.backends.registry import BACKENDS, backend_plugin, price_table, resolve_backend
from memlab.core.pipeline.llm import OutputMode
from memlab.runs.run import load_run

pytestmark = pytest.mark.skipif(
    not any(ep.name == "echo" for ep in metadata.entry_points(group=plugins.PLUGIN_GROUP)),
    reason="the example plugin is not installed: pip install -e tests/plugins/memlab-echo",
)

GRID = """name: echoes
dataset: smoke
base: {backend: "echo:a"}
axes:
  fact_confidence_threshold: [0.7, 0.95]
"""


def _memlab(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``memlab ARGS`` in a new process (its registries start empty of test registrations)."""
    return subprocess.run(
        [sys.executable, "-m", "memlab", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_the_installed_plugin_declares_its_backend_once() -> None:
    plugin = backend_plugin("echo:x")
    assert BACKENDS.origin("echo").startswith("plugin echo = memlab_echo:register")
    assert plugin.output_modes == {OutputMode.FREE, OutputMode.JSON_OBJECT}
    assert price_table()["echo-"] == (1.0, 2.0)
    assert resolve_backend("echo:x").model == "echo-x"


def test_memlab_run_replays_with_the_plugin_backend(tmp_path: Path) -> None:
    done = _memlab("run", "smoke", "--backend", "echo:demo", "--no-progress", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    run = load_run(tmp_path / "runs" / "run")
    summary = run.summary.iloc[0]
    assert summary["final_facts"] > 0  # each user line became a fact
    assert summary["cost_usd"] > 0  # priced by the plugin's declaration
    assert set(run.calls["backend"]) == {"echo"} and set(run.calls["model"]) == {"echo-demo"}
    packages = json.loads((run.path / "environment.json").read_text())["packages"]
    assert packages["memlab-echo"] == "0.1.0"


def test_a_mode_the_plugin_does_not_declare_is_refused_before_anything_runs(
    tmp_path: Path,
) -> None:
    done = _memlab("run", "smoke", "--backend", "echo:demo", "--mode", "json_schema", cwd=tmp_path)
    assert done.returncode == 2
    assert "does not support output mode json_schema; it supports: free, json_object" in (
        done.stderr
    )
    assert not (tmp_path / "runs").exists()


@pytest.mark.dask
def test_memlab_sweep_and_a_dask_worker_use_the_plugin_backend(tmp_path: Path) -> None:
    pytest.importorskip("distributed", reason="the Dask executor needs memlab[dask]")
    (tmp_path / "grid.yaml").write_text(GRID, encoding="utf-8")
    threads = _memlab("sweep", "grid.yaml", "--no-progress", cwd=tmp_path)
    assert threads.returncode == 0, threads.stderr
    dask = _memlab(
        "sweep", "grid.yaml", "--name", "on-dask", "--executor", "dask-local:1", "--no-progress",
        cwd=tmp_path,
    )  # fmt: skip
    assert dask.returncode == 0, dask.stderr
    local, remote = load_run(tmp_path / "runs" / "echoes"), load_run(tmp_path / "runs" / "on-dask")
    assert list(local.lanes) == list(remote.lanes)
    columns = ["final_facts", "skipped_below_threshold", "recall"]
    assert local.summary[columns].equals(remote.summary[columns])
    # Its facts have confidence 0.9: kept at threshold 0.7, all below 0.95.
    kept, refused = local.summary["final_facts"].tolist()
    assert kept > 0 and refused == 0 and local.summary["skipped_below_threshold"].iloc[1] > 0
    # The worker process built the backend from the spec through the entry point.
    assert set(remote.calls["model"]) == {"echo-a"} and remote.calls["reply"].notna().all()


def test_memlab_plugins_names_who_registered_each_entry(tmp_path: Path) -> None:
    done = _memlab("plugins", "backend", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = {line.split()[0]: line for line in done.stdout.splitlines()[1:]}
    assert set(lines) >= {"openai", "local", "scripted", "auto", "sim", "echo"}
    assert "[plugin echo = memlab_echo:register (memlab-echo)]" in lines["echo"]
    assert "[" not in lines["sim"]  # memlab's own entry point: a built-in


def test_a_broken_plugin_is_skipped_and_named_where_its_name_is_missing(
    fresh_loader: list[Any], caplog: pytest.LogCaptureFixture
) -> None:
    fresh_loader.append(
        metadata.EntryPoint("broken", "memlab_no_such_module:register", plugins.PLUGIN_GROUP)
    )
    assert "openai" in BACKENDS  # reading loads the plugins; the broken one does not stop it
    assert (
        "memlab plugin broken = memlab_no_such_module:register from distribution ? "
        "failed to load (ModuleNotFoundError: " in caplog.text
    )
    with pytest.raises(Exception, match="plugins that failed to load: broken = memlab_no_such"):
        resolve_backend("nowhere:x")


def test_a_plugin_registers_through_the_same_call_as_the_builtins(
    fresh_loader: list[Any],
) -> None:
    registry: plugins.Registry[str] = plugins.Registry("greeting", "greeting")
    registry.register("hello", "hi")
    calls: list[str] = []

    def register() -> None:
        calls.append("loaded")
        registry.register("bonjour", "salut")

    # An installed plugin's entry point, as importlib.metadata gives it.
    entry = SimpleNamespace(name="greetings", value="tests.fake:register", dist=None)
    entry.load = lambda: register
    fresh_loader.append(entry)
    assert list(registry) == ["hello", "bonjour"] and calls == ["loaded"]
    assert list(registry) == ["hello", "bonjour"] and calls == ["loaded"]  # loaded once
    assert registry.origin("hello") == "memlab"
    assert registry.origin("bonjour") == "plugin greetings = tests.fake:register (?)"
    with pytest.raises(plugins.PluginError, match="already registered"):
        registry.register("hello", "hey")
    with pytest.raises(plugins.PluginError, match="unknown greeting 'ciao'; known: hello, bonjour"):
        registry.lookup("ciao")


def test_backends_register_checks_what_register_backend_checks() -> None:
    """The call plugins are told to use and the helper are one path with one set of rules."""
    from memlab.backends.registry import BackendPlugin, register_backend

    plugin = BackendPlugin(lambda argument, **options: None, "x", "x")  # type: ignore[arg-type,return-value]
    for name in ("Bad Name", "a:b", "auto", "openai"):
        with pytest.raises(plugins.RegistrationError) as direct:
            BACKENDS.register(name, plugin)
        with pytest.raises(plugins.RegistrationError) as helper:
            register_backend(name, plugin)
        assert str(direct.value) == str(helper.value)
    with pytest.raises(plugins.RegistrationError, match="an entry is a BackendPlugin"):
        BACKENDS.register("bare", lambda argument, **options: None)  # type: ignore[arg-type]
    assert "bad name" not in BACKENDS and "bare" not in BACKENDS
