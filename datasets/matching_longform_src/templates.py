"""The phrasing templates the long-form calibration set is rendered with.

Every pool is a list of ``(split, template)``: a template is used only for claims of its split,
so the ``test`` split is written with openers, joiners, hedges and stored-fact shapes that the
``dev`` split (the one matchers are tuned on) never shows. The stance families (dislike, can't
stand, refuse to, won't, prefer not to, strongly averse to, avoid, not a fan of ...) appear in
both splits, each with wordings of its own.

Placeholders: ``{np}`` a noun phrase ("horror films"), ``{vp}`` a bare verb phrase ("watch
horror films"), ``{ing}`` its -ing form ("watching horror films"), ``{core}`` the first-person
claim, ``{reason}`` and ``{cons}`` a first-person reason and consequence (lower case, no final
stop), ``{fact}`` a compressed third-person fact.
"""

from __future__ import annotations

__all__ = [
    "CONSEQUENCE",
    "GOLD_NEGATIVE",
    "GOLD_POSITIVE",
    "HEDGE",
    "OPENER",
    "REASON",
    "REASON_KEPT",
    "STORED_NEGATIVE",
    "STORED_POSITIVE",
    "STORED_SHAPE",
]

Pool = list[tuple[str, str]]

# Framing before the first-person claim ("" = none).
OPENER: Pool = [
    ("dev", ""),
    ("dev", "Honestly, "),
    ("dev", "Just so you know, "),
    ("dev", "I should mention that "),
    ("dev", "For context, "),
    ("test", ""),
    ("test", "To be honest, "),
    ("test", "Something you should know about me: "),
    ("test", "I'll be upfront: "),
    ("test", "Personally, "),
]

# A hedge in front of the claim.
HEDGE: Pool = [
    ("dev", "I think "),
    ("dev", "I guess "),
    ("dev", "Generally speaking, "),
    ("test", "I'd say "),
    ("test", "For the most part, "),
    ("test", "More or less, "),
]

# The claim followed by its reason.
REASON: Pool = [
    ("dev", "{core} because {reason}."),
    ("dev", "{core}, since {reason}."),
    ("dev", "{core}. The reason is that {reason}."),
    ("test", "{core}, mainly because {reason}."),
    ("test", "{core} as {reason}."),
    ("test", "{core}; {reason}."),
    ("test", "{core} - {reason}."),
]

# The claim followed by a consequence.
CONSEQUENCE: Pool = [
    ("dev", "{core}, so {cons}."),
    ("dev", "{core}. That's why {cons}."),
    ("dev", "{core}, which means {cons}."),
    ("test", "{core}. As a result, {cons}."),
    ("test", "{core}, so in practice {cons}."),
    ("test", "{core}; because of that, {cons}."),
]

# A stored fact that keeps the reason the gold fact gave (or adds one).
REASON_KEPT: Pool = [
    ("dev", "{fact} because {reason}"),
    ("dev", "{fact} (reason: {reason})"),
    ("test", "{fact}, due to {reason}"),
    ("test", "{fact} - {reason}"),
]

# How a stored fact is shaped around its compressed claim.
STORED_SHAPE: Pool = [
    ("dev", "{fact}"),
    ("dev", "User {fact_lower}"),
    ("test", "{fact}"),
    ("test", "The user {fact_lower}"),
]

# First-person negative stances, by family.
GOLD_NEGATIVE: dict[str, Pool] = {
    "dislike": [("dev", "I dislike {np}"), ("test", "I really don't like {np}")],
    "cant_stand": [("dev", "I can't stand {np}"), ("test", "I just can't stand {np}")],
    "hate": [("dev", "I hate {ing}"), ("test", "I absolutely hate {ing}")],
    "refuse": [("dev", "I refuse to {vp}"), ("test", "I flat out refuse to {vp}")],
    "wont": [("dev", "I won't {vp}"), ("test", "I won't {vp} anymore")],
    "prefer_not": [("dev", "I'd prefer not to {vp}"), ("test", "I prefer not to {vp}")],
    "averse": [("dev", "I'm strongly averse to {ing}"), ("test", "I'm quite averse to {ing}")],
    "avoid": [("dev", "I avoid {ing}"), ("test", "I try to avoid {ing}")],
    "not_fan": [("dev", "I'm not a fan of {np}"), ("test", "I'm really not a fan of {np}")],
}

# Third-person compressed negative stances, by family.
STORED_NEGATIVE: dict[str, Pool] = {
    "dislike": [("dev", "Dislikes {np}"), ("test", "Doesn't like {np}")],
    "cant_stand": [("dev", "Can't stand {np}"), ("test", "Cannot stand {np}")],
    "hate": [("dev", "Hates {ing}"), ("test", "Hates {ing}")],
    "refuse": [("dev", "Refuses to {vp}"), ("test", "Refuses to {vp}")],
    "wont": [("dev", "Won't {vp}"), ("test", "Will not {vp}")],
    "prefer_not": [("dev", "Prefers not to {vp}"), ("test", "Would rather not {vp}")],
    "averse": [("dev", "Averse to {ing}"), ("test", "Strong aversion to {ing}")],
    "avoid": [("dev", "Avoids {ing}"), ("test", "Stays away from {np}")],
    "not_fan": [("dev", "Not a fan of {np}"), ("test", "Not keen on {np}")],
}

# First-person positive stances.
GOLD_POSITIVE: Pool = [
    ("dev", "I love {np}"),
    ("dev", "I really enjoy {ing}"),
    ("dev", "I'm a big fan of {np}"),
    ("test", "I'm really into {np}"),
    ("test", "I adore {np}"),
    ("test", "I'm passionate about {ing}"),
]

# Third-person compressed positive stances (also the polarity flips of negative claims).
STORED_POSITIVE: Pool = [
    ("dev", "Enjoys {ing}"),
    ("dev", "Loves {np}"),
    ("dev", "Likes {np}"),
    ("test", "Is a fan of {np}"),
    ("test", "Keen on {ing}"),
    ("test", "Really likes {ing}"),
]
