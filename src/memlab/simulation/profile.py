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
    qa:                                     # answering and judging (memlab.simulation.qa)
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

Failure categories are the parse ladder's (:class:`memlab.core.parsing.FailureCategory`).
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

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from memlab import plugins
from memlab.core.parsing import FailureCategory
from memlab.core.yamlio import YamlInputError, parse_yaml, read_text_limited
from memlab.errors import MemlabError

__all__ = [
    "BUILTIN_PROFILES",
    "INVENTED_FACTS",
    "PROFILES",
    "WORDING_STYLES",
    "SimProfile",
    "SimProfileError",
    "SimQAProfile",
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
BUILTIN_PROFILES: tuple[str, ...] = ("careful", "sloppy", "chatty")
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
    "sim_profile", "simulated model profile", check=_check_profile
)
"""Profiles by name: the built-ins and those plugins register (``sim:<name>``)."""
for _name in BUILTIN_PROFILES:
    PROFILES.register(_name, resources.files("memlab.simulation") / "profiles" / f"{_name}.yaml")

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

    @field_validator("wording")
    @classmethod
    def _some_wording(cls, value: dict[str, float]) -> dict[str, float]:
        if not value or sum(value.values()) <= 0:
            raise ValueError("give at least one wording style with a positive weight")
        return value

    @field_validator("confidence", "invented_confidence")
    @classmethod
    def _confidences(cls, value: dict[float, float] | None) -> dict[float, float] | None:
        return None if value is None else _unit_distribution(value, "confidence value")

    @field_validator("failures")
    @classmethod
    def _failure_total(cls, value: dict[FailureCategory, float]) -> dict[FailureCategory, float]:
        total = sum(value.values())
        if total > 1.0 + 1e-9:
            raise ValueError(f"failure rates add up to {total:g}; at most 1 in total")
        return value

    # ------------------------------------------------------------------ derived quantities

    @property
    def reads_prompts(self) -> bool:
        """Whether replies depend on the prompt text. No field of a profile reads the prompt
        (the simulated model answers from the dataset's labels), so two prompts give the same
        replies and a comparison of prompts on it is inconclusive
        (:mod:`memlab.scoring.inconclusive`); a profile declaring prompt effects says so here."""
        return False

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
        data = parse_yaml(text, source).data
    except YamlInputError as exc:
        raise SimProfileError(str(exc)) from None
    if not isinstance(data, dict):
        raise SimProfileError(f"{source}: a profile must be a mapping of fields at the top level")
    try:
        return SimProfile.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"field '{_where(err['loc'])}': {err['msg']} (got {err.get('input')!r})"
            for err in exc.errors()
        )
        raise SimProfileError(f"{source}: invalid simulated model profile: {problems}") from exc


def _where(loc: tuple[int | str, ...]) -> str:
    # pydantic marks a bad mapping key with a trailing "[key]" step.
    return ".".join(str(p) for p in loc if p != "[key]") or "(root)"


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
