"""Profiles of the simulated model: the declared behaviour that metrics are checked against.

A profile says how the simulated model (:mod:`memlab.simulation.model`) answers: how likely it
proposes each revealed gold fact, in which wording, with which confidences, how often it
restates stored facts, invents facts, removes retracted ones, leaks must-not-store text, and
how often each kind of broken reply occurs. Built-in profiles (``careful``, ``sloppy``,
``chatty``) ship as YAML next to this module; any YAML file with the same fields works::

    name: mine
    propose_rate: 0.8                       # P(a revealed gold fact is proposed)
    wording: {verbatim: 0.5, terse: 0.5}    # weights of the wording styles
    confidence: {0.9: 0.6, 0.6: 0.4}        # confidence value -> weight
    restate_rate: 0.2                       # P(a stored fact is proposed again, reworded)
    invent_rate: 0.5                        # invented facts per session update (mean)
    invented_confidence: {0.6: 1.0}         # their confidences (default: as above)
    remove_retracted: 0.9                   # P(the ids of a retracted fact are removed)
    leak_rate: 0.1                          # P(a must_not_store string is proposed as a fact)
    failures: {fenced: 0.05, truncated: 0.02}   # reply failure category -> rate per reply
    qa:                                     # answering and judging (memlab.simulation.qa_replies)
      answer_rate: 0.9     # P(the answer | its evidence is in the prompt)
      abstain_rate: 0.7    # P(abstain | the evidence is not); otherwise a wrong guess
      trap_rate: 0.3       # abstain/adversarial question, its evidence in the prompt: P(trap)
      judge_leniency: {lenient: 0.6, strict: 0.05}   # judge prompt -> P(accept a wrong
      default_leniency: 0.3                          # but on-topic answer)
    tiered:                                 # the tiered memory's calls (memlab.simulation.tiered)
      summary_keep_rate: 0.9               # P(a session's gold fact becomes a key point)
      importance: {0.9: 0.6, 0.7: 0.2, 0.5: 0.2}   # rating -> weight (stored only above 0.7)
      other_importance: {0.3: 1.0}         # ratings of candidates of no gold fact
      compress_keep_rate: 0.8              # P(a memory survives compression)
    prompt_effects:                         # what the update prompt's own text changes
      - name: self-facts                   # (a label for provenance; default: the condition)
        when_contains: "only facts the user states"   # or when_matches (regex), when_missing
        set: {invent_rate: 0.0, propose_rate: 0.95}  # rates of the update replies it changes
    draws: coupled                          # or independent (below)

Prompt effects make the model read the update prompt's template: an effect applies when the
template holds a phrase (``when_contains``: case-insensitive, line breaks and runs of spaces
count as one space), matches a regular expression (``when_matches``, case-insensitive) or
lacks a phrase (``when_missing``); effects apply in order, a later one overriding what an
earlier one set. Only the template counts, never the conversation or memory rendered into it
(:mod:`memlab.simulation.model` cuts those out before matching). An effect with ``owners``
(``owners: [alice, bob]``) applies only to the update prompts of those owners (by
``user_id``): a prompt "improvement" that holds for some owners and not others, as a search
overfitting its training owners sees. A profile without effects ignores prompt text entirely
(:attr:`SimProfile.reads_prompts` is False).

``draws`` states the design of a comparison between lanes. ``coupled`` (the default): every
draw is a hash of the seeds, the owner and what it is about, so two lanes with the same seed
share their draws wherever their configurations agree (common random numbers: a profile that
proposes with 0.8 stores every fact one with 0.7 stores). ``independent``: every draw also
mixes in the profile's content, and each update draw the update template, so a lane whose
profile or prompt differs draws its own noise, as two replays of a real model would; lanes
identical in both still draw alike (give them different seeds for an A/A). QA answers and
verdicts mix in the profile only: two lanes of one profile that differ only in the prompt
share those draws.

Failure categories are the parse ladder's (:class:`memlab.core.jsondoc.parsing.FailureCategory`).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Annotated, Literal, TypeVar, Union

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from memlab import plugins
from memlab.core.base.yamlio import YamlInputError, key_lines, parse_yaml, read_text_limited
from memlab.core.jsondoc.parsing import FailureCategory
from memlab.errors import MemlabError

__all__ = [
    "BUILTIN_PROFILES",
    "INVENTED_FACTS",
    "PROFILES",
    "WORDING_STYLES",
    "PromptEffect",
    "SimProceduralProfile",
    "SimProfile",
    "SimProfileError",
    "SimQAProfile",
    "SimRates",
    "SimTieredProfile",
    "WordingStyle",
    "leaked",
    "load_profile",
    "restated",
    "uniform",
    "worded",
    "wordings",
]

WordingStyle = Literal["verbatim", "terse"]
WORDING_STYLES: tuple[str, ...] = ("verbatim", "terse")
BUILTIN_PROFILES: tuple[str, ...] = ("careful", "sloppy", "chatty", "attentive")
"""The profiles memlab ships (``profiles/<name>.yaml``)."""

ProfileSource = Union["SimProfile", Traversable]
"""A registered profile: the profile itself, or a YAML file (a path or package resource)."""


def _check_profile(name: str, entry: object) -> str:
    if isinstance(entry, Traversable):
        return ""
    # Only now: SimProfile is defined below, after the built-ins (files) are registered.
    if isinstance(entry, SimProfile):
        return ""
    return f"an entry is a SimProfile or a YAML file, got {type(entry).__name__}"


PROFILES: plugins.Registry[ProfileSource] = plugins.declare(
    "sim_profile",
    "simulated model profile",
    check=_check_profile,
    builtins={
        name: resources.files("memlab.simulation") / "profiles" / f"{name}.yaml"
        for name in BUILTIN_PROFILES
    },
)
"""Profiles by name: the built-ins and those plugins register (``sim:<name>``)."""

# Strict, finite numbers: a YAML `true` is not 1.0, and `.inf` is no weight.
Number = Annotated[float, Field(strict=True, allow_inf_nan=False)]
Probability = Annotated[Number, Field(ge=0.0, le=1.0)]
Weight = Annotated[Number, Field(ge=0.0)]
_K = TypeVar("_K")


class SimProfileError(MemlabError, ValueError):
    """A simulated-model profile is missing or invalid; the message names the file and field."""


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


def load_profile(spec: str | Path) -> SimProfile:
    """Load a registered profile by name (``careful``, ``sloppy``, ``chatty``, or one a plugin
    registered in :data:`PROFILES`) or a YAML file.

    Raises:
        SimProfileError: Unknown name, unreadable file, or invalid fields (named in the message).
    """
    text_spec = str(spec)
    registered = PROFILES.get(text_spec)
    if isinstance(registered, SimProfile):
        return registered
    if registered is not None:
        source = str(registered)
        text = registered.read_text(encoding="utf-8")
    else:
        path = Path(text_spec).expanduser()
        source = str(path)
        if not path.is_file():
            raise SimProfileError(
                f"simulated model profile {text_spec!r} not found: use one of "
                f"{', '.join(PROFILES)} or the path of a YAML profile file"
            )
        try:
            text = read_text_limited(path, what="simulated model profile")
        except YamlInputError as exc:
            raise SimProfileError(str(exc)) from None
    try:  # bounded like every YAML memlab reads: size, aliases, depth
        document = parse_yaml(text, source)
    except YamlInputError as exc:
        raise SimProfileError(str(exc)) from None
    if not isinstance(document.data, dict):
        raise SimProfileError(f"{source}: a profile must be a mapping of fields at the top level")
    try:
        return SimProfile.model_validate(document.data)
    except ValidationError as exc:
        raise SimProfileError(_invalid(source, exc, key_lines(document.node))) from exc


def _invalid(source: str, exc: ValidationError, lines: Mapping[str, int]) -> str:
    """One line naming the file, the line of the first problem and every field at fault."""
    problems: list[tuple[int, str]] = []
    for err in exc.errors():
        where = _where(err["loc"])
        line = _line(where, lines)
        message = err["msg"]
        if err["type"] == "extra_forbidden" and ".set." in f".{where}":
            message = "not a rate a prompt effect can set; it sets " + ", ".join(
                SimRates.model_fields
            )
        problems.append((line, f"field '{where}': {message} (got {err.get('input')!r})"))
    first = problems[0][0]
    text = "; ".join(
        problem if line == first else problem.replace("':", f"' (line {line}):", 1)
        for line, problem in problems
    )
    return f"{source}:{first}: invalid simulated model profile: {text}"


def _where(loc: tuple[int | str, ...]) -> str:
    # pydantic marks a bad mapping key with a trailing "[key]" step; list items are "[i]".
    path = ""
    for part in loc:
        if part == "[key]":
            continue
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "(root)"


_PARENT = re.compile(r"(\.[^.\[]*|\[\d+\])$")


def _line(where: str, lines: Mapping[str, int]) -> int:
    """The line of ``where`` or of its nearest enclosing field (1: the whole file)."""
    while where and where not in lines:
        parent = _PARENT.sub("", where)
        where = parent if parent != where else ""
    return lines.get(where, 1)


# ---------------------------------------------------------------------- wordings

_CLAUSE = re.compile(r",|;| - | so | and | because | but | which | who | since | when ")
_ARTICLES = frozenset({"a", "an", "the"})


def worded(content: str, style: str) -> str:
    """A gold fact in a wording style: ``verbatim`` as is; ``terse`` keeps the first clause
    without articles ("Works 12.5-hour shifts and is usually too tired ..." -> "Works
    12.5-hour shifts"), which a matcher may or may not still count as the gold fact."""
    if style == "verbatim":
        return content
    head = _CLAUSE.split(content, maxsplit=1)[0]
    words = [w for w in head.split() if w.casefold() not in _ARTICLES]
    return " ".join(words) or content


def restated(content: str) -> str:
    """A stored fact proposed again in other words: the same content words behind a
    "User"/"The user" lead, so it is a near duplicate but not an exact or normalized one."""
    if content.casefold().startswith("user "):
        return "The user " + content[5:]
    return "User " + content[:1].lower() + content[1:]


def wordings(content: str) -> dict[str, str]:
    """Every wording the simulated model may store for a gold fact -> ``original`` or
    ``restated`` (each style of :func:`worded`, and each of those :func:`restated`)."""
    out: dict[str, str] = {}
    for style in WORDING_STYLES:
        text = worded(content, style)
        out.setdefault(text, "original")
        out.setdefault(restated(text), "restated")
    return out


def leaked(text: str) -> str:
    """A fact that stores a must-not-store string."""
    return f"Mentioned {text}"


INVENTED_FACTS: tuple[str, ...] = (
    "Keeps a tortoise named Ptolemy",
    "Collects antique barometers",
    "Plays bagpipes in a ceilidh band",
    "Is learning Icelandic on weekday mornings",
    "Owns a vintage Citroen campervan",
    "Breeds racing pigeons",
    "Competes in underwater hockey",
    "Restores mechanical typewriters",
    "Grows carnivorous pitcher plants",
    "Trains for a desert ultramarathon",
    "Writes haiku about lighthouses",
    "Volunteers at a falconry centre",
    "Builds ships inside bottles",
    "Speaks fluent Esperanto",
    "Juggles flaming torches at festivals",
    "Owns forty kaleidoscopes",
    "Practises competitive yodelling",
    "Carves chess pieces from driftwood",
    "Keeps bees on a rooftop allotment",
    "Memorised every Eurovision winner",
    "Sails a catamaran called Meridian",
    "Designs crossword puzzles for a newsletter",
    "Plays theremin in a jazz trio",
    "Restores stained-glass windows",
    "Rides a penny-farthing bicycle",
    "Studies medieval heraldry",
    "Brews mead from heather honey",
    "Paints miniature tin soldiers",
    "Photographs abandoned lighthouses",
    "Fences sabre at a regional club",
    "Collects meteorite fragments",
    "Weaves tapestries on a floor loom",
    "Keeps axolotls in an aquarium",
    "Plays hurdy-gurdy at renaissance fairs",
    "Forges damascus steel knives",
    "Tracks migrating swifts every summer",
    "Binds notebooks with goatskin leather",
    "Dives wrecks off the Scilly Isles",
    "Cultivates bonsai junipers",
    "Performs stand-up comedy in Welsh",
)
"""Facts the simulated model invents; none states a gold fact of the bundled datasets, and
no two are near duplicates (both checked by the tests)."""
