"""Turn replays into numbers: per-session rows, per-call rows and a per-lane summary.

Definitions (all per lane; "gold" = labeled facts of the dataset):
- *active gold* after session *i*: gold facts revealed in sessions ``<= i`` minus those retracted
  in sessions ``<= i``.
- *recall*: active gold facts covered by at least one stored fact / active gold facts.
- *precision*: stored facts that cover at least one active gold fact / stored facts.
- *retracted held*: retracted gold facts still covered by a stored fact; *retracted-held rate*
  = retracted held / gold facts retracted so far.
- *forbidden stored*: stored facts containing (case-insensitively) a ``must_not_store`` string
  of any session so far; *forbidden-stored rate* = forbidden stored / stored facts.
- *covered*: decided by a fact matcher (default :func:`memlab.matching.matchers.default_matcher`;
  its name and calibration are recorded with the run, see :mod:`memlab.matching.base`).
- *duplicates*: stored facts repeating an earlier one (exact / normalized / near, see
  :mod:`memlab.core.jsondoc.similarity`); *duplicate rate* = near duplicates / stored facts. When an
  :class:`~memlab.matching.embeddings.EmbeddingDuplicates` is given, also ``dup_embedding`` and
  *duplicate rate (embeddings)* = its count / stored facts.
- *parse-failure rate*: LLM replies whose parse failed / LLM replies.
- *LLM calls*: call records that asked a model, live, from the cache or simulated
  (``model_calls + cache_hits + simulated_calls``); a skipped update asked nothing
  (:func:`memlab.memory.strategy.asked_model`).
- *calls saved by debounce*: agent runs that requested an update minus the updates the queue
  handed to the memory (:func:`memlab.memory.strategy.is_queued_update`: a DeerFlow update
  call, or a tiered lane's working-memory step; not its session-end folds, importance
  ratings or compressions).
- *operations* (add/removal precision, recall, F1, wrong removals), *stale survival* and
  *eviction regret*: each update scored against the labels, see :mod:`memlab.scoring.operations`.
- *injected gold coverage*: active gold facts in what the next session's agent receives, see
  :mod:`memlab.scoring.qa.injection_audit`.
- *stale survival*: the restricted mean of the session ends a retracted fact survives, from a
  Kaplan-Meier estimate censored at the data's end, see :mod:`memlab.scoring.inference.survival`.
Every summary rate is micro-averaged over owners (sums of per-owner counts, then the ratio)
unless its spec says macro (the mean of owners' own rates: ``precision_macro``), and carries a
95% bootstrap interval over the owners it can vary with (:mod:`memlab.scoring.inference.stats`,
:mod:`memlab.scoring.inference.estimators`); which column is which is declared once in
:mod:`memlab.scoring.metric_specs`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import pandas as pd

from memlab.backends.registry import is_simulated, price_table
from memlab.core.jsondoc.similarity import count_duplicates
from memlab.datasets.models import Owner, Session
from memlab.matching.base import FactMatcher
from memlab.matching.embeddings import EmbeddingDuplicates
from memlab.matching.matchers import default_matcher
from memlab.memory.strategy import asked_model, is_queued_update
from memlab.scoring.consolidation import memory_tokens
from memlab.scoring.count_specs import count_columns
from memlab.scoring.inference.estimators import estimator
from memlab.scoring.inference.stats import StatOptions, bootstrap, ratio
from memlab.scoring.metric_model import MetricSpec
from memlab.scoring.metric_specs import summary_columns, summary_specs
from memlab.scoring.operations import score_operations
from memlab.scoring.qa.injection_audit import injection_counts

__all__ = [
    "failure_table",
    "owner_counts",
    "replay_rows",
    "session_rows",
    "summarize",
    "summarize_counts",
    "violation_table",
]


_T = TypeVar("_T")


def session_rows(
    owner: Owner,
    snapshots: Sequence[Mapping[str, Any]],
    calls: Sequence[Mapping[str, Any]],
    agent_runs: Sequence[int],
    *,
    matcher: FactMatcher | None = None,
    embedding_duplicates: EmbeddingDuplicates | None = None,
    injections: Sequence[Mapping[str, Any] | None] | None = None,
    start: int = 0,
) -> list[dict[str, Any]]:
    """One row per session: memory state after it, scored against the labels so far.

    ``matcher`` decides whether a stored fact states a gold fact (default:
    :func:`memlab.matching.matchers.default_matcher`). With ``embedding_duplicates``, rows also
    get ``dup_embedding``: facts whose embedding is
    close to an earlier fact's (see :mod:`memlab.matching.embeddings`). Rows also carry the
    session's memory operations (:mod:`memlab.scoring.operations`) and, with ``injections``
    (the replay's audits), what reached the next session's agent
    (:mod:`memlab.scoring.qa.injection_audit`). Facts stored from echoes of the prompt (the
    calls' ``applied.echoed``, :mod:`memlab.core.jsondoc.echo`) are left out of the state counts:
    an echo is never a stored fact. ``start`` (a fork's session) drops the rows of
    earlier sessions, whose labels still count.
    """
    matcher = matcher if matcher is not None else default_matcher()
    if len(snapshots) != len(owner.sessions):
        raise ValueError(
            f"owner {owner.user_id!r}: {len(snapshots)} memory snapshots for "
            f"{len(owner.sessions)} sessions; the replay does not belong to this dataset"
        )
    warm = getattr(matcher, "warm", None)
    if callable(warm):  # read and embed the owner's texts in one batch (the default matcher)
        warm(
            [f.content for s in owner.sessions for f in s.labels.facts]
            + [str(f.get("content", "")) for snap in snapshots for f in snap.get("facts", [])]
        )
    covers = _owner_verdicts(matcher.covers)
    operations = score_operations(
        owner,
        calls,
        covers,
        start=start,
        start_memory=snapshots[start - 1] if start > 0 else None,
    )
    labels_so_far = _LabelsSoFar()
    echoes: set[str] = set()  # ids of the facts stored from echoes of the prompt so far
    rows: list[dict[str, Any]] = []
    for index, (session, snapshot) in enumerate(zip(owner.sessions, snapshots, strict=True)):
        labels_so_far.add(session)
        session_calls = [c for c in calls if c.get("session_index") == index]
        echoes.update(_echo_ids(session_calls))
        if index < start:
            continue
        kept = _without(snapshot, echoes)
        row = _state_row(owner, index, kept, labels_so_far, covers, embedding_duplicates)
        if kept is not snapshot:  # the memory's size is what it holds, echoes too
            row["memory_tokens"] = memory_tokens(snapshot)
        row["agent_runs"] = agent_runs[index] if index < len(agent_runs) else 0
        row["llm_calls"] = sum(1 for c in session_calls if asked_model(c.get("skipped")))
        for key in count_columns(by="merge"):  # each call record's n_<count>, summed
            row[key] = sum(int(c.get(f"n_{key}", 0) or 0) for c in session_calls)
        if operations is not None:
            row.update(operations[index])
        audit = injections[index] if injections is not None and index < len(injections) else None
        active = labels_so_far.active()
        row.update(injection_counts(audit, snapshot, active, covers))
        rows.append(row)
    return rows


def _echo_ids(calls: Sequence[Mapping[str, Any]]) -> set[str]:
    """Ids of the facts these calls stored from echoes of the prompt (each call record's
    ``applied.echoed``, :mod:`memlab.core.jsondoc.echo`)."""
    ids: set[str] = set()
    for call in calls:
        applied = call.get("applied")
        echoed = applied.get("echoed") if isinstance(applied, Mapping) else None
        for entry in echoed or ():
            fact_id = entry.get("id") if isinstance(entry, Mapping) else None
            if isinstance(fact_id, str):
                ids.add(fact_id)
    return ids


def _without(snapshot: Mapping[str, Any], echoes: set[str]) -> Mapping[str, Any]:
    """``snapshot`` without the facts stored from echoes: never counted as stored facts."""
    facts = snapshot.get("facts", [])
    if not echoes or not any(isinstance(f, Mapping) and f.get("id") in echoes for f in facts):
        return snapshot
    kept = [f for f in facts if not (isinstance(f, Mapping) and f.get("id") in echoes)]
    return {**snapshot, "facts": kept}


def replay_rows(
    owner: Owner,
    record: Mapping[str, Any],
    *,
    matcher: FactMatcher | None = None,
    embedding_duplicates: EmbeddingDuplicates | None = None,
) -> list[dict[str, Any]]:
    """:func:`session_rows` of an owner record (``lanes/<lane>/owners/<user>.json``)."""
    fork = record.get("fork")
    return session_rows(
        owner,
        record.get("snapshots", []),
        record.get("calls", []),
        record.get("agent_runs", []),
        matcher=matcher,
        embedding_duplicates=embedding_duplicates,
        injections=record.get("injections"),
        start=int(fork.get("at_session", 0)) if isinstance(fork, Mapping) else 0,
    )


def _owner_verdicts(covers: Callable[[str, str], bool]) -> Callable[[str, str], bool]:
    """``covers`` remembered per (stored, gold) pair for one owner's rows.

    Each session's row asks again about the pairs of the sessions before it (the stored facts
    stay, the gold facts accumulate): about 160,000 questions for 1,000 sessions, of which a
    few thousand are new. The matcher is asked each distinct pair at most once, in the order
    the rows first ask it, so it sees the same pairs as without this memo.
    """
    verdicts: dict[tuple[str, str], bool] = {}

    def remembered(stored: str, gold: str) -> bool:
        key = (stored, gold)
        try:  # a subscript costs less than .get() on the ~95% of questions already answered
            return verdicts[key]
        except KeyError:
            verdict = verdicts[key] = bool(covers(stored, gold))
            return verdict

    return remembered


def _first_covering(
    stored: Sequence[str], gold: str, covers: Callable[[str, str], bool]
) -> str | None:
    """The first stored fact that covers ``gold`` (a plain loop: no generator per gold fact)."""
    for s in stored:
        if covers(s, gold):
            return s
    return None


class _LabelsSoFar:
    """Gold facts revealed, retracted and forbidden strings up to the current session."""

    def __init__(self) -> None:
        self.gold: dict[str, str] = {}
        self.retracted: set[str] = set()
        self.forbidden: list[str] = []

    def add(self, session: Session) -> None:
        labels = session.labels
        for fact in labels.facts:
            self.gold[fact.id] = fact.content
        self.retracted.update(labels.retracts)
        self.forbidden.extend(s.casefold() for s in labels.must_not_store)

    def active(self) -> dict[str, str]:
        return {gid: text for gid, text in self.gold.items() if gid not in self.retracted}


def _state_row(
    owner: Owner,
    index: int,
    snapshot: Mapping[str, Any],
    so_far: _LabelsSoFar,
    covers: Callable[[str, str], bool],
    embedding_duplicates: EmbeddingDuplicates | None,
) -> dict[str, Any]:
    """The memory state after session ``index`` scored against the labels so far."""
    session = owner.sessions[index]
    gold, retracted = so_far.gold, so_far.retracted
    stored = [str(f.get("content", "")) for f in snapshot.get("facts", [])]
    active = so_far.active()
    # Each search stops at the first covering fact (the matcher sees the same pairs, in the
    # same order, as any() over them).
    covered: set[str] = set()
    covering: set[str] = set()  # stored facts found to cover an active gold fact
    for gid, text in active.items():
        first = _first_covering(stored, text, covers)
        if first is not None:
            covered.add(gid)
            covering.add(first)
    texts = list(active.values())
    precise = 0
    for s in stored:
        if s in covering:
            precise += 1
            continue
        for t in texts:
            if covers(s, t):
                precise += 1
                break
    held = sum(
        1
        for gid in retracted
        if gid in gold and _first_covering(stored, gold[gid], covers) is not None
    )
    bad = sum(1 for s in stored if any(f and f in s.casefold() for f in so_far.forbidden))
    dups = count_duplicates(stored)
    return {
        "user_id": owner.user_id,
        "session_index": index,
        "thread_id": session.thread_id,
        "noise": session.labels.noise,
        "tags": ",".join(session.labels.tags),
        "facts": len(stored),
        "gold_active": len(active),
        "gold_covered": len(covered),
        "stored_precise": precise,
        "recall": len(covered) / len(active) if active else float("nan"),
        "precision": precise / len(stored) if stored else float("nan"),
        "retracted_held": held,
        "gold_retracted": sum(1 for gid in retracted if gid in gold),
        "forbidden_stored": bad,
        "dup_exact": dups.exact,
        "dup_normalized": dups.normalized,
        "dup_near": dups.near,
        "memory_tokens": memory_tokens(snapshot),
        **(
            {"dup_embedding": embedding_duplicates.count(stored)}
            if embedding_duplicates is not None
            else {}
        ),
    }


def _price(model: object, prices: Mapping[str, tuple[float, float]]) -> tuple[float, float]:
    if not isinstance(model, str) or not model:  # None, or NaN from a call that failed early
        return (0.0, 0.0)
    for prefix in sorted(prices, key=len, reverse=True):
        if model.startswith(prefix):
            return prices[prefix]
    return (0.0, 0.0)


def owner_counts(
    calls: pd.DataFrame,
    sessions: pd.DataFrame,
    *,
    prices: Mapping[str, tuple[float, float]] | None = None,
    cluster: str = "user_id",
    nested: str | None = None,
) -> pd.DataFrame:
    """Per-owner counts every summary metric is built from, indexed by (``lane_id``, owner).

    Args:
        calls: Call rows (:attr:`memlab.runs.run.Run.calls`).
        sessions: Session rows (:attr:`memlab.runs.run.Run.sessions`).
        prices: Price table for ``cost_usd`` (default: the prices every registered backend
            declares, :func:`memlab.backends.registry.price_table`).
        cluster: The column naming the unit of independence: intervals resample its values
            and paired tests pair on them.
        nested: A column of repeated samples within an owner (e.g. ``"sample"``): counts are
            computed per (owner, sample) and averaged over the owner's samples, so an owner
            replayed five times weighs as much as one replayed once. ``None``: one sample.

    Columns: the counts of :data:`memlab.scoring.count_specs.COUNT_SPECS`: the last
    session's state (``facts``, ``gold_active``, ``gold_covered``, ...), the sums over
    sessions (``agent_runs``, ``added``, ...), the call counts (``llm_calls``, ``replies``,
    ``parse_failures``, ``tokens``, ``cost_usd``, ...) and the derived ones (``owners`` (1),
    ``sessions``, ``calls_saved_by_debounce``, the F1 terms). A count the session rows lack
    (``dup_embedding`` without an embedding measure) is left out.
    """
    prices = price_table() if prices is None else prices
    if sessions.empty or "lane_id" not in sessions.columns:
        return pd.DataFrame()
    unit = ["lane_id", cluster] + ([nested] if nested else [])
    missing = [c for c in unit if c not in sessions.columns or (len(calls) and c not in calls)]
    if missing:
        raise ValueError(f"owner_counts: the rows have no {missing[0]!r} column")
    ordered = sessions.sort_values("session_index", kind="stable")
    final_columns = [c for c in count_columns(over="last_session") if c in sessions.columns]
    # tail(1), not last(): last() would skip a NaN (an unmeasured count) in the last session.
    final = ordered.groupby(unit, sort=False).tail(1).set_index(unit)[final_columns]
    grouped = sessions.groupby(unit, sort=False)
    totals = grouped[[c for c in count_columns(over="sessions") if c in sessions.columns]].sum()
    counts = final.join(totals).assign(sessions=grouped.size(), owners=1)
    call_columns = count_columns(over="calls")
    counts = counts.join(_call_counts(calls, unit, prices)).fillna(dict.fromkeys(call_columns, 0))
    counts["calls_saved_by_debounce"] = counts["agent_runs"] - counts["queued_updates"]
    counts = _f1_counts(counts)
    if nested:
        counts = counts.groupby(["lane_id", cluster], sort=False).mean()
    # Sorted, so that resampling draws the same owners whatever the order of the rows.
    return counts.sort_index()


def _f1_counts(counts: pd.DataFrame) -> pd.DataFrame:
    """``op_*_f1_num`` = 2 correct and ``op_*_f1_den`` = 2 correct + false ops + missed.

    Their ratio of sums is the harmonic mean of the micro-averaged precision and recall, so
    F1 is a ratio like every other rate (and gets a bootstrap interval).
    """
    if "op_adds_correct" not in counts.columns:
        return counts
    add_false = counts["op_adds_spurious"] + counts["op_adds_redundant"]
    counts["op_adds_judged"] = counts["op_adds_correct"] + add_false
    counts["op_removals_judged"] = counts["op_removals_correct"] + counts["op_removals_wrong"]
    for kind, false in (("adds", add_false), ("removals", counts["op_removals_wrong"])):
        short = "add" if kind == "adds" else "remove"
        correct = counts[f"op_{kind}_correct"]
        counts[f"op_{short}_f1_num"] = 2 * correct
        counts[f"op_{short}_f1_den"] = 2 * correct + false + counts[f"op_{kind}_missed"]
    return counts


def _model_name(model: object) -> str:
    return model if isinstance(model, str) else ""


def _each_distinct(values: Iterable[Any], function: Callable[[Any], _T]) -> list[_T]:
    """``[function(v) for v in values]``, calling ``function`` once per distinct value: a call
    table repeats a few values over 80,000 rows. Values are told apart by type too (``1`` and
    ``True`` are equal keys of a dict, not the same value; a tuple's items likewise); NaN,
    never equal to itself, and unhashable values are passed on each time."""
    seen: dict[Any, _T] = {}
    out: list[_T] = []
    for value in values:
        kind = type(value)
        key = (kind, tuple(map(type, value)), value) if kind is tuple else (kind, value)
        try:
            out.append(seen[key])
        except KeyError:
            seen[key] = result = function(value)
            out.append(result)
        except TypeError:  # unhashable
            out.append(function(value))
    return out


def _objects(column: pd.Series) -> Any:
    """The column's values as Python objects, as ``to_dict("records")`` gives them (iterating
    a text column of pandas' own string type boxes each value one by one)."""
    return column.to_numpy(dtype=object)


def _call_counts(
    calls: pd.DataFrame, unit: list[str], prices: Mapping[str, tuple[float, float]]
) -> pd.DataFrame:
    if calls.empty:
        return pd.DataFrame(columns=[*unit, *count_columns(over="calls")]).set_index(unit)
    replied = calls["reply"].notna()
    models = pd.Series(_each_distinct(_objects(calls["model"]), _model_name), index=calls.index)
    rates = {model: _price(model, prices) for model in models.unique()}
    cached = calls["cached"].astype(bool)
    # A skipped update asked nothing; the simulated model is an instrument, not a model call.
    skipped = calls["skipped"] if "skipped" in calls.columns else pd.Series(None, calls.index)
    asked = pd.Series(_each_distinct(_objects(skipped), asked_model), index=calls.index, dtype=bool)
    marks = [c for c in ("call", "session_end") if c in calls.columns]
    rows = zip(*(_objects(calls[c]) for c in marks), strict=True) if marks else ((),) * len(calls)
    queued = pd.Series(
        _each_distinct(rows, lambda row: is_queued_update(dict(zip(marks, row, strict=True)))),
        index=calls.index,
        dtype=bool,
    )
    backends = calls["backend"] if "backend" in calls.columns else pd.Series("", calls.index)
    sim = {name: isinstance(name, str) and is_simulated(name) for name in backends.unique()}
    simulated = backends.map(sim).astype(bool)
    # Calls recorded before echoes were counted have no n_echoed: none counted.
    echoed = calls["n_echoed"] if "n_echoed" in calls.columns else pd.Series(0, calls.index)
    frame = calls[unit].assign(
        llm_calls=asked.astype(int),
        queued_updates=queued.astype(int),
        replies=replied.astype(int),
        parse_failures=(replied & ~calls["parse_ok"].astype(bool)).astype(int),
        backend_errors=(calls["error_stage"] == "backend").astype(int),
        prompt_tokens=calls["prompt_tokens"],
        completion_tokens=calls["completion_tokens"],
        tokens=calls["prompt_tokens"] + calls["completion_tokens"],
        cost_usd=(
            calls["prompt_tokens"] * models.map({m: r[0] for m, r in rates.items()})
            + calls["completion_tokens"] * models.map({m: r[1] for m, r in rates.items()})
        )
        / 1e6,
        cache_hits=cached.astype(int),
        model_calls=(asked & ~cached & ~simulated).astype(int),
        simulated_calls=(asked & ~cached & simulated).astype(int),
        echo_replies=(echoed.fillna(0) > 0).astype(int),
    )
    return frame.groupby(unit, sort=False).sum()


def summarize(
    calls: pd.DataFrame,
    sessions: pd.DataFrame,
    *,
    prices: Mapping[str, tuple[float, float]] | None = None,
    options: StatOptions | None = None,
    cluster: str = "user_id",
    nested: str | None = None,
) -> pd.DataFrame:
    """One row per lane with the headline metrics (see the module docstring).

    The columns are :func:`memlab.scoring.metric_specs.summary_columns`: each metric of
    :func:`~memlab.scoring.metric_specs.summary_specs` is a sum over owners of a count from
    :func:`owner_counts`, or a ratio of two such sums; each rate with an interval is followed
    by ``<metric>_lo`` and ``<metric>_hi``, a bootstrap interval over owners (``options``:
    resamples, seed, level; ``cluster`` and ``nested`` as in :func:`owner_counts`).
    Metrics whose counts the run lacks (embedding duplicates) are left out.
    """
    counts = owner_counts(calls, sessions, prices=prices, cluster=cluster, nested=nested)
    return summarize_counts(counts, options=options)


def summarize_counts(counts: pd.DataFrame, *, options: StatOptions | None = None) -> pd.DataFrame:
    """:func:`summarize` of per-owner counts already computed by :func:`owner_counts` (a
    run computes them once for its summary and its comparisons)."""
    if counts.empty:
        # Keep the columns so callers can merge and select on an empty run.
        return pd.DataFrame(columns=["lane_id", *summary_columns()])
    specs = [s for s in summary_specs() if all(c in counts.columns for c in s.sources)]
    rows = []
    for lane, lane_counts in counts.groupby(level="lane_id", sort=True):
        metrics = _lane_metrics(lane_counts, specs, options, where=f"lane {lane}")
        rows.append({"lane_id": lane, **metrics})
    return pd.DataFrame(rows)


def _lane_metrics(
    counts: pd.DataFrame,
    specs: Sequence[MetricSpec],
    options: StatOptions | None,
    where: str = "",
) -> dict[str, Any]:
    """One lane's metric values (and intervals) from its per-owner counts."""
    row: dict[str, Any] = {}
    for spec in specs:
        if spec.interval:
            found = bootstrap(estimator(spec, counts, where=where), options)
            row[spec.column] = found.estimate
            row[f"{spec.column}_lo"] = found.lo
            row[f"{spec.column}_hi"] = found.hi
        elif spec.ratio is None:
            row[spec.column] = _total(counts[spec.sources[0]], spec)
        else:
            top, bottom = (counts[c].to_numpy(dtype=float).sum() for c in spec.ratio)
            row[spec.column] = float(ratio(top, bottom, spec.empty))
    return {c: row[c] for c in summary_columns() if c in row}


def _total(values: pd.Series, spec: MetricSpec) -> Any:
    """A sum over owners; NaN when any owner's count is unknown, a whole number for counts."""
    total = float(values.to_numpy(dtype=float).sum())
    if spec.unit == "count" and total.is_integer():
        return int(total)
    return total


def failure_table(calls: pd.DataFrame) -> pd.DataFrame:
    """Parse outcomes per lane: rows lane_id, columns ``category`` (or ``ok:<rung>``), counts."""
    if calls.empty:
        return pd.DataFrame()
    replied = calls[calls["reply"].notna()].copy()
    replied["outcome"] = [
        f"ok:{rung}" if ok else str(category)
        for ok, rung, category in zip(
            replied["parse_ok"],
            _objects(replied["parse_rung"]),
            _objects(replied["parse_category"]),
            strict=True,
        )
    ]
    return replied.pivot_table(
        index="lane_id", columns="outcome", values="reply", aggfunc="count", fill_value=0
    )


_INDEX = re.compile(r"/\d+(?=/|$)")


def violation_table(calls: pd.DataFrame) -> pd.DataFrame:
    """Schema violations by (pointer with list indexes as ``*``, keyword) per lane."""
    rows: list[dict[str, Any]] = []
    columns = (_objects(calls[c]) if c in calls.columns else [] for c in ("lane_id", "violations"))
    for lane, violations in zip(*columns, strict=False):
        for violation in _iter_violations(violations):
            rows.append(
                {
                    "lane_id": lane,
                    "pointer": _INDEX.sub("/*", violation.get("pointer", "")) or "/",
                    "keyword": violation.get("keyword", ""),
                }
            )
    if not rows:
        return pd.DataFrame(columns=["lane_id", "pointer", "keyword", "count"])
    frame = pd.DataFrame(rows)
    return frame.groupby(["lane_id", "pointer", "keyword"]).size().reset_index(name="count")


def _iter_violations(value: Any) -> Iterable[Mapping[str, Any]]:
    if isinstance(value, list):
        yield from (v for v in value if isinstance(v, Mapping))
