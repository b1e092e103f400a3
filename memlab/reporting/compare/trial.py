"""Try an edited prompt on part of a finished run: the prompt engineer's inner loop.

:func:`try_prompt` replays a chosen subset of a run's owners (all, the failed ones, or a list)
under the run's baseline lane with only the prompt replaced, and returns a
:class:`PromptTrial`: the template diff, the metric deltas on those owners and the facts that
changed. In a notebook the trial displays itself as HTML; its parts are DataFrames.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Literal

import pandas as pd

from memlab.backends.caching.cache import CacheMode
from memlab.backends.registry import is_simulated, mark_simulated
from memlab.core.pipeline.llm import Backend
from memlab.core.prompt_template import PromptVariant
from memlab.core.prompts import PromptRegistry, resolve_prompt, template_diff
from memlab.errors import MemlabError
from memlab.grids.grid import Grid
from memlab.matching.base import FactMatcher
from memlab.matching.matchers import resolve_matcher
from memlab.reporting.compare.verdict import headline
from memlab.reporting.echoes import ECHO_NOTE, echo_reason
from memlab.reporting.tables import compare_table, fact_diff, metrics_in
from memlab.runs.run import Run
from memlab.scoring.comparing.comparability import check_pairs
from memlab.scoring.comparing.comparison import Lane, compare_lanes
from memlab.scoring.comparing.inconclusive import Reason, inconclusive_reasons
from memlab.sweeps.driver import sweep

__all__ = ["PromptTrial", "TrialError", "sweep_prompt", "try_prompt"]

logger = logging.getLogger(__name__)

OwnerChoice = Literal["all", "failed"] | Sequence[str]


class TrialError(MemlabError, ValueError):
    """A prompt trial cannot run (no such lane, no owner selected, ...)."""


@dataclass
class PromptTrial:
    """The outcome of :func:`try_prompt`.

    Attributes:
        baseline: The run the trial started from.
        lane_id: The baseline lane.
        owners: The owners replayed.
        run: The trial's own run (one lane: the baseline's config with the new prompt).
        before: The baseline lane's prompt.
        after: The prompt tried.
        banners: What the comparison mixes (another matcher...), when allowed.
        comparison: The trial against the baseline lane on the same owners, paired
            (:func:`memlab.scoring.comparing.comparison.compare_lanes`).
        reasons: Why that comparison cannot say whether the prompt is better
            (:mod:`memlab.scoring.comparing.inconclusive`): the backend ignores prompts, too few
            owners...
    """

    baseline: Run
    lane_id: str
    owners: list[str]
    run: Run
    before: PromptVariant
    after: PromptVariant
    banners: list[str] = field(default_factory=list)
    comparison: pd.DataFrame | None = field(default=None, repr=False, compare=False)
    reasons: list[Reason] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        """``Verdict: better on recall``, ``Verdict: inconclusive — the backend ignores
        prompts``... (:func:`memlab.reporting.compare.verdict.headline`)."""
        tables = [] if self.comparison is None else [self.comparison]
        return f"Verdict: {headline(tables, self.reasons)}"

    @property
    def simulated(self) -> bool:
        """Whether the lane replays the simulated model (which ignores prompt text)."""
        return is_simulated(self.baseline.lanes[self.lane_id].backend)

    def __repr__(self) -> str:
        return (
            f"PromptTrial({self.before.name!r} -> {self.after.name!r} on {len(self.owners)} "
            f"owner(s) of {self.baseline.name!r})"
        )

    @property
    def diff(self) -> str:
        """Unified diff of the baseline template and the tried one."""
        return template_diff(self.before, self.after)

    @property
    def metrics(self) -> pd.DataFrame:
        """One row per headline metric: baseline and trial on the same owners, and the delta."""
        base = _restricted(self.baseline, self.lane_id, self.owners)
        table = compare_table([base, self.run])
        rows = []
        for metric in metrics_in(table):
            before, after = table[metric.column].iloc[0], table[metric.column].iloc[1]
            rows.append(
                {
                    "metric": metric.title,
                    "baseline": metric.fmt(before),
                    "trial": metric.fmt(after),
                    "delta": metric.fmt_delta(float(after - before)),  # rates in points
                }
            )
        return pd.DataFrame(rows).set_index("metric")

    @property
    def facts(self) -> pd.DataFrame:
        """Facts that differ between the baseline and the trial's final memories, per owner."""
        lane = next(iter(self.run.lanes))
        diff = fact_diff(self.baseline, self.lane_id, self.run, lane)
        diff = diff[diff["user_id"].isin(self.owners)]
        side = {"only_a": "baseline only", "only_b": "trial only", "near": "reworded"}
        return diff.assign(side=diff["side"].map(side)).rename(
            columns={"fact_a": "baseline", "fact_b": "trial"}
        )

    @property
    def echoes(self) -> list[str]:
        """A line for each side whose replies echo the prompt's own text (then what that
        means), e.g. ``trial: 12 of 12 replies (100.0%) echo the prompt: ...``; none when
        neither side's do."""
        base = _restricted(self.baseline, self.lane_id, self.owners)
        sides = (("baseline", base, self.lane_id), ("trial", self.run, next(iter(self.run.lanes))))
        lines = [
            f"{side}: {reason}"
            for side, run, lane in sides
            if (reason := echo_reason(run, lane)) is not None
        ]
        return [*lines, f"({ECHO_NOTE})"] if lines else []

    @property
    def scope(self) -> str:
        """What the trial compared: what memory stores on its owners; memory QA, when the
        baseline has it, is named as not compared (a trial replays the updates only)."""
        text = (
            f"Compared: what memory stores on {len(self.owners)} owner(s), the baseline lane's "
            "replies against the trial's"
        )
        if self.baseline.qa_answers.empty:
            return text + "."
        return (
            f"{text}; memory QA is not compared: a trial asks no questions, so its QA rows show "
            "the baseline's answers only (memlab ab --qa compares both)."
        )

    @property
    def title(self) -> str:
        """``Prompt trial: a (sha) → b (sha), N owner(s) of RUN``, ``[simulated]`` first when
        the lane replays the simulated model."""
        return mark_simulated(
            f"Prompt trial: {self.before.name} ({self.before.sha256[:8]}) → "
            f"{self.after.name} ({self.after.sha256[:8]}), {len(self.owners)} owner(s) of "
            f"{self.baseline.name}",
            self.simulated,
        )

    def _repr_html_(self) -> str:
        diff = self.diff or "(the templates are identical)"
        notes = [*self.banners, *(reason.text for reason in self.reasons)]
        notes += self.echoes
        return (
            f"<h4>{escape(self.title)}</h4><p><strong>{escape(self.verdict)}</strong></p>"
            f"<p>{escape(self.scope)}</p>"
            + "".join(f"<p><strong>{escape(note)}</strong></p>" for note in notes)
            + f"<pre style='max-height:20rem;overflow:auto'>{escape(diff)}</pre>"
            f"{self.metrics.to_html()}"
            f"<h5>Facts that changed</h5>{self.facts.to_html(index=False)}"
        )


def _restricted(run: Run, lane_id: str, owners: Sequence[str]) -> Run:
    """A view of one lane of ``run`` limited to ``owners``."""
    calls, sessions = run.calls, run.sessions
    return Run(
        path=run.path,
        grid=run.grid,
        lanes={lane_id: run.lanes[lane_id]},
        _calls=calls[(calls["lane_id"] == lane_id) & calls["user_id"].isin(owners)],
        _sessions=sessions[(sessions["lane_id"] == lane_id) & sessions["user_id"].isin(owners)],
    )


def _owners(run: Run, lane_id: str, owners: OwnerChoice) -> list[str]:
    sessions = run.sessions[run.sessions["lane_id"] == lane_id]
    known = list(dict.fromkeys(sessions["user_id"]))
    if owners == "all":
        return known
    if owners == "failed":
        calls = run.calls[run.calls["lane_id"] == lane_id]
        bad = calls[~calls["parse_ok"].astype(bool) | (calls["error_stage"] == "backend")]
        failed = [user for user in known if user in set(bad["user_id"])]
        if not failed:
            raise TrialError(
                f"no owner of lane {lane_id} has a failed call; pass owners='all' or a list"
            )
        return failed
    unknown = sorted(set(owners) - set(known))
    if unknown:
        raise TrialError(f"owners not in lane {lane_id}: {unknown}; known: {known}")
    return list(owners)


def try_prompt(
    run: Run,
    prompt: str | os.PathLike[str] | PromptVariant,
    *,
    owners: OwnerChoice = "failed",
    lane: str | None = None,
    backend_factory: Callable[[str], Backend] | None = None,
    cache_dir: str | Path | None = None,
    cache_mode: CacheMode = CacheMode.READ_WRITE,
    matcher: FactMatcher | None = None,
    allow_mixed: bool = False,
) -> PromptTrial:
    """Replay some of ``run``'s owners under its baseline lane with ``prompt`` instead.

    Args:
        run: A finished run.
        prompt: A prompt file path, a template string, a built-in name or a variant.
        owners: ``"failed"`` (owners with a failed call in the baseline lane), ``"all"``, or
            a list of user ids.
        lane: The baseline lane id (default: the run's first lane).
        backend_factory, cache_dir, cache_mode: As for :func:`memlab.sweep`.
        matcher: The fact matcher (default: the one that scored ``run``, when it can be
            built by name; else the default matcher).
        allow_mixed: Compare even when the trial is measured differently from the baseline
            (another matcher); :attr:`PromptTrial.banners` then says what is mixed.

    The trial is written under ``<run>/tries/``; rerunning an unchanged trial reuses it. The
    trial is compared with the baseline lane on the same owners; each reason that comparison
    cannot tell (:mod:`memlab.scoring.comparing.inconclusive`: on the simulated model, which ignores
    prompt text, always) is logged as a warning and kept in :attr:`PromptTrial.reasons`.

    Raises:
        MixedComparisonError: The trial is measured differently from the baseline lane
            (:mod:`memlab.scoring.comparing.comparability`) and ``allow_mixed`` is false.
    """
    lane_id = lane or next(iter(run.lanes))
    if lane_id not in run.lanes:
        raise TrialError(f"{run.path}: no lane {lane_id!r}; lanes: {list(run.lanes)}")
    info = run.lane_info(lane_id)["prompt"]
    before = PromptVariant(info["name"], info["template"], source=info.get("source", ""))
    after, extra = sweep_prompt(resolve_prompt(prompt, name="trial"))
    selected = _owners(run, lane_id, owners)
    grid = _trial_grid(run, lane_id, selected, after)
    trial = sweep(
        grid.dataset,
        grid,
        runs_dir=run.path / "tries",
        prompts=extra,
        backend_factory=backend_factory,
        cache_dir=cache_dir,
        cache_mode=cache_mode,
        progress=False,
        matcher=matcher if matcher is not None else _recorded_matcher(run),
    )
    base = _restricted(run, lane_id, selected)
    pair = (base.lane_facts(lane_id), trial.lane_facts(next(iter(trial.lanes))))
    banners = check_pairs([pair], allow_mixed=allow_mixed)
    table = compare_lanes(
        [(Lane(base, lane_id), Lane(trial, next(iter(trial.lanes))))],
        primary=run.primary,
        options=run.stats,
        allow_mixed=allow_mixed,
    )
    reasons = inconclusive_reasons(table, power=run.stats.power)
    for reason in reasons:
        logger.warning("prompt trial on %s: inconclusive: %s", run.name, reason)
    return PromptTrial(run, lane_id, selected, trial, before, after, banners, table, reasons)


def _recorded_matcher(run: Run) -> FactMatcher | None:
    """The matcher that scored ``run``, rebuilt by name (``None``: the default matcher)."""
    record = run.environment.get("matcher")
    name = record.get("name") if isinstance(record, dict) else None
    if not isinstance(name, str) or name.startswith("judge"):
        return None
    try:
        return resolve_matcher(name)
    except MemlabError:  # a parameterised or plugin matcher that is not registered by name
        return None


def sweep_prompt(after: PromptVariant) -> tuple[PromptVariant, dict[str, str] | None]:
    """The prompt to replay under the name a sweep's grid uses, and the extra prompts it needs.

    A built-in, unchanged, needs none; an edited copy of a built-in keeps its name with its
    hash, to tell the two apart.
    """
    builtins = PromptRegistry()
    if after.name not in builtins:
        return after, {after.name: after.template}
    if builtins.get(after.name).template == after.template:
        return after, None
    name = f"{after.name}-{after.sha256[:8]}"
    return PromptVariant(name, after.template, source=after.source), {name: after.template}


def _trial_grid(run: Run, lane_id: str, owners: list[str], prompt: PromptVariant) -> Grid:
    """One lane: the baseline lane's configuration with ``prompt``, on ``owners``."""
    config = run.lanes[lane_id].model_copy(update={"prompt": prompt.name})
    return Grid.from_mapping(
        {
            "name": f"{prompt.name}-{prompt.sha256[:8]}",
            "dataset": str(run.dataset_path or run.grid.dataset),
            "owners": owners,
            "max_sessions": run.grid.max_sessions,
            "samples": run.grid.samples,
            "replay_mode": run.grid.replay_mode,
            "base": config.model_dump(mode="json"),
            # A forked run's trial starts from the same reference memory.
            "fork": run.grid.fork.model_dump() if run.grid.fork else None,
        },
        source=f"prompt trial on {run.path}",
    )
