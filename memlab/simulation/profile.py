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

This module holds the registry of profiles by name (:data:`PROFILES`) and the loader
(:func:`load_profile`); the fields and their validation are
:mod:`memlab.simulation.profile_model`'s.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Union

from pydantic import ValidationError

from memlab import plugins
from memlab.core.base.yamlio import YamlInputError, key_lines, parse_yaml, read_text_limited
from memlab.errors import MemlabError
from memlab.simulation.profile_model import SimProfile, SimRates

__all__ = ["BUILTIN_PROFILES", "PROFILES", "SimProfileError", "load_profile"]

BUILTIN_PROFILES: tuple[str, ...] = ("careful", "sloppy", "chatty", "attentive")
"""The profiles memlab ships (``profiles/<name>.yaml``)."""

ProfileSource = Union["SimProfile", Traversable]
"""A registered profile: the profile itself, or a YAML file (a path or package resource)."""


def _check_profile(name: str, entry: object) -> str:
    if isinstance(entry, Traversable):
        return ""
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


class SimProfileError(MemlabError, ValueError):
    """A simulated-model profile is missing or invalid; the message names the file and field."""


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
