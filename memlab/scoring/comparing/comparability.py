"""What differs between two lanes, checked before any comparison ranks them.

A delta between two lanes means something only when the lanes were measured alike: the same
dataset and owners, scored by the same matcher (and version), graded by the same judge. And a
lane that replays the simulated model is an instrument, never a contestant against a real
model. With memory QA, what answered and what judged are part of the measurement too
(:class:`QAFacts`: the answerer, its prompt and settings, each judge's backend, prompt and
settings, the conditions, the answer key): two runs answered by different agents differ by
the agent, not by their memory. :class:`LaneFacts` records what a lane is;
:func:`differences` lists every way two lanes differ, and :func:`check_pairs` refuses the
pairs a comparison must not rank (:class:`MixedComparisonError`, one line naming the
difference) unless ``allow_mixed``, in which case it returns the banners to show above the
comparison. A QA fact one run did not record is ``unknown``: never refused, never passed in
silence (a banner says it was not checked).

``compare``, the regression gate, the prompt trial and the reports all go through here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from memlab.errors import MemlabError

__all__ = [
    "BLOCKING",
    "SIMULATED_PROMPT_NOTE",
    "UNKNOWN",
    "Difference",
    "JudgeFacts",
    "LaneFacts",
    "MixedComparisonError",
    "QAFacts",
    "check_pairs",
    "differences",
    "kind_baselines",
    "kind_of",
]

BLOCKING: tuple[str, ...] = (
    "answer key",
    "dataset",
    "owners",
    "matcher",
    "matcher version",
    "judge",
    "answerer",
    "answer prompt",
    "answer settings",
    "QA conditions",
    "backend kind",
)
"""Differences that make a delta meaningless: a comparison refuses them unless mixed
comparisons are allowed. Every other difference (backend, prompt, a setting) is what a
comparison is for. The answer key comes before the dataset: an audited key changes the
dataset's content too, and the key is the reason to name."""

UNKNOWN = "unknown"
"""A QA fact's value when its run did not record it."""

SIMULATED_PROMPT_NOTE = (
    "the simulated model ignores prompt text: these lanes differ only in their labels"
)
"""What a prompt comparison between simulated lanes cannot show."""


class MixedComparisonError(MemlabError, ValueError):
    """Two lanes measured differently (dataset, owners, matcher, judge, answerer, answer key,
    simulated vs real).

    Attributes:
        difference: The first blocking difference found.
    """

    def __init__(self, message: str, difference: Difference) -> None:
        super().__init__(message)
        self.difference = difference


@dataclass(frozen=True)
class JudgeFacts:
    """What one judge prompt of a QA step graded with ("" when not recorded).

    Attributes:
        backend: The judges' backend spec (``sim:careful``, ``openai:gpt-4o-mini``).
        model: The backend's model identity in words (model id, model file hash, host).
        prompt_sha256: The judge prompt's content hash.
        settings: Its sampling settings in words.
    """

    backend: str = ""
    model: str = ""
    prompt_sha256: str = ""
    settings: str = ""


@dataclass(frozen=True)
class QAFacts:
    """What a run's memory QA answered and judged with ("" when not recorded).

    Attributes:
        answerer: The answer backend's spec.
        answerer_model: Its model identity in words (model id, model file hash, host).
        answer_prompt: The answer prompt's name.
        answer_prompt_sha256: Its content hash.
        answer_settings: The answers' sampling settings in words.
        judges: Each judge prompt by name.
        conditions: The conditions asked, in order.
        answer_key: ``original``, or ``audited`` when an audit changed the key the answers
            were scored against.
    """

    answerer: str = ""
    answerer_model: str = ""
    answer_prompt: str = ""
    answer_prompt_sha256: str = ""
    answer_settings: str = ""
    judges: Mapping[str, JudgeFacts] = field(default_factory=dict)
    conditions: tuple[str, ...] = ()
    answer_key: str = ""


@dataclass(frozen=True)
class LaneFacts:
    """What a lane is, as far as comparing it goes.

    Attributes:
        run: The run's name.
        lane: The lane's label in its run.
        dataset: The dataset's identity: ``sha256 <12 hex>`` of its content, else its path
            (a hash and a path are not compared).
        owners: The owners the run replayed.
        matcher: The matcher that scored the run ("" when not recorded).
        matcher_version: Its version ("" when not recorded).
        judge: The judge grading the run's memory QA ("" without memory QA).
        backend: The backend's identity in words (name, model, file hash...).
        simulated: Whether the backend is the simulated model.
        reads_prompts: Whether the backend's replies depend on the prompt text (false for the
            simulated model's profiles, which answer from the labels).
        prompt: The prompt's name.
        prompt_sha256: The prompt template's content hash ("" when not recorded).
        settings: Every other lane setting by name.
        qa: What the run's memory QA answered and judged with (``None`` without memory QA).
    """

    run: str
    lane: str
    dataset: str = ""
    owners: frozenset[str] = frozenset()
    matcher: str = ""
    matcher_version: str = ""
    judge: str = ""
    backend: str = ""
    simulated: bool = False
    reads_prompts: bool = True
    prompt: str = ""
    prompt_sha256: str = ""
    settings: Mapping[str, Any] = field(default_factory=dict)
    qa: QAFacts | None = None

    @property
    def name(self) -> str:
        """``run: lane`` for messages."""
        return f"{self.run}: {self.lane}"


@dataclass(frozen=True)
class Difference:
    """One way two lanes differ: ``what`` (``matcher``, ``prompt``, ``setting max_facts``),
    each side's value in words (``a`` the first lane's, the baseline; ``b`` the second's, the
    candidate), and for a judge the one differing (``subject`` ``'lenient'``) and its part
    that differs (``aspect`` ``prompt sha256``).

    In words the candidate's value comes first (``answerer: sim:sloppy vs sim:careful``), as
    every line naming the pair names the candidate first (``B: x vs A: x: different ...``):
    each value stands in the place of its lane's name."""

    what: str
    a: str
    b: str
    subject: str = ""
    aspect: str = ""

    @property
    def blocking(self) -> bool:
        """Whether a comparison refuses it (see :data:`BLOCKING`)."""
        return self.what in BLOCKING

    @property
    def unknown(self) -> bool:
        """Whether a side did not record the fact (it is not checked, only stated)."""
        return UNKNOWN in (self.a, self.b)

    def __str__(self) -> str:
        head = f"{self.what} {self.subject}" if self.subject else self.what
        aspect = f"{self.aspect} " if self.aspect else ""
        return f"{head}: {aspect}{self.b} vs {self.a}"


def kind_of(facts: LaneFacts) -> str:
    """``simulated`` or ``real``: lanes of different kinds are never ranked together."""
    return "simulated" if facts.simulated else "real"


def _owners_text(owners: frozenset[str], other: frozenset[str]) -> str:
    only = sorted(owners - other)
    shown = ", ".join(only[:3]) + (", ..." if len(only) > 3 else "")
    return f"{len(owners)} owners" + (f" ({len(only)} not in the other: {shown})" if only else "")


def differences(a: LaneFacts, b: LaneFacts) -> list[Difference]:
    """Every way ``b`` differs from ``a``, blocking ones first (in :data:`BLOCKING` order),
    then backend, prompt and each setting. A lane fact one side did not record ("") is no
    difference: runs written before it was recorded stay comparable. QA facts are compared
    when both lanes have memory QA from different QA steps; one a run did not record is an
    :data:`UNKNOWN` difference (stated, not refused)."""
    found: list[Difference] = []
    # Lanes of one run share its QA step (the same object): nothing of it to compare.
    same_step = a.qa is b.qa
    qa = (a.qa, b.qa) if a.qa is not None and b.qa is not None and not same_step else None

    def add(what: str, left: str, right: str) -> None:
        if left and right and left != right:
            found.append(Difference(what, left, right))

    if qa is not None:
        found += _qa_differences(*qa, key=True)
    if a.dataset.startswith("sha256 ") == b.dataset.startswith("sha256 "):  # like with like
        add("dataset", a.dataset, b.dataset)
    if a.owners and b.owners and a.owners != b.owners:
        found.append(
            Difference("owners", _owners_text(a.owners, b.owners), _owners_text(b.owners, a.owners))
        )
    add("matcher", a.matcher, b.matcher)
    if a.matcher == b.matcher:
        add("matcher version", a.matcher_version, b.matcher_version)
    add("judge", a.judge, b.judge)
    if qa is not None:
        found += _qa_differences(*qa, key=False)
    if a.simulated != b.simulated:
        found.append(Difference("backend kind", kind_of(a), kind_of(b)))
    add("backend", a.backend, b.backend)
    if a.prompt_sha256 and b.prompt_sha256 and a.prompt_sha256 != b.prompt_sha256:
        before, after = (f"{f.prompt} ({f.prompt_sha256[:8]})" for f in (a, b))
        found.append(Difference("prompt", before, after))
    for name in dict.fromkeys([*a.settings, *b.settings]):
        left, right = a.settings.get(name), b.settings.get(name)
        if left != right:
            found.append(Difference(f"setting {name}", _shown(left), _shown(right)))
    return found


def _shown(value: Any) -> str:
    return "unset" if value is None else str(value)


def _prompt_text(facts: QAFacts) -> str:
    sha = facts.answer_prompt_sha256
    return f"{facts.answer_prompt} ({sha[:12]})" if sha else ""


def _qa_differences(a: QAFacts, b: QAFacts, *, key: bool) -> list[Difference]:
    """The answer key (``key``), else what answered and judged: the answerer by spec, then by
    model identity; its prompt and settings; each judge both runs have by backend, model,
    prompt hash and settings; the conditions."""
    found: list[Difference] = []

    def add(what: str, left: str, right: str, subject: str = "", aspect: str = "") -> None:
        if left != right or not left:
            found.append(Difference(what, left or UNKNOWN, right or UNKNOWN, subject, aspect))

    if key:
        add("answer key", a.answer_key, b.answer_key)
        return found
    add("answerer", a.answerer, b.answerer)
    if a.answerer == b.answerer:
        add("answerer", a.answerer_model, b.answerer_model, a.answerer, "model")
    if a.answer_prompt_sha256 != b.answer_prompt_sha256 or not a.answer_prompt_sha256:
        add("answer prompt", _prompt_text(a), _prompt_text(b))
    add("answer settings", a.answer_settings, b.answer_settings)
    for name in (n for n in a.judges if n in b.judges):
        left, right, subject = a.judges[name], b.judges[name], f"{name!r}"
        add("judge", left.backend, right.backend, subject, "backend")
        if left.backend == right.backend:
            add("judge", left.model, right.model, subject, "model")
        add("judge", left.prompt_sha256[:12], right.prompt_sha256[:12], subject, "prompt sha256")
        add("judge", left.settings, right.settings, subject, "settings")
    add("QA conditions", ", ".join(a.conditions), ", ".join(b.conditions))
    return found


def check_pairs(
    pairs: Iterable[tuple[LaneFacts, LaneFacts]], *, allow_mixed: bool = False
) -> list[str]:
    """Refuse pairs a comparison must not rank; return the banners of those allowed, and of
    the QA facts a run did not record (``unchecked: ...``, never refused).

    Raises:
        MixedComparisonError: A pair differs in a :data:`BLOCKING` way and ``allow_mixed`` is
            false; the message names the lanes and the difference and says how to proceed.

    Each line names the candidate lane, then its baseline, and gives the two values in the
    same order (``B: x vs A: x: different answerer: sim:sloppy vs sim:careful``).
    """
    banners: list[str] = []
    for base, cand in pairs:
        for diff in differences(base, cand):
            if not diff.blocking:
                continue
            if diff.unknown:
                banner = (
                    f"unchecked: {cand.name} vs {base.name}: {diff} (its QA step did not "
                    "record it; run the QA step again to record it)"
                )
                if banner not in banners:
                    banners.append(banner)
                continue
            line = f"{cand.name} vs {base.name}: different {diff}"
            if not allow_mixed:
                raise MixedComparisonError(
                    f"{line}; the delta would mix in that difference (compare lanes measured "
                    "alike, or pass --allow-mixed / allow_mixed=True to compare anyway)",
                    diff,
                )
            banner = f"mixed comparison: {line}"
            if banner not in banners:
                banners.append(banner)
    return banners


_Item = TypeVar("_Item")


def kind_baselines(
    items: Sequence[_Item], facts: Callable[[_Item], LaneFacts]
) -> list[tuple[_Item, _Item]]:
    """Each item (a lane, ``facts`` reads its facts) paired with its baseline, the first item
    of its kind (simulated or real), in the items' order; a baseline is paired with itself.

    The one pairing rule: a comparison ranks a lane against its baseline only
    (:func:`memlab.scoring.comparing.comparison.pairs_by_kind`) and a report splits its tables by
    baseline (:func:`memlab.reporting.groups.lane_groups`), so a simulated lane is never
    ranked against a real model."""
    first: dict[str, _Item] = {}
    return [(first.setdefault(kind_of(facts(item)), item), item) for item in items]
