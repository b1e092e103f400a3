"""Long facts worded alike but for one swapped phrase: the default matcher's veto."""

from __future__ import annotations

import pytest

from memlab.matching.default_matcher import DefaultMatcher
from memlab.matching.fact_reading import read_fact
from memlab.matching.near_copy import MIN_WORDS, changed_wording
from memlab.matching.word_links import Links

GOLD = (
    "On quiet evenings I usually like baking sourdough bread at home, because the slow "
    "kneading calms me down after a hectic week."
)


@pytest.mark.parametrize(
    ("stored", "swap"),
    [
        # The condition swapped.
        (GOLD.replace("quiet evenings", "family visits"), "'quiet evenings'"),
        # The value swapped.
        (GOLD.replace("sourdough bread", "rye crackers"), "'sourdough bread'"),
        # The polarity swapped by a negator alone.
        (GOLD.replace("usually like", "usually do not like"), "negation"),
    ],
)
def test_a_long_near_copy_with_one_phrase_swapped_is_vetoed(stored: str, swap: str) -> None:
    reason = changed_wording(read_fact(GOLD), read_fact(stored), Links())
    assert reason is not None and reason.startswith("changed wording:") and swap in reason
    assert not DefaultMatcher().match(stored, GOLD).matched


def test_a_near_copy_that_only_rewords_a_hedge_or_adds_words_still_matches() -> None:
    matcher = DefaultMatcher()
    hedged = GOLD.replace("I usually like", "I generally like")  # hedges are stop words
    longer = GOLD.replace("at home,", "at home in my small kitchen,")  # nothing replaced
    for stored in (hedged, longer):
        result = matcher.match(stored, GOLD)
        assert result.matched, result.reason


def test_short_facts_and_distant_wordings_are_left_to_the_other_rules() -> None:
    short_gold, short_stored = "I work at a logistics firm.", "Works at a logistics company"
    assert len(read_fact(short_gold).words) < MIN_WORDS
    assert changed_wording(read_fact(short_gold), read_fact(short_stored), Links()) is None
    reworded = (
        "Kneading dough calms me after a busy week, so on a quiet evening I tend to bake "
        "sourdough at home."
    )
    assert changed_wording(read_fact(GOLD), read_fact(reworded), Links()) is None
