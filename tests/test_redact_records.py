"""``redact`` of a large record decides on its JSON text whether any string needs redaction;
a string that does is redacted exactly as ``redact_text`` redacts it alone, wherever escaping
would hide it in that text (tabs, newlines, quotes, case-folded letters, escaped secrets)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from memlab.core.base.redact import REDACTED, redact, redact_text, redacted_json

SECRET = "sk-test-0123456789abcdef"
QUOTED_SECRET = 'pass"word\n12345'  # characters JSON escapes

NEEDS_REDACTION = [
    "Authorization:\tBearer abcdefgh12345",
    "authorization: bearer\nabcdefgh12345",
    'headers: {"X-Api-Key": "abcdefgh12345"}',
    "x-api-\u212aey: abcdefgh12345",  # KELVIN SIGN matches k case-insensitively
    "X-Ap\u0131-Key: abcdefgh12345",  # so does a dotless i match i (its lower case stays)
    "see https://user:pw@example.com/v1",
    f"the key is {SECRET}.",
    "escaped " + "".join(f"\\u{ord(c):04x}" for c in SECRET),
]


def _record(text: str) -> dict[str, Any]:
    """A record shaped like an owner record: many clean strings and ``text`` deep inside."""
    facts = [
        {"id": f"f{i}", "content": f"Likes item {i}", "category": "preference"} for i in range(50)
    ]
    facts.insert(25, {"id": "hit", "content": text, "category": "context"})
    return {"user_id": "u1", "snapshots": [{"facts": facts}], "calls": [{"reply": "{}"}]}


CASES = [pytest.param(text, [SECRET], id=f"case{i}") for i, text in enumerate(NEEDS_REDACTION)]
# A secret with characters JSON escapes is not found verbatim in the record's JSON text.
CASES.append(pytest.param(f"quoted {QUOTED_SECRET} here", [QUOTED_SECRET], id="quoted-secret"))


@pytest.mark.parametrize(("text", "secrets"), CASES)
def test_a_string_needing_redaction_is_redacted_inside_a_large_record(
    text: str, secrets: list[str]
) -> None:
    expected = redact_text(text, secrets)
    assert expected != text and REDACTED in expected  # the case is one redact_text catches
    record = _record(text)
    untouched = copy.deepcopy(record)
    cleaned = redact(record, secrets)
    assert cleaned["snapshots"][0]["facts"][25]["content"] == expected
    assert cleaned["snapshots"][0]["facts"][24] == untouched["snapshots"][0]["facts"][24]
    assert record == untouched  # the input is not modified
    assert json.loads(redacted_json(record, secrets)) == cleaned


def test_a_clean_record_is_returned_as_it_is() -> None:
    record = _record('Works as a nurse; "night" shifts\nand a caf\u00e9 visit')
    assert redact(record, [SECRET, QUOTED_SECRET]) is record


def test_a_value_json_cannot_write_is_walked() -> None:
    value = {"a": (f"x{SECRET}", 1.5), "b": {SECRET}}  # a set: not JSON, walked as it is
    cleaned = redact(value, [SECRET])
    assert cleaned["a"] == (f"x{REDACTED}", 1.5)
    assert cleaned["b"] == {SECRET}  # the walk leaves what it does not know (as before)
