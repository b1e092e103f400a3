"""The HTTP side of the OpenAI-compatible backend: bounded bodies, checked replies, no
credentials in what is shown.

- :func:`bounded_http_client` builds the ``openai`` SDK's own HTTP client with a response
  hook that cuts every body (replies and error pages alike) off at a byte limit, so a server
  that answers with gigabytes costs at most that limit in memory.
- :func:`completion_fields` reads a chat completion from the raw body and says exactly what is
  wrong when the body is not one (not JSON, empty, wrongly shaped): an HTTP 200 is not a
  reply until its body says so.
- :func:`embedding_vectors` does the same for an embeddings body (``/v1/embeddings``).
- :func:`split_credentials` takes ``user:password@`` out of a base URL (they are sent as
  HTTP Basic authentication instead, so no logged URL carries them); :func:`display_url`
  is a URL without them, for messages.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from memlab.core.base.jsontext import loads_json
from memlab.core.pipeline.llm import BackendError
from memlab.errors import excerpt

__all__ = [
    "CompletionFields",
    "ReplyTooLargeError",
    "basic_token",
    "bounded_http_client",
    "completion_fields",
    "display_url",
    "embedding_vectors",
    "split_credentials",
    "too_large",
]


class ReplyTooLargeError(BackendError):
    """A server's response body is larger than memlab reads."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(
            f"the server's response is larger than {limit} bytes; memlab stopped reading it "
            "(check the server and max_tokens)"
        )


def display_url(url: str | None) -> str:
    """``url`` without user information (``https://user:pw@host/v1`` -> ``https://host/v1``)."""
    if not url:
        return "api.openai.com"
    try:
        parts = urlsplit(url)
        host = parts.netloc.rpartition("@")[2]
        return urlunsplit(parts._replace(netloc=host))
    except ValueError:
        return "(an unparsable URL)"


def split_credentials(url: str | None) -> tuple[str | None, tuple[str, str] | None]:
    """``url`` without its user information, and ``(user, password)`` when it had them.

    The credentials are then sent as HTTP Basic authentication, as they would have been from
    the URL, while the URL that libraries log and errors show carries none.
    """
    if not url:
        return url, None
    try:
        parts = urlsplit(url)
        user, password = parts.username, parts.password
    except ValueError:
        return url, None
    if user is None and password is None:
        return url, None
    bare = urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
    return bare, (unquote(user or ""), unquote(password or ""))


def basic_token(user: str, password: str) -> str:
    """The token of an HTTP Basic ``Authorization`` header (what a server may echo)."""
    return base64.b64encode(f"{user}:{password}".encode()).decode("ascii")


def bounded_http_client(max_bytes: int, auth: tuple[str, str] | None = None) -> Any | None:
    """The ``openai`` SDK's default HTTP client with every response body bounded (and HTTP
    Basic authentication with ``auth``).

    Returns ``None`` when this SDK version does not expose its client (the SDK's own client
    is then used, unbounded).
    """
    import openai
    from openai import _base_client

    http = getattr(_base_client, "httpx2", None) or getattr(_base_client, "httpx", None)
    client_class = getattr(openai, "DefaultHttpxClient", None)
    if http is None or client_class is None:
        return None

    class _Bounded(http.SyncByteStream):  # type: ignore[misc,name-defined]
        def __init__(self, inner: Any) -> None:
            self._inner = inner

        def __iter__(self) -> Iterator[bytes]:
            seen = 0
            for chunk in self._inner:
                seen += len(chunk)
                if seen > max_bytes:
                    raise ReplyTooLargeError(max_bytes)
                yield chunk

        def close(self) -> None:
            self._inner.close()

    def limit(response: Any) -> None:
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > max_bytes:
            raise ReplyTooLargeError(max_bytes)
        response.stream = _Bounded(response.stream)

    return client_class(event_hooks={"response": [limit]}, auth=auth)


def too_large(exc: BaseException) -> ReplyTooLargeError | None:
    """The :class:`ReplyTooLargeError` behind an SDK connection error, if that is its cause."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, ReplyTooLargeError):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


@dataclass(frozen=True)
class CompletionFields:
    """What a chat completion body says."""

    text: str
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int
    model: str | None
    cached_prompt_tokens: int = 0


def completion_fields(body: bytes) -> CompletionFields:
    """Read a chat completion from a response body.

    Raises:
        ValueError: The body is not a chat completion; the message says what is wrong.
    """
    if not body.strip():
        raise ValueError("the body is empty")
    try:
        data = loads_json(body)
    except ValueError as exc:
        raise ValueError(
            f"the body is not JSON ({excerpt(str(exc), 80)}): {_start(body)}"
        ) from None
    if not isinstance(data, dict):
        raise ValueError(f"the body is JSON {type(data).__name__}, not an object: {_start(body)}")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ValueError(f"the body has no 'choices' list with a choice: {_start(body)}")
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, dict):
        raise ValueError("'choices[0].message' is not an object")
    content = message.get("content")
    if isinstance(content, list):  # content parts: keep the text ones
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    if content is not None and not isinstance(content, str):
        raise ValueError(f"'choices[0].message.content' is {type(content).__name__}, not text")
    finish = choice.get("finish_reason")
    usage = data.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    model = data.get("model")
    return CompletionFields(
        text=content or "",
        finish_reason=finish if isinstance(finish, str) else None,
        prompt_tokens=_count(usage.get("prompt_tokens")),
        completion_tokens=_count(usage.get("completion_tokens")),
        model=model if isinstance(model, str) and model else None,
        cached_prompt_tokens=_cached_tokens(usage),
    )


def _cached_tokens(usage: dict[str, Any]) -> int:
    """The prompt tokens the provider served from its prompt cache
    (``usage.prompt_tokens_details.cached_tokens``; 0 when not reported)."""
    details = usage.get("prompt_tokens_details")
    return _count(details.get("cached_tokens")) if isinstance(details, dict) else 0


def embedding_vectors(body: bytes, count: int) -> list[list[float]]:
    """Read ``count`` embedding vectors (in input order) from an embeddings response body.

    Raises:
        ValueError: The body is not such a response; the message says what is wrong.
    """
    if not body.strip():
        raise ValueError("the body is empty")
    try:
        data = loads_json(body)
    except ValueError as exc:
        raise ValueError(
            f"the body is not JSON ({excerpt(str(exc), 80)}): {_start(body)}"
        ) from None
    items = data.get("data") if isinstance(data, dict) else None
    if not isinstance(items, list) or len(items) != count:
        got = len(items) if isinstance(items, list) else "no"
        raise ValueError(f"the body has {got} 'data' items for {count} inputs: {_start(body)}")
    vectors: list[list[float] | None] = [None] * count
    for position, item in enumerate(items):
        index = item.get("index", position) if isinstance(item, dict) else None
        vector = item.get("embedding") if isinstance(item, dict) else None
        if type(index) is not int or not 0 <= index < count or vectors[index] is not None:
            raise ValueError(f"'data[{position}].index' is not a new input index")
        if not isinstance(vector, list) or not vector or not all(_is_number(x) for x in vector):
            raise ValueError(f"'data[{position}].embedding' is not a list of numbers")
        vectors[index] = [float(x) for x in vector]
    if len({len(v) for v in vectors if v is not None}) != 1:
        raise ValueError("the vectors differ in length")
    return [v for v in vectors if v is not None]


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value == value


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _start(body: bytes) -> str:
    return excerpt(body[:200].decode("utf-8", "replace"), 100)
