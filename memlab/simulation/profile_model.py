"""The simulated model's profile: its fields and their validation, the prompt effects it
declares, the quantities derived from its rates and the draws that follow them.

The YAML format, the built-in profiles and how a profile is found by name or read from a file
are :mod:`memlab.simulation.profile`'s; the texts the model writes (wordings, restatements,
leaks, invented facts) are :mod:`memlab.simulation.fact_texts`'.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping
from typing import Annotated, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from memlab.core.jsondoc.parsing import FailureCategory

__all__ = [
    "WORDING_STYLES",
    "PromptEffect",
    "SimProceduralProfile",
    "SimProfile",
    "SimQAProfile",
    "SimRates",
    "SimTieredProfile",
    "WordingStyle",
    "uniform",
]

WordingStyle = Literal["verbatim", "terse"]
WORDING_STYLES: tuple[str, ...] = ("verbatim", "terse")

# Strict, finite numbers: a YAML `true` is not 1.0, and `.inf` is no weight.
Number = Annotated[float, Field(strict=True, allow_inf_nan=False)]
Probability = Annotated[Number, Field(ge=0.0, le=1.0)]
Weight = Annotated[Number, Field(ge=0.0)]
_K = TypeVar("_K")


def uniform(*key: object) -> float:
    """A uniform number in [0, 1) determined by ``key`` (every draw of the simulated model)."""
    digest = hashlib.sha256("\x1f".join(str(k) for k in key).encode("utf-8")).digest()
    return int.from_bytes(digest[:7], "big") / float(1 << 56)


def _verbatim_only() -> dict[WordingStyle, float]:
    return {"verbatim": 1.0}


def _default_leniency() -> dict[str, float]:
    return {"lenient": 0.6, "strict": 0.05}


class SimQAProfile(BaseModel):
    """How the simulated model answers questions and judges answers (:mod:`.sim_qa`).

    Attributes:
        answer_rate: P(stating the answer) for an answerable question whose evidence is in
            the prompt; otherwise a wrong but on-topic guess.
        abstain_rate: P(saying it does not know) when the question's evidence is not in the
            prompt; otherwise a wrong guess.
        trap_rate: P(giving the wrong answer) to an abstain or adversarial question whose
            evidence is in the prompt (an injected claim the memory kept); otherwise it
            abstains.
        judge_leniency: Judge prompt name -> P(accepting a wrong but on-topic answer).
        default_leniency: The same for judge prompts not named in ``judge_leniency``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    answer_rate: Probability = 0.9
    abstain_rate: Probability = 0.7
    trap_rate: Probability = 0.3
    judge_leniency: dict[str, Probability] = Field(default_factory=_default_leniency)
    default_leniency: Probability = 0.3

    def leniency(self, judge: str) -> float:
        """P(the judge prompt ``judge`` accepts a wrong but on-topic answer)."""
        return self.judge_leniency.get(judge, self.default_leniency)


def _unit_distribution(value: dict[float, float], what: str) -> dict[float, float]:
    """Values in [0, 1] -> weights, at least one positive; sorted by value."""
    bad = [v for v in value if not 0.0 <= v <= 1.0]
    if bad:
        raise ValueError(f"{what}s must lie in [0, 1], got {bad}")
    if not value or sum(value.values()) <= 0:
        raise ValueError(f"give at least one {what} with a positive weight")
    return dict(sorted(value.items()))


def _default_importance() -> dict[float, float]:
    return {0.9: 0.6, 0.7: 0.2, 0.5: 0.2}


class SimTieredProfile(BaseModel):
    """How the simulated model answers the tiered memory's calls (:mod:`.tiered`).

    Attributes:
        summary_keep_rate: P(a gold fact of the session becomes a key point of the summary
            that folds the session's last message), in its verbatim wording.
        importance: Rating value -> weight, for a candidate that states a gold fact (the
            declared noise of the ratings: with the seed's threshold 0.7, only ratings above
            it store the fact, so a rating of exactly 0.7 does not).
        other_importance: The same for a candidate of no known gold fact.
        compress_keep_rate: P(a memory's content survives into the compression summary).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    summary_keep_rate: Probability = 0.9
    importance: dict[Number, Weight] = Field(default_factory=_default_importance)
    other_importance: dict[Number, Weight] = Field(default_factory=lambda: {0.3: 1.0})
    compress_keep_rate: Probability = 0.8

    @field_validator("importance", "other_importance")
    @classmethod
    def _ratings(cls, value: dict[float, float]) -> dict[float, float]:
        return _unit_distribution(value, "importance rating")

    def rating_shares(self, gold: bool = True) -> dict[float, float]:
        """Rating values with their probabilities (weights normalised)."""
        weights = self.importance if gold else self.other_importance
        total = sum(weights.values())
        return {value: weight / total for value, weight in weights.items()}

    def share_above(self, threshold: float, gold: bool = True) -> float:
        """P(rating > threshold): the share of candidates the tiered memory stores."""
        return sum(p for r, p in self.rating_shares(gold).items() if r > threshold)

    def pick_rating(self, u: float, gold: bool = True) -> float:
        """The rating for a uniform draw ``u`` in [0, 1)."""
        return _pick(self.rating_shares(gold), u)


class SimProceduralProfile(BaseModel):
    """How the simulated model answers the procedural memory's ``procedures`` call
    (:mod:`.procedural`).

    Attributes:
        learn_rate: P(a procedure the session is labelled with is in the reply).
        step_keep_rate: P(each of a learned procedure's steps is kept, in its verbatim
            wording and in order); a procedure that keeps no step is left out. Its triggers
            are the labelled ones.
        answer_step_rate: P(the answerer names a step of the procedure a ``procedure``
            question asks for, when the step is in its prompt), each step drawn apart
            (:mod:`.qa`).

    With failure share ``f`` (the profile's ``failures``, which break this reply like any
    other), a labelled procedure of ``n`` steps is learned with probability
    ``(1 - f) * learn_rate * (1 - (1 - step_keep_rate) ** n)`` and keeps in expectation
    ``(1 - f) * learn_rate * step_keep_rate`` of its steps in order; its question, asked
    where its trigger recalls it, then scores ``(1 - f) * learn_rate * step_keep_rate *
    answer_step_rate`` step-order accuracy in expectation.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    learn_rate: Probability = 0.8
    step_keep_rate: Probability = 0.9
    answer_step_rate: Probability = 0.9


def _positive_wording(value: dict[str, float]) -> dict[str, float]:
    if not value or sum(value.values()) <= 0:
        raise ValueError("give at least one wording style with a positive weight")
    return value


def _failure_total(value: dict[FailureCategory, float]) -> dict[FailureCategory, float]:
    total = sum(value.values())
    if total > 1.0 + 1e-9:
        raise ValueError(f"failure rates add up to {total:g}; at most 1 in total")
    return value


class SimRates(BaseModel):
    """The rates of update replies a prompt effect may set (each as in :class:`SimProfile`);
    a field left out keeps the profile's value. QA, judge and tiered-memory rates are not
    here: their prompts are not the update template."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    propose_rate: Probability | None = None
    wording: dict[WordingStyle, Weight] | None = None
    confidence: dict[Number, Weight] | None = None
    restate_rate: Probability | None = None
    invent_rate: Annotated[Number, Field(ge=0.0, le=5.0)] | None = None
    invented_confidence: dict[Number, Weight] | None = None
    remove_retracted: Probability | None = None
    leak_rate: Probability | None = None
    failures: dict[FailureCategory, Probability] | None = None

    @field_validator("wording")
    @classmethod
    def _some_wording(cls, value: dict[str, float] | None) -> dict[str, float] | None:
        return None if value is None else _positive_wording(value)

    @field_validator("confidence", "invented_confidence")
    @classmethod
    def _confidences(cls, value: dict[float, float] | None) -> dict[float, float] | None:
        return None if value is None else _unit_distribution(value, "confidence value")

    @field_validator("failures")
    @classmethod
    def _failures(
        cls, value: dict[FailureCategory, float] | None
    ) -> dict[FailureCategory, float] | None:
        return None if value is None else _failure_total(value)

    @model_validator(mode="after")
    def _something(self) -> SimRates:
        if not self.changes():
            raise ValueError("set at least one rate (e.g. {propose_rate: 0.9})")
        return self

    def changes(self) -> dict[str, object]:
        """The fields this sets -> their values."""
        return {k: v for k, v in self if v is not None}


def _spaced(text: str) -> str:
    return " ".join(text.split()).casefold()


class PromptEffect(BaseModel):
    """A feature of the update prompt's template that changes declared rates.

    Exactly one condition: ``when_contains`` (a phrase the template holds; case, line breaks
    and runs of spaces ignored), ``when_matches`` (a regular expression found in it,
    case-insensitive) or ``when_missing`` (a phrase it lacks, compared like
    ``when_contains``). ``set`` gives the rates that apply when the condition holds;
    ``owners``, when given, limits the effect to those owners' update prompts.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    name: str = ""
    when_contains: str | None = Field(None, min_length=1)
    when_matches: str | None = Field(None, min_length=1)
    when_missing: str | None = Field(None, min_length=1)
    rates: SimRates = Field(alias="set")
    owners: tuple[str, ...] | None = Field(None, min_length=1)
    """The owners (``user_id``) whose update prompts the effect applies to (None: all)."""

    @field_validator("when_matches")
    @classmethod
    def _pattern(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"not a regular expression: {exc}") from None
        return value

    @model_validator(mode="after")
    def _one_condition(self) -> PromptEffect:
        given = [self.when_contains, self.when_matches, self.when_missing]
        if sum(c is not None for c in given) != 1:
            raise ValueError("give exactly one of when_contains, when_matches, when_missing")
        return self

    @property
    def label(self) -> str:
        """How provenance names it: ``name``, else its condition."""
        if self.name:
            return self.name
        if self.when_contains is not None:
            return f"contains {self.when_contains!r}"
        if self.when_matches is not None:
            return f"matches {self.when_matches!r}"
        return f"missing {self.when_missing!r}"

    def applies(self, template: str, owner: str | None = None) -> bool:
        """Whether the condition holds for the template text ``template`` (and, for an effect
        limited to some owners, whether ``owner`` is one of them)."""
        if self.owners is not None and owner not in self.owners:
            return False
        if self.when_contains is not None:
            return _spaced(self.when_contains) in _spaced(template)
        if self.when_missing is not None:
            return _spaced(self.when_missing) not in _spaced(template)
        assert self.when_matches is not None  # validated: exactly one condition
        return re.search(self.when_matches, template, re.IGNORECASE) is not None


class SimProfile(BaseModel):
    """The declared behaviour of the simulated model (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    description: str = ""
    propose_rate: Probability = 0.8
    wording: dict[WordingStyle, Weight] = Field(default_factory=_verbatim_only)
    confidence: dict[Number, Weight] = Field(default_factory=lambda: {0.9: 1.0})
    restate_rate: Probability = 0.0
    invent_rate: Number = Field(0.0, ge=0.0, le=5.0)
    invented_confidence: dict[Number, Weight] | None = None
    """Confidences of invented facts (default: ``confidence``); lower ones make the
    threshold trade recall for precision, as with a real model unsure of what it makes up."""
    remove_retracted: Probability = 1.0
    leak_rate: Probability = 0.0
    failures: dict[FailureCategory, Probability] = Field(default_factory=dict)
    qa: SimQAProfile = Field(default_factory=SimQAProfile)
    tiered: SimTieredProfile = Field(default_factory=SimTieredProfile)
    procedural: SimProceduralProfile = Field(default_factory=SimProceduralProfile)
    prompt_effects: tuple[PromptEffect, ...] = ()
    """What the update prompt's template changes, in order (see the module docstring)."""
    draws: Literal["coupled", "independent"] = "coupled"
    """How its random draws relate to another lane's (see the module docstring)."""

    @field_validator("wording")
    @classmethod
    def _some_wording(cls, value: dict[str, float]) -> dict[str, float]:
        return _positive_wording(value)

    @field_validator("confidence", "invented_confidence")
    @classmethod
    def _confidences(cls, value: dict[float, float] | None) -> dict[float, float] | None:
        return None if value is None else _unit_distribution(value, "confidence value")

    @field_validator("failures")
    @classmethod
    def _failures(cls, value: dict[FailureCategory, float]) -> dict[FailureCategory, float]:
        return _failure_total(value)

    # ------------------------------------------------------------------ derived quantities

    @property
    def reads_prompts(self) -> bool:
        """Whether the update prompt's text changes its replies: True iff it declares prompt
        effects (a profile without them answers every prompt variant alike)."""
        return bool(self.prompt_effects)

    @property
    def owner_effects(self) -> bool:
        """Whether a prompt effect is limited to some owners (the profile in force then
        depends on the owner as well as the template)."""
        return any(effect.owners is not None for effect in self.prompt_effects)

    def for_template(
        self, template: str, owner: str | None = None
    ) -> tuple[SimProfile, tuple[str, ...]]:
        """The profile in force for update prompts of ``template`` (the template's own text,
        without the conversation and memory rendered into it) sent for ``owner``, and the
        labels of the effects applied, in order."""
        changes: dict[str, object] = {}
        applied: list[str] = []
        for effect in self.prompt_effects:
            if effect.applies(template, owner):
                changes.update(effect.rates.changes())
                applied.append(effect.label)
        if not changes:
            return self, ()
        return self.model_copy(update=changes), tuple(applied)

    def wording_shares(self) -> dict[str, float]:
        """Wording styles with their probabilities (weights normalised)."""
        total = sum(self.wording.values())
        return {style: weight / total for style, weight in self.wording.items()}

    def confidence_shares(self, invented: bool = False) -> dict[float, float]:
        """Confidence values with their probabilities (weights normalised)."""
        weights = (self.invented_confidence if invented else None) or self.confidence
        total = sum(weights.values())
        return {value: weight / total for value, weight in weights.items()}

    def share_at_least(self, threshold: float, invented: bool = False) -> float:
        """P(confidence >= threshold): the share of proposals a threshold lets through."""
        shares = self.confidence_shares(invented)
        return sum(p for c, p in shares.items() if c >= threshold)

    def failure_rate(self, categories: set[FailureCategory] | None = None) -> float:
        """Total injected failure rate (of the given categories, default all)."""
        return sum(r for c, r in self.failures.items() if categories is None or c in categories)

    # ------------------------------------------------------------------ draws

    def pick_wording(self, u: float) -> str:
        """The wording style for a uniform draw ``u`` in [0, 1)."""
        return _pick(self.wording_shares(), u)

    def pick_confidence(self, u: float, invented: bool = False) -> float:
        """The confidence for a uniform draw ``u`` in [0, 1)."""
        return _pick(self.confidence_shares(invented), u)

    def pick_failure(self, u: float) -> FailureCategory | None:
        """The injected failure for a uniform draw ``u`` (None: a well-formed reply)."""
        edge = 0.0
        for category in FailureCategory:  # fixed order, so a draw means the same everywhere
            edge += self.failures.get(category, 0.0)
            if u < edge:
                return category
        return None

    def inventions(self, u: float) -> int:
        """Invented facts in one update: ``floor(rate)``, plus one with P(fractional part)."""
        whole = math.floor(self.invent_rate)
        return whole + (1 if u < self.invent_rate - whole else 0)


def _pick(shares: Mapping[_K, float], u: float) -> _K:
    edge = 0.0
    last: _K | None = None
    for key, share in shares.items():
        edge += share
        last = key
        if u < edge:
            return key
    assert last is not None  # validated: at least one entry
    return last
