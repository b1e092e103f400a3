"""Keep credentials in memory: out of every file memlab writes and every line it logs.

A server (or a model) may echo a request's ``Authorization`` header or an API key back in its
reply or its error message, and a base URL may carry ``user:password@``. :func:`redact_text`
is the one redaction pass; :func:`redact` applies it to every string of a JSON value. Replies
pass through it where they enter the pipeline
(:class:`~memlab.core.pipeline.updater.MemoryUpdater`), and every writer applies it again (cache
entries, call records, owner records, memory stores), as do the command line's log handler
(:class:`RedactingFilter`) and its error line. It replaces

- the value of credential headers written as text (``Authorization: Bearer ...``,
  ``Proxy-Authorization``, ``X-Api-Key``, ``Api-Key``);
- the user information of URLs (``https://user:password@host`` -> ``https://[REDACTED]@host``);
- the values of secret environment variables (``OPENAI_API_KEY`` and any variable named
  ``*_API_KEY``, ``*_TOKEN``, ``*_SECRET`` or ``*_PASSWORD``), the values registered with
  :func:`remember_secret` (an ``api_key=`` given in code, a URL's password) and any extra
  values given, also when they are written with JSON escapes (``\\u0073k-...``), as a server
  may echo them inside a JSON reply

by :data:`REDACTED`.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any, TypeVar

__all__ = [
    "REDACTED",
    "RedactingFilter",
    "redact",
    "redact_text",
    "redacted_json",
    "remember_secret",
    "secret_values",
]

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
# scheme://userinfo@ : whatever stands before the @ of a URL's authority is a credential.
_URL_USERINFO = re.compile(
    r"(?i)(?P<scheme>\b[a-z][a-z0-9+.-]{1,15}://)(?!\[REDACTED\]@)[^/\s@\"'\\<>]+@"
)
_SECRET_NAME = re.compile(r"(?i)(?:^|_)(?:API_KEY|TOKEN|SECRET|PASSWORD)$")
_MIN_SECRET_CHARS = 8  # shorter values would redact ordinary words

_remembered: set[str] = set()
_remembered_lock = threading.Lock()


def remember_secret(value: str | None) -> None:
    """Redact ``value`` from now on in this process (an API key given in code, a password).

    Values shorter than 8 characters are not remembered: they would redact ordinary words.
    """
    if value and len(value) >= _MIN_SECRET_CHARS:
        with _remembered_lock:
            _remembered.add(value)


def secret_values(extra: Iterable[str] = (), environ: Mapping[str, str] | None = None) -> list[str]:
    """Values to redact: secret-looking environment variables, remembered values and
    ``extra``, longest first."""
    if environ is None:
        found = set(_environ_secrets())
    else:
        found = {value for name, value in environ.items() if _SECRET_NAME.search(name)}
    with _remembered_lock:
        found.update(_remembered)
    found.update(extra)
    return sorted((v for v in found if len(v) >= _MIN_SECRET_CHARS), key=len, reverse=True)


_environ_seen: tuple[object, frozenset[str]] = ((), frozenset())


def _environ_secrets() -> frozenset[str]:
    """The secret-looking values of ``os.environ``, read again only when it changed (every
    call record is redacted: decoding the whole environment each time cost a tenth of a
    cached replay)."""
    global _environ_seen
    data = getattr(os.environ, "_data", None)  # CPython's encoded copy; compared in C
    state = tuple(data.items()) if isinstance(data, dict) else None
    seen_state, values = _environ_seen
    if state is None or state != seen_state:
        values = frozenset(v for n, v in os.environ.items() if _SECRET_NAME.search(n))
        _environ_seen = (state if state is not None else (), values)
    return values


@lru_cache(maxsize=256)
def _escaped_form(secret: str) -> re.Pattern[str]:
    """``secret`` with any of its characters possibly written as a JSON escape (``\\u0073``,
    ``\\/``), at any level of escaping."""
    parts = []
    for char in secret:
        code = f"{ord(char):04x}"
        hex_digits = "".join(f"[{d}{d.upper()}]" if d.isalpha() else d for d in code)
        options = [re.escape(char), r"\\+u" + hex_digits]
        if char in '"/\\':
            options.append(r"\\+" + re.escape(char))
        parts.append("(?:" + "|".join(options) + ")")
    return re.compile("".join(parts))


def redact_text(text: str, secrets: Iterable[str] | None = None) -> str:
    """``text`` with credential headers, URL credentials and secret values replaced by
    :data:`REDACTED`.

    Args:
        text: Any text.
        secrets: Values to remove; ``None`` uses :func:`secret_values` (the environment and
            the remembered values).
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
    if "://" in text:
        text = _URL_USERINFO.sub(lambda m: f"{m['scheme']}{REDACTED}@", text)
    values = secret_values() if secrets is None else list(secrets)
    escaped = "\\" in text
    for secret in values:
        if not secret:
            continue
        if secret in text:
            text = text.replace(secret, REDACTED)
        if escaped:
            text = _escaped_form(secret).sub(REDACTED, text)
    return text


def redact(value: _T, secrets: Iterable[str] | None = None) -> _T:
    """A JSON value with every string (keys too) redacted (see :func:`redact_text`);
    unchanged values are returned as they are, not copied.

    Args:
        value: A JSON-like value (a record, a cache entry, a memory document).
        secrets: Values to remove; ``None`` uses :func:`secret_values`.
    """
    values = secret_values() if secrets is None else [s for s in secrets if s]
    text = _json_text(value)
    if text is not None and _nothing_to_redact(text, values):
        return value
    result: _T = _walk(value, values)
    return result


def redacted_json(value: Any, secrets: Iterable[str] | None = None) -> str:
    """``json.dumps(redact(value), ensure_ascii=False)``, encoding a record that needs no
    redaction once.

    Raises:
        TypeError: ``value`` is not JSON-serialisable.
    """
    values = secret_values() if secrets is None else [s for s in secrets if s]
    text = _json_text(value)
    if text is not None and _nothing_to_redact(text, values):
        return text
    return json.dumps(_walk(value, values), ensure_ascii=False)


def _json_text(value: Any) -> str | None:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):  # not plain JSON
        return None


# Characters json.dumps writes as escapes (ensure_ascii=False): a secret holding one is not
# found verbatim in the JSON text.
_JSON_ESCAPED = re.compile(r'["\\\x00-\x1f]')
# The non-ASCII letters a case-insensitive pattern matches with ASCII ones (İ ı ſ and the
# Kelvin sign): a header's name may be written with them.
_FOLDS_TO_ASCII = "\u0130\u0131\u017f\u212a"


def _nothing_to_redact(text: str, secrets: list[str]) -> bool:
    """Whether no string of a value can change under :func:`redact_text`, decided on its
    JSON ``text`` (``ensure_ascii=False``) in one pass (a record of a replay holds thousands
    of strings).

    Conservative: ``False`` sends the value through the string-by-string walk. The text holds
    every string of the value, with quotes, backslashes and control characters escaped, so
    the test looks only for what escaping cannot hide: the headers' words (also when written
    with the letters that case-insensitive matching equates with ASCII ones), ``://``, and
    each secret verbatim or (when the text has a backslash) in its escaped forms.
    """
    if "://" in text or (not text.isascii() and any(c in text for c in _FOLDS_TO_ASCII)):
        return False
    folded = text.lower()
    if any(word in folded for words in _HEADER_WORDS for word in words):
        return False
    escaped = "\\" in text
    for secret in secrets:
        if _JSON_ESCAPED.search(secret) or secret in text:
            return False
        if escaped and _escaped_form(secret).search(text):
            return False
    return True


def _walk(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, str):
        cleaned = redact_text(value, secrets)
        return value if cleaned == value else cleaned
    if isinstance(value, dict):
        items = [(_walk(k, secrets), _walk(v, secrets)) for k, v in value.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(items, value.items(), strict=True)):
            return value
        return dict(items)
    if isinstance(value, list | tuple):
        walked = [_walk(item, secrets) for item in value]
        if all(a is b for a, b in zip(walked, value, strict=True)):
            return value
        return type(value)(walked) if isinstance(value, list) else tuple(walked)
    return value


class RedactingFilter(logging.Filter):
    """A logging filter that redacts each record's message (see :func:`redact_text`).

    Install it on a handler (the command line does) so nothing a backend or a server said
    reaches a log line with a credential in it.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: leave the record to the handler
            return True
        cleaned = redact_text(message)
        if cleaned != message:
            record.msg = cleaned
            record.args = None
        return True
