"""A bad plugin costs one warning naming it, never a command: memlab.plugins' guard and rules.

The command-line tests install fake distributions the way pip does (a ``*.dist-info``
directory with ``entry_points.txt`` next to the module) in a directory on ``PYTHONPATH`` of a
fresh ``memlab`` process; the unit tests feed the loader entry points directly.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from importlib import metadata
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from plugin_loader import fresh_plugin_loader

from memlab import plugins
from memlab.backends.registry import BACKENDS, BackendPlugin, register_backend
from memlab.backends.scripted import ScriptedBackend
from memlab.runs.run import load_run

# Entry point names sort before memlab's own ("backends", "reporting", "simulation"): before
# the fix, the `sim` grabber ran first and took the name from the built-in.
BAD_PLUGINS = {
    "memlab-exits": ("aa-exit", "import sys\n\ndef register():\n    sys.exit(3)\n"),
    "memlab-interrupts": ("aa-interrupt", "def register():\n    raise KeyboardInterrupt\n"),
    "memlab-takes-sim": (
        "aa-sim",
        """
        from memlab.backends.registry import BACKENDS, BackendPlugin
        from memlab.backends.scripted import ScriptedBackend

        def register():
            BACKENDS.register("sim", BackendPlugin(ScriptedBackend, "not sim", "sim"))
        """,
    ),
    "memlab-bad-name": (
        "aa-name",
        """
        from memlab.backends.registry import BACKENDS

        def register():
            BACKENDS.register("../x:y", object())
        """,
    ),
    "memlab-wrong-type": (
        "aa-type",
        """
        from memlab.backends.registry import BACKENDS

        def register():
            BACKENDS.register("wrong", object())
            BACKENDS.register("right", BACKENDS["scripted"])  # still registered
        """,
    ),
}

# A plugin whose register() is the first to import a memlab module: that module's built-ins
# stay memlab's.
LATE_IMPORT = (
    "aa-late",
    """
    def register():
        from memlab.matching.judge import FACT_JUDGE_PROMPTS

        FACT_JUDGE_PROMPTS.register("mine", "{claim} {facts}")
    """,
)


def _install(site: Path, dist: str, entry: str, source: str) -> None:
    """A distribution ``dist`` whose ``memlab.plugins`` entry point ``entry`` is ``register``
    of a module holding ``source``."""
    module = dist.replace("-", "_")
    info = site / f"{module}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[memlab.plugins]\n{entry} = {module}:register\n")
    (site / f"{module}.py").write_text(textwrap.dedent(source), encoding="utf-8")


def _memlab(site: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


@pytest.fixture
def bad_site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    for dist, (entry, source) in {**BAD_PLUGINS, "memlab-late": LATE_IMPORT}.items():
        _install(site, dist, entry, source)
    return site


def _warnings_by_dist(stderr: str) -> dict[str, list[str]]:
    lines = [line for line in stderr.splitlines() if "memlab plugin " in line]
    named = {dist: (f"distribution {dist} ", f"distribution {dist}:") for dist in BAD_PLUGINS}
    return {dist: [s for s in lines if any(n in s for n in names)] for dist, names in named.items()}


def test_a_run_with_bad_plugins_installed_completes_with_one_warning_per_plugin(
    bad_site: Path, tmp_path: Path
) -> None:
    args = ("-m", "memlab", "run", "smoke", "--backend", "sim:careful", "--no-progress")
    done = _memlab(bad_site, *args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    found = _warnings_by_dist(done.stderr)
    assert {dist: len(lines) for dist, lines in found.items()} == dict.fromkeys(BAD_PLUGINS, 1)
    assert "failed to load (SystemExit: 3)" in found["memlab-exits"][0]
    assert "failed to load (KeyboardInterrupt)" in found["memlab-interrupts"][0]
    assert "backend prefix 'sim' is memlab's built-in" in found["memlab-takes-sim"][0]
    assert "invalid backend prefix '../x:y'" in found["memlab-bad-name"][0]
    assert "'wrong': an entry is a BackendPlugin, got object" in found["memlab-wrong-type"][0]
    assert "memlab-late" not in done.stderr  # a good plugin: no warning
    # The replay ran on memlab's simulated model, not on the plugin's stand-in.
    calls = load_run(tmp_path / "runs" / "run").calls
    assert len(calls) > 0 and set(calls["backend"]) == {"sim"}


def test_memlab_plugins_lists_the_builtins_and_each_problem_once(
    bad_site: Path, tmp_path: Path
) -> None:
    done = _memlab(bad_site, "-m", "memlab", "plugins", "backend", cwd=tmp_path)
    assert done.returncode == 1  # problems found; the listing is complete
    entries = {line.split()[0]: line for line in done.stdout.splitlines() if line.startswith("  ")}
    assert "[" not in entries["sim"]  # memlab's, not the grabber's
    assert entries["right"].endswith(
        "[plugin aa-type = memlab_wrong_type:register (memlab-wrong-type)]"
    )
    assert "wrong" not in entries and "../x:y" not in entries
    problems = [line for line in done.stdout.splitlines() if line.startswith("memlab plugin ")]
    assert len(problems) == len(BAD_PLUGINS)


def test_builtins_a_plugin_imports_first_stay_memlabs(bad_site: Path, tmp_path: Path) -> None:
    code = (
        "import sys; from memlab.backends.registry import BACKENDS; "
        "assert 'memlab.matching.judge' not in sys.modules; list(BACKENDS); "
        "from memlab.matching.judge import FACT_JUDGE_PROMPTS as J; "
        "print(J.origin('lenient')); print(J.origin('mine'))"
    )
    done = _memlab(bad_site, "-c", code, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "memlab",
        "plugin aa-late = memlab_late:register (memlab-late)",
    ]


def _entry(name: str, hook: Any, dist: str | None = "some-plugin") -> SimpleNamespace:
    """An entry point as importlib.metadata gives it, loading ``hook``."""
    entry = SimpleNamespace(
        name=name, value=f"fake:{name}", dist=None if dist is None else SimpleNamespace(name=dist)
    )
    entry.load = lambda: hook
    return entry


def test_a_plugin_exiting_or_interrupting_itself_is_skipped(fresh_loader: list[Any]) -> None:
    calls: list[str] = []

    def exits() -> None:
        calls.append("exits")
        raise SystemExit(3)

    def interrupts() -> None:
        calls.append("interrupts")
        raise KeyboardInterrupt

    def raises_base() -> None:
        calls.append("base")
        raise GeneratorExit

    fresh_loader.extend(
        [_entry("a", exits), _entry("b", interrupts), _entry("c", raises_base),
         _entry("d", lambda: calls.append("fine"))]
    )  # fmt: skip
    assert "openai" in BACKENDS
    assert calls == ["exits", "interrupts", "base", "fine"]
    assert plugins.plugin_failures() == {
        "a = fake:a": "SystemExit: 3",
        "b = fake:b": "KeyboardInterrupt",
        "c = fake:c": "GeneratorExit",
    }
    assert plugins.plugin_warnings()[0] == (
        "memlab plugin a = fake:a from distribution some-plugin failed to load (SystemExit: 3); "
        "skipped"
    )


def test_a_real_ctrl_c_while_plugins_load_still_stops(fresh_loader: list[Any]) -> None:
    # Python's own Ctrl-C handler, as at a terminal: a test run started in the background
    # ignores SIGINT, and then the signal below would raise nothing.
    original = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        before = signal.getsignal(signal.SIGINT)
        later: list[str] = []
        fresh_loader.extend(
            [_entry("a", lambda: os.kill(os.getpid(), signal.SIGINT)), _entry("b", later.append)]
        )
        with pytest.raises(KeyboardInterrupt):
            plugins.load_plugins()
        assert later == [] and plugins.plugin_failures() == {}
        assert signal.getsignal(signal.SIGINT) is before  # the handler noting it is gone
    finally:
        signal.signal(signal.SIGINT, original)


def test_memlabs_own_entry_points_load_first(fresh_loader: list[Any]) -> None:
    order: list[str] = []
    fresh_loader.extend(
        [_entry(name, lambda name=name: order.append(name), dist)
         for name, dist in [("zz", "memlab"), ("aa", "other"), ("ab", None), ("b", "memlab")]]
    )  # fmt: skip
    plugins.load_plugins()
    assert order == ["b", "zz", "aa", "ab"]


@pytest.mark.parametrize(
    "name",
    ["../x:y", "", " ", "Upper", "a:b", "a/b", "a..b", ".hidden", "-dash", "sp ace", "é",
     "x" * 65, 7, None],
)  # fmt: skip
def test_a_bad_name_is_refused_by_both_registration_calls(name: Any) -> None:
    plugin = BackendPlugin(ScriptedBackend, "test", "x")
    with pytest.raises(plugins.RegistrationError, match=r"invalid backend prefix .*: a name is"):
        BACKENDS.register(name, plugin)
    with pytest.raises(ValueError, match=r"invalid backend prefix .*: a name is"):
        register_backend(name, plugin)
    assert name not in BACKENDS.builtins() and name not in list(BACKENDS)


@pytest.mark.parametrize("name", ["a", "x" * 64, "my-backend_2.1", "0"])
def test_good_names_are_accepted(name: str) -> None:
    registry: plugins.Registry[int] = plugins.Registry("number", "number")
    assert registry.register(name, 1) == 1 and registry.origin(name) == "memlab"


def test_an_entry_of_the_wrong_type_is_refused_by_both_registration_calls() -> None:
    with pytest.raises(plugins.RegistrationError, match="an entry is a BackendPlugin, got str"):
        BACKENDS.register("wrongly", "not a plugin")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="the name is reserved"):
        register_backend("auto", BACKENDS["scripted"], replace=True)
    assert "wrongly" not in BACKENDS and BACKENDS["auto"].example == "auto"


def test_a_plugin_cannot_replace_nor_remove_a_builtin(
    fresh_loader: list[Any], caplog: pytest.LogCaptureFixture
) -> None:
    registry: plugins.Registry[str] = plugins.Registry("greeting", "greeting")
    registry.register("hello", "hi")

    def register() -> None:
        registry.register("hello", "hey", replace=True)
        registry.unregister("hello")
        registry.register("bonjour", "salut")  # the plugin's other entries still load

    fresh_loader.append(_entry("greet", register, "greetings"))
    assert dict(registry) == {"hello": "hi", "bonjour": "salut"}
    assert plugins.plugin_warnings() == [
        "memlab plugin greet = fake:greet from distribution greetings: greeting 'hello' is "
        "memlab's built-in, which a plugin cannot replace; pick another name; skipped",
        "memlab plugin greet = fake:greet from distribution greetings: greeting 'hello' is "
        "memlab's built-in, which a plugin cannot remove; skipped",
    ]
    assert caplog.text.count("memlab plugin greet") == 2
    registry.register("hello", "hey", replace=True)  # memlab's own code may, when asked
    assert registry["hello"] == "hey"


def test_a_broken_plugin_planted_for_one_test_is_not_reported_after_it() -> None:
    """What a planted plugin's load records (its failure, its warning) is the test's own: a
    later test reading the loader (``memlab plugins`` exits 1 on a warning) finds it as it was."""
    before = (plugins.plugin_failures(), plugins.plugin_warnings())
    broken = metadata.EntryPoint("broken", "memlab_no_such_module:register", plugins.PLUGIN_GROUP)
    with fresh_plugin_loader() as found:
        found.append(broken)
        assert list(plugins.plugin_failures()) == ["broken = memlab_no_such_module:register"]
        assert len(plugins.plugin_warnings()) == 1
    assert (plugins.plugin_failures(), plugins.plugin_warnings()) == before
