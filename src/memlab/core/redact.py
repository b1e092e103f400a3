"""Keep credentials out of everything memlab stores: cache entries, call records, run files.

A server (or a model) may echo a request's ``Authorization`` header or an API key back in
its reply, and the reply is then stored in the response cache, in ``calls.jsonl`` and in the
owner records of a run. :func:`redact` is the one function every writer uses; it replaces

- the value of credential headers written as text (``Authorization: Bearer ...``,
  ``Proxy-Authorization``, ``X-Api-Key``, ``Api-Key``), and
- the values of secret environment variables (``OPENAI_API_KEY`` and any variable named
  ``*_API_KEY``, ``*_TOKEN``, ``*_SECRET`` or ``*_PASSWORD``) plus any extra values given,

by :data:`REDACTED`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from typing import TypeVar

__all__ = ["REDACTED", "redact", "redact_text", "secret_values"]

REDACTED = "[REDACTED]"

_T = TypeVar("_T")

# A header name, its separator (plain text, JSON or a Python dict repr) and the credential:
# after an authentication scheme for Authorization headers, at least 8 characters for API-key
# headers (so ordinary prose such as "authorization: pending" stays). The credential stops at
# quotes and backslashes, so redacting the JSON text of a record keeps it valid JSON.
_SEP = r"(?P<sep>(?:\\?[\"'])?\s*[:=]\s*(?:\\?[\"'])?)"
_CREDENTIAL = r"(?!\[REDACTED\])[^\s\"'\\,;}\]]"
_HEADERS = (
    re.compile(
        r"(?i)(?P<name>\b(?:proxy-)?authorization)"
        + _SEP
        + r"(?P<value>(?:bearer|basic|token|digest|negotiate)\s+"
        + _CREDENTIAL
        + "+)"
    ),
    re.compile(r"(?i)(?P<name>\b(?:x-)?api[-_]key)" + _SEP + "(?P<value>" + _CREDENTIAL + "{8,})"),
)
_HEADER_WORDS = (("authorization",), ("api-key", "api_key"))  # in every match of _HEADERS
_SECRET_NAME = re.compile(r"(?i)(?:^|_)(?:API_KEY|TOKEN|SECRET|PASSWORD)$")
_MIN_SECRET_CHARS = 8  # shorter values would redact ordinary words


def secret_values(extra: Iterable[str] = (), environ: Mapping[str, str] | None = None) -> list[str]:
    """Values to redact: secret-looking environment variables plus ``extra``, longest first."""
    env = os.environ if environ is None else environ
    found = {value for name, value in env.items() if _SECRET_NAME.search(name)}
    found.update(extra)
    return sorted((v for v in found if len(v) >= _MIN_SECRET_CHARS), key=len, reverse=True)


def redact_text(text: str, secrets: Iterable[str] | None = None) -> str:
    """``text`` with credential headers and secret values replaced by :data:`REDACTED`.

    Args:
        text: Any text.
        secrets: Values to remove; ``None`` uses :func:`secret_values` (the environment).
    """
    # An ASCII text without the headers' words cannot match them: skip the regexes, which
    # cost a scan of long records per header. (Other texts are searched: case folding of
    # non-ASCII letters may reach ASCII ones.)
    folded = text.lower() if text.isascii() else None
    for header, words in zip(_HEADERS, _HEADER_WORDS, strict=True):
        if folded is not None and not any(word in folded for word in words):
            continue
        if header.search(text):
            text = header.sub(lambda m: f"{m['name']}{m['sep']}{REDACTED}", text)
    values = secret_values() if secrets is None else list(secrets)
    for secret in values:
        if secret and secret in text:
            text = text.replace(secret, REDACTED)
    return text


def redact(value: _T, secrets: Iterable[str] | None = None) -> _T:
    """A JSON value with every string redacted (see :func:`redact_text`); unchanged values are
    returned as they are, not copied.

    Args:
        value: A JSON-serialisable value (a record, a cache entry, a memory document).
        secrets: Values to remove; ``None`` uses :func:`secret_values` (the environment).
    """
    # default=str: a value JSON cannot hold is compared (and, if redacted, stored) as text.
    text = json.dumps(value, ensure_ascii=False, default=str)
    cleaned = redact_text(text, secrets)
    if cleaned == text:
        return value
    result: _T = json.loads(cleaned)
    return result
