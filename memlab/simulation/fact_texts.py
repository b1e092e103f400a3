"""The texts the simulated model writes: a gold fact in each wording style, a stored fact
restated, a must-not-store string leaked as a fact, and the facts it invents. The wording
styles a profile weighs are :data:`memlab.simulation.profile_model.WORDING_STYLES`.
"""

from __future__ import annotations

import re

from memlab.simulation.profile_model import WORDING_STYLES

__all__ = ["INVENTED_FACTS", "leaked", "restated", "worded", "wordings"]

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
