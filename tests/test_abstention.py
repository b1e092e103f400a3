"""Abstention detection: answers that decline, and answers that merely use the same words.

Every example is written by hand; the judge calibration set's abstention kind is checked in
tests/test_judge_audit.py.
"""

from __future__ import annotations

import pytest

from memlab.qa.answer_scores import is_abstention

DECLINING = [
    "I'm not sure.",
    "I\u2019m not sure.",
    "Not sure",
    "I am not certain.",
    "I'm unsure.",
    "I don't know.",
    "Don't know.",
    "I don't remember.",
    "I can't tell.",
    "I cannot say for sure.",
    "I couldn't find that in memory.",
    "I have no idea",
    "No idea.",
    "I have no record of that.",
    "I don't have that information.",
    "I do not have any information about that.",
    "No information available.",
    "There is no record of that.",
    "There's no mention of it.",
    "Not mentioned.",
    "Not mentioned in the memory.",
    "It is not mentioned in the conversations.",
    "That was never mentioned.",
    "It isn't stated anywhere.",
    "That has not been discussed.",
    "The conversation does not say.",
    "The memory doesn't include that.",
    "Nothing in the conversations says so.",
    "Nothing was said about that.",
    "Unknown.",
    "Unclear.",
    "It is unclear from the conversations.",
    "Hard to say.",
    "Not enough information to answer.",
    "Sorry, I'm unable to answer that.",
    "It cannot be determined.",
    "N/A",
]

ANSWERING = [
    "They don't know each other yet.",
    "He can't tell the twins apart.",
    "She was not sure at first, then chose Berlin.",
    "No, he had no idea about the party.",
    "She got no answer from the landlord.",
    "She has no memory of the accident.",
    "The flat was not available until June.",
    "He didn't say goodbye.",
    "Not Lisbon but Porto.",
    "Not yet.",
    "Nothing, she skipped breakfast.",
    "She never mentioned her brother again.",
    "She is not known for punctuality.",
    "She knows nothing about cars.",
    "She cannot say no to her sister.",
    "An unknown artist painted it.",
    "None of the above",
    "Nonetheless, Berlin.",
    "Notebooks and pens.",
    "No, she has never been.",
    "No",
]


@pytest.mark.parametrize("answer", DECLINING)
def test_declining_answers_are_abstentions(answer: str) -> None:
    assert is_abstention(answer)


@pytest.mark.parametrize("answer", ANSWERING)
def test_answers_using_the_same_words_are_not_abstentions(answer: str) -> None:
    assert not is_abstention(answer)
