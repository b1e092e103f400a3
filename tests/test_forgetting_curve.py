"""The forgetting operating curve on personas with the simulated model: the seed's decay
(5% a day, delete below 0.1) against a slower one (1% a day).

The expectations come from the forgetting arithmetic and the simulated profile's declared
rates, computed here from the dataset's timestamps, never from memlab's output:

- an unrecalled memory rated ``r`` lives ``ln(delete_below / r) / ln(1 - decay_per_day)`` days; the
  simulated model stores a fact's key point only when rated 0.9 (the profile's ratings above
  0.7), so 0.9 is the most any memory holds;
- at 1% a day that is longer than any owner's span from first to last session: nothing can
  decay, and a question is answered when its facts were kept as key points, rated above the
  threshold and answered (``summary_keep_rate * P(0.9) * answer_rate`` per fact);
- at 5% a day a fact said in session ``m`` can still be in memory after session ``k`` only
  when every gap from a session's end to the next one's start, ``m`` to ``k``, is shorter
  than the lifetime (a recall restarts decay at most at the session's end); otherwise the
  answer is right only if a wrong guess is accepted (``(1 - abstain_rate) * leniency``).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from memlab.datasets import Owner, load_dataset, resolve_dataset
from memlab.grids.grid import Grid
from memlab.postrun.consolidation import memory_sizes
from memlab.postrun.retention import ask_retention, retention_sessions
from memlab.scoring.retention import compare_retention, retention_table
from memlab.simulation.profile import load_profile
from memlab.sweeps.driver import sweep

DAY = 86_400.0
SEED = {"decay_per_day": 0.05, "delete_below": 0.1}
SLOW = {"decay_per_day": 0.01, "delete_below": 0.1}


def lifetime(rating: float, decay_per_day: float, delete_below: float) -> float:
    """Days until ``rating * (1 - decay_per_day) ** days`` falls below ``delete_below``."""
    return math.log(delete_below / rating) / math.log(1.0 - decay_per_day)


def mentions(owner: Owner, fact_id: str) -> list[int]:
    return [i for i, s in enumerate(owner.sessions) if any(f.id == fact_id for f in s.labels.facts)]


def may_survive(owner: Owner, fact_id: str, k: int, life: float) -> bool:
    """Whether a memory of the fact can be held after session ``k`` (module docstring)."""
    said = [m for m in mentions(owner, fact_id) if m <= k]
    if not said:
        return False
    sessions = owner.sessions
    gaps = [
        (sessions[j + 1].started_at - sessions[j].ended_at).total_seconds() / DAY
        for j in range(said[-1], k)
    ]
    return all(gap <= life for gap in gaps)


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, dict[str, dict[str, float]]]:
    runs: Path = tmp_path_factory.mktemp("runs")
    grid = Grid.from_mapping(
        {
            "name": "forgetting",
            "dataset": "personas",
            "base": {"backend": "sim:careful", "memory": "tiered"},
            "axes": {"tiered": [{}, {"decay_per_day": SLOW["decay_per_day"]}]},
            "qa": {"answer_backend": "sim:careful", "judges": ["strict"], "conditions": ["memory"]},
        }
    )
    run = sweep("personas", grid, runs_dir=runs, progress=False, max_workers=1)
    answers = ask_retention(run, max_workers=1)
    found = retention_table(answers, memory_sizes(run), run.judge, options=run.stats)
    seed_lane, slow_lane = list(run.lanes)
    found = compare_retention(found, seed_lane)
    rows = {
        name: found[found["lane_id"] == lane].iloc[0].to_dict()
        for name, lane in (("seed", seed_lane), ("slow", slow_lane))
    }
    return answers, rows


def expected(rules: dict[str, float], judge: str = "strict") -> tuple[float, int]:
    """The retained share the declared rates imply (an upper bound where facts may decay) and
    the number of answers asked."""
    profile = load_profile("careful")
    kept = profile.tiered.summary_keep_rate * sum(
        w for r, w in profile.tiered.importance.items() if r > 0.7
    )
    guess = (1 - profile.qa.abstain_rate) * profile.qa.leniency(judge)
    life = lifetime(0.9, rules["decay_per_day"], rules["delete_below"])
    total, asked = 0.0, 0
    for owner in load_dataset(resolve_dataset("personas")):
        for question in owner.questions:
            if question.kind != "answerable":
                continue
            for k in retention_sessions(owner, question):
                facts = question.evidence.facts
                alive = all(may_survive(owner, f, k, life) for f in facts)
                chance = (kept ** len(facts)) * profile.qa.answer_rate if alive else 0.0
                total += chance + (1 - chance) * guess
                asked += 1
    return total / asked, asked


def test_nothing_can_decay_at_one_percent_a_day() -> None:
    spans = [
        (o.sessions[-1].started_at - o.sessions[0].started_at).total_seconds() / DAY
        for o in load_dataset(resolve_dataset("personas"))
    ]
    assert lifetime(0.9, **SLOW) > max(spans)
    assert lifetime(0.9, **SEED) < max(spans)


def test_the_slow_decay_retains_what_the_rates_imply(table: tuple[object, dict]) -> None:
    _, rows = table
    want, asked = expected(SLOW)
    slow = rows["slow"]
    assert slow["asked"] == asked == rows["seed"]["asked"]
    assert slow["retained_lo"] <= want <= slow["retained_hi"]


def test_the_seed_decay_retains_no_more_than_the_arithmetic_allows(
    table: tuple[object, dict],
) -> None:
    _, rows = table
    bound, _ = expected(SEED)
    assert rows["seed"]["retained_lo"] <= bound


def test_the_slow_decay_interval_excludes_the_seed_default(table: tuple[object, dict]) -> None:
    _, rows = table
    slow_want, _ = expected(SLOW)
    seed_bound, _ = expected(SEED)
    assert slow_want > seed_bound  # what the declared behaviour implies
    assert rows["slow"]["retained_lo"] > rows["seed"]["retained_hi"]
    assert rows["slow"]["vs_reference"] == "above"
    # the slower decay keeps more memories: a larger memory, so it is not selected
    assert rows["slow"]["memory_tokens"] > rows["seed"]["memory_tokens"]
    assert not rows["slow"]["selected"]


def test_recall_refreshes_is_left_out_of_the_identity_at_its_default() -> None:
    from memlab.grids.lane import LaneConfig
    from memlab.memory.tiers.tiered import lane_settings, tiered_identity

    seed = LaneConfig(memory="tiered")
    same = LaneConfig(memory="tiered", tiered={"recall_refreshes": True})
    off = LaneConfig(memory="tiered", tiered={"recall_refreshes": False})
    assert same.point_id == seed.point_id
    assert off.point_id != seed.point_id
    assert "recall_refreshes" not in tiered_identity(lane_settings(seed.settings()))["settings"]
    assert lane_settings(off.settings()).recall_refreshes is False
