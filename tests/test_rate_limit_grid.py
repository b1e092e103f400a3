"""The grid's ``rate_limit:`` key and the pace of a sweep's Dask workers.

The limits set in a grid reach the limiter of every rate-limited backend the sweep builds,
``--rpm``/``--tpm`` override them value by value, and they change no lane id. On Dask each
worker process paces at its share of the limit (configured or learned).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from memlab.backends.caching.cache import CacheMode
from memlab.backends.remote.openai_compat import OpenAICompatibleBackend
from memlab.backends.remote.rate_limit import RateLimit, RateLimiter
from memlab.core.base.clock import VirtualScheduler
from memlab.core.pipeline.llm import Completion, CompletionRequest
from memlab.datasets.loader import load_dataset
from memlab.datasets.registry import resolve_dataset
from memlab.grids.grid import Grid, GridError
from memlab.grids.lane_backends import LaneBackends
from memlab.grids.rate_limit_spec import limits_with_override
from memlab.simulation.model import SimulatedBackend
from memlab.sweeps.driver import sweep
from memlab.sweeps.executors import DaskPool
from memlab.sweeps.plan import load_grid
from memlab.sweeps.remote import WorkerBackends, worker_backend

T0 = datetime(2025, 1, 1, tzinfo=UTC)

LIMITS = {
    "requests_per_minute": 500,
    "tokens_per_minute": 200_000,
    "backends": {"openai:big": {"requests_per_minute": 60}},
}


def _grid(**keys: Any) -> Grid:
    return Grid.from_mapping({"name": "g", "dataset": "personas", **keys})


def test_the_grid_key_gives_limits_by_backend_over_the_grid_wide_values() -> None:
    grid = _grid(rate_limit=LIMITS)
    assert grid.rate_limit is not None
    # openai:big sets its requests only: its tokens are the grid-wide 200,000.
    assert grid.rate_limit.limits() == {
        "openai:big": RateLimit(rpm=60, tpm=200_000),
        "*": RateLimit(rpm=500, tpm=200_000),
    }


def test_rpm_and_tpm_given_override_the_grid_everywhere_value_by_value() -> None:
    spec = _grid(rate_limit=LIMITS).rate_limit
    assert limits_with_override(spec, RateLimit(rpm=30)) == {
        "openai:big": RateLimit(rpm=30, tpm=200_000),
        "*": RateLimit(rpm=30, tpm=200_000),
    }
    assert limits_with_override(None, RateLimit(tpm=1_000)) == {"*": RateLimit(tpm=1_000)}
    assert limits_with_override(None, None) == {}


def test_rate_limits_change_no_lane_id() -> None:
    axes = {"backend": ["sim:chatty", "openai:big"], "max_facts": [10, 500]}
    # A lane's id is a digest of its configuration and its backend's identity.
    plain = [lane.model_dump() for lane in _grid(axes=axes).lanes()]
    paced = [lane.model_dump() for lane in _grid(axes=axes, rate_limit=LIMITS).lanes()]
    assert paced == plain and len(plain) == 4


ALL_KEYS = "known keys: requests_per_minute, tokens_per_minute, backends"
BACKEND_KEYS = "known keys: requests_per_minute, tokens_per_minute"


@pytest.mark.parametrize(
    ("text", "key", "line", "problem"),
    [
        ("  requests_per_minte: 5\n", "rate_limit.requests_per_minte", 2, ALL_KEYS),
        ("  backends:\n    openai:x: {rpm: 5}\n", "backends.openai:x.rpm", None, BACKEND_KEYS),
        ("  tokens_per_minute: -1\n", "rate_limit.tokens_per_minute", 2, "greater than 0"),
        ("  backends:\n    openai:x: {}\n", "rate_limit.backends", 3, "openai:x: set requests"),
    ],
)
def test_a_bad_rate_limit_is_one_line_naming_file_line_and_key(
    tmp_path: Path, text: str, key: str, line: int | None, problem: str
) -> None:
    path = tmp_path / "grid.yaml"
    path.write_text("name: g\ndataset: personas\nrate_limit:\n" + text)
    with pytest.raises(GridError) as info:
        load_grid(path)
    message = str(info.value)
    assert "\n" not in message and key in message and problem in message
    if line is not None:
        assert f"{path}:{line + 2}" in message  # two lines before rate_limit:


class _Paced:
    """The simulated model behind a rate-limited backend's interface (an instrument: the
    sweep hands it the limiter of its endpoint and model, as it does an OpenAI backend)."""

    name = "sim"
    model = "m"

    def __init__(self, sim: Any) -> None:
        self.sim = sim
        self.rate_limiter = RateLimiter()

    def rate_limit_key(self) -> tuple[str, str]:
        return ("loopback", "m")

    def complete(self, request: CompletionRequest) -> Completion:
        return self.sim.complete(request)


@pytest.mark.parametrize(
    ("override", "expected"),
    [(None, RateLimit(rpm=500, tpm=200_000)), (RateLimit(tpm=1_000), RateLimit(500, 1_000))],
)
def test_a_sweep_paces_at_the_grids_limits_unless_the_call_overrides_them(
    tmp_path: Path, override: RateLimit | None, expected: RateLimit
) -> None:
    sim = SimulatedBackend("chatty", dataset=load_dataset(resolve_dataset("personas")))
    backend = _Paced(sim)
    grid = _grid(base={"backend": "sim:chatty"}, max_owners=1, rate_limit=LIMITS)
    run = sweep(
        "personas",
        grid,
        runs_dir=tmp_path,
        backend_factory=lambda _spec: backend,
        progress=False,
        rate_limit=override,
    )
    assert backend.rate_limiter.limit == expected
    written = yaml.safe_load((run.path / "grid.yaml").read_text())["grid"]
    assert written["rate_limit"]["requests_per_minute"] == 500


def test_a_grid_without_the_key_writes_grid_yaml_without_it(tmp_path: Path) -> None:
    sim = SimulatedBackend("chatty", dataset=load_dataset(resolve_dataset("personas")))
    grid = _grid(base={"backend": "sim:chatty"}, max_owners=1)
    run = sweep("personas", grid, runs_dir=tmp_path, backend_factory=lambda _s: sim, progress=False)
    assert "rate_limit" not in yaml.safe_load((run.path / "grid.yaml").read_text())["grid"]


def test_a_limiter_in_n_parts_paces_at_its_share_of_configured_and_learned_limits() -> None:
    clock = VirtualScheduler(T0)
    half = RateLimiter(RateLimit(rpm=120), clock, parts=2)  # 1 a second, capacity 1
    assert [half.reserve(0) for _ in range(3)] == [0.0, 1.0, 2.0]
    learned = RateLimiter(None, VirtualScheduler(T0), parts=4)
    learned.observe({"x-ratelimit-limit-requests": "600", "x-ratelimit-limit-tokens": "6000"})
    assert learned.limit == RateLimit(rpm=150, tpm=1_500)
    with pytest.raises(ValueError, match="parts"):
        RateLimiter(parts=0)


def _openai(spec: str) -> OpenAICompatibleBackend:
    model = spec.split(":", 1)[1].split("@")[0]
    return OpenAICompatibleBackend(model, base_url="http://127.0.0.1:9/v1", api_key="k")


def test_a_worker_paces_its_backends_at_its_share_shared_by_its_threads() -> None:
    source = WorkerBackends(
        _openai, "test-share", limits={"*": RateLimit(rpm=600, tpm=60_000)}, parts=2
    )
    a, _ = worker_backend(source, "openai:m")
    b, _ = worker_backend(source, "openai:m@other")  # same endpoint and model
    assert isinstance(a, OpenAICompatibleBackend) and isinstance(b, OpenAICompatibleBackend)
    assert a.rate_limiter is b.rate_limiter
    assert a.rate_limiter.limit == RateLimit(rpm=300, tpm=30_000)


class _Client:
    """The part of a ``distributed.Client`` a pool uses, with two workers connected."""

    def __init__(self) -> None:
        self.sent: list[Any] = []

    def scheduler_info(self) -> dict[str, Any]:
        return {"workers": {"tcp://a": {}, "tcp://b": {}}}

    def submit(self, function: Any, *args: Any, **options: Any) -> object:
        self.sent.append(args)
        return object()


def test_a_dask_pool_sends_the_limits_and_the_number_of_workers_sharing_them() -> None:
    from memlab.backends.remote.rate_limit import RateLimiters

    limits = {"*": RateLimit(rpm=600)}
    lanes = LaneBackends(_openai, None, CacheMode.OFF, rates=RateLimiters(limits))
    client = _Client()
    pool = DaskPool(client, lanes, "debounce")
    source = pool_source(pool, client)
    assert source.limits == limits and source.parts == 2


def pool_source(pool: DaskPool, client: _Client) -> WorkerBackends:
    """The :class:`WorkerBackends` a pool sends with its tasks."""
    pool.submit([(_Lane(), _Owner(), 0)])  # type: ignore[list-item]
    sent = client.sent[-1][1]
    assert isinstance(sent, WorkerBackends)
    return sent


class _Lane:
    lane_id = "l"


class _Owner:
    user_id = "u"


@pytest.mark.parametrize(
    ("override", "expected"),
    [(None, RateLimit(rpm=500, tpm=200_000)), (RateLimit(rpm=5), RateLimit(5, 200_000))],
)
def test_memlab_qa_paces_at_the_runs_grid_limits_unless_rpm_or_tpm_override_them(
    tmp_path: Path, override: RateLimit | None, expected: RateLimit
) -> None:
    from memlab.grids.qa_spec import QASpec, resolve_prompts
    from memlab.postrun.qa_step import add_qa, qa_backend

    sim = SimulatedBackend("chatty", dataset=load_dataset(resolve_dataset("personas")))
    grid = _grid(base={"backend": "sim:chatty"}, max_owners=1, rate_limit=LIMITS)
    run = sweep("personas", grid, runs_dir=tmp_path, backend_factory=lambda _s: sim, progress=False)
    spec = QASpec(answer_backend="sim:careful", judges=["lenient"], conditions=["memory"])
    judges = resolve_prompts(spec).judges
    answerer = _Paced(qa_backend("sim:careful", resolve_dataset("personas"), judges))
    add_qa(run.path, spec, backend_factory=lambda _s: answerer, rate_limit=override)
    assert answerer.rate_limiter.limit == expected
