"""A simulated run's files, pinned: speed work on the replay and scoring path changes no byte.

The simulated model is deterministic, so a sweep of the bundled ``personas`` dataset writes the
same records, snapshots, store files, metrics and summary every time, apart from wall-clock
timings. The fingerprint below hashes every file of the run with those timings (and the
manifest's file hashes, which cover them) left out. It was computed on the code before the
cached replay was made faster, computed again when session rows gained ``memory_tokens``
(every other byte equal), and again when records, rows and metrics gained the prompt-echo
counts (``n_echoed``, ``echoed``, ``echo_rate``: 0 here; stored memories unchanged); a change
that alters any record, metric or stored memory, however slightly, changes it.

Three runs: a debounced sweep of the simulated model (two lanes, one evicting at ``max_facts``
10); a ``per_session`` sweep of the same replies recorded through a response cache; and that
sweep replayed from the cache in read-only mode, with a backend that refuses every call.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from memlab.backends.caching.cache import CacheMode
from memlab.core.pipeline.llm import Backend, BackendError, Completion, CompletionRequest
from memlab.datasets.loader import load_dataset
from memlab.datasets.registry import resolve_dataset
from memlab.grids.grid import Grid
from memlab.simulation.model import SimulatedBackend
from memlab.sweeps.driver import sweep

TIMINGS = {"duration_s", "latency_s"}  # wall-clock measurements differ between runs
# grid.yaml names the bundled dataset by its absolute path, which depends on the checkout.
CHECKOUT = str(Path(__file__).resolve().parents[1])

# Re-pinned when rates at 0 or 1 gained exact intervals: only summary.csv's interval bounds
# (parse failure, backend error, forbidden-stored, echo and removal-precision rates) changed.
PINNED = {
    "debounce-recorded": "9caa6748158ec832d03512055282abfe666d36df658336fa460b6f746f322b7f",
    "per_session-recorded": "89dc5322218e6386d249faa335c397f470ddc3cd493af625e9ef8dcd93030fb7",
    "per_session-from-cache": "3679873d32ec700dd619d1994043697403d4ac02a4dd1bf89dbfd341c084ce69",
}


def _normalised(value: Any, *, drop: frozenset[str]) -> Any:
    if isinstance(value, dict):
        return {k: _normalised(v, drop=drop) for k, v in value.items() if k not in drop}
    if isinstance(value, list):
        return [_normalised(v, drop=drop) for v in value]
    return value


def fingerprint(run_dir: Path) -> str:
    """SHA-256 over every file of ``run_dir`` (timings, and the hashes covering them, left out;
    the checkout's path written as ``<checkout>``)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in run_dir.rglob("*") if p.is_file()):
        if path.name == "environment.json":  # versions of the machine's packages
            continue
        drop = frozenset(TIMINGS | ({"sha256"} if path.name == "manifest.json" else set()))
        text = path.read_text(encoding="utf-8").replace(CHECKOUT, "<checkout>")
        if path.suffix == ".json":
            text = json.dumps(_normalised(json.loads(text), drop=drop), sort_keys=True)
        elif path.suffix == ".jsonl":
            text = "\n".join(
                json.dumps(_normalised(json.loads(line), drop=drop), sort_keys=True)
                for line in text.splitlines()
            )
        digest.update(path.relative_to(run_dir).as_posix().encode() + b"\0")
        digest.update(text.encode("utf-8") + b"\0")
    return digest.hexdigest()


class _Cacheable:
    """The simulated model's replies under a cacheable backend's name (the simulated model's
    own are never cached); with no model behind it, it refuses every call."""

    name = "scripted"
    model = "scripted"

    def __init__(self, sim: SimulatedBackend | None) -> None:
        self.sim = sim

    def complete(self, request: CompletionRequest) -> Completion:
        if self.sim is None:
            raise BackendError("the replay from cache called the backend")
        return self.sim.complete(request)


def _sweep(
    tmp: Path, mode: str, name: str, backend: Backend, cache: CacheMode, axes: dict[str, Any]
) -> Path:
    spec = "scripted" if isinstance(backend, _Cacheable) else "sim:chatty"
    grid = Grid.from_mapping(
        {
            "name": f"pin-{mode}",
            "dataset": "personas",
            "replay_mode": mode,
            "base": {"backend": spec},
            "axes": axes,
        }
    )
    sweep(
        "personas",
        grid,
        runs_dir=tmp / "runs",
        run_name=name,
        backend_factory=lambda _spec: backend,
        cache_dir=tmp / "cache",
        cache_mode=cache,
        max_workers=2,
        progress=False,
    )
    return tmp / "runs" / name


def test_simulated_runs_write_the_pinned_files(tmp_path: Path) -> None:
    sim = SimulatedBackend("chatty", dataset=load_dataset(resolve_dataset("personas")))
    got = {
        "debounce-recorded": fingerprint(
            _sweep(tmp_path, "debounce", "a", sim, CacheMode.READ_WRITE, {"max_facts": [10, 500]})
        ),
        "per_session-recorded": fingerprint(
            _sweep(tmp_path, "per_session", "b", _Cacheable(sim), CacheMode.READ_WRITE, {})
        ),
        "per_session-from-cache": fingerprint(
            _sweep(tmp_path, "per_session", "c", _Cacheable(None), CacheMode.READ_ONLY, {})
        ),
    }
    assert got == PINNED
