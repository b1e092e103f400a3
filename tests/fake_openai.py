"""OpenAI-compatible servers on 127.0.0.1 for tests: instruments, not models.

:class:`FakeServer` answers from a script of responses, or with a reply function of the
request (a scripted model behind the real ``openai`` SDK).

:class:`HostileServer` answers ``POST /v1/chat/completions`` as its ``mode`` says:

==================  ==========================================================================
``echo``            a valid memory update whose fact repeats the API key it was sent, plain
                    and JSON-escaped (``\\u0073k-...``), and the ``Authorization`` header
``not_json``        HTTP 200 with an HTML page
``empty``           HTTP 200 with an empty body
``wrong_shape``     HTTP 200 with a JSON object that is not a chat completion
``status:N``        HTTP N with an error body that echoes the key; a status the client retries
                    (5xx) says ``Retry-After: 0``, so that each retry comes at once
``huge:MB``         HTTP 200 streaming MB megabytes of a reply (no Content-Length)
``long:MB``         a valid chat completion whose text is MB megabytes of words (a server
                    that ignores ``max_tokens``)
``hang``            reads the request and never answers (until the server stops)
``ok``              a valid, empty memory update
==================  ==========================================================================

Every request is counted in ``requests``. Used by the fuzz table (``tests/test_cli_fuzz.py``),
the secret tests and ``scripts/probe.py``.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

__all__ = [
    "SECRET",
    "EmbeddingServer",
    "FakeServer",
    "HostileServer",
    "Reply",
    "chat_body",
    "escaped",
    "update_with",
]

SECRET = "sk-probe-7f3a9c1e5b2d4086"
"""The API key tests give the backend; no byte memlab writes may contain it."""


def escaped(text: str) -> str:
    """``text`` with every character written as a JSON ``\\uXXXX`` escape."""
    return "".join(f"\\u{ord(c):04x}" for c in text)


def update_with(*facts: str) -> dict[str, Any]:
    """A valid memory update adding ``facts``."""
    section = {"summary": "", "shouldUpdate": False}
    return {
        "user": {k: dict(section) for k in ("workContext", "personalContext", "topOfMind")},
        "history": {
            k: dict(section) for k in ("recentMonths", "earlierContext", "longTermBackground")
        },
        "newFacts": [
            {"content": fact, "category": "context", "confidence": 0.95} for fact in facts
        ],
        "factsToRemove": [],
    }


def _completion(text: str) -> bytes:
    return json.dumps(
        {
            "id": "chatcmpl-probe",
            "object": "chat.completion",
            "created": 0,
            "model": "probe-model",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }
    ).encode()


def chat_body(text: str = '{"ok": true}', model: str = "fake-model") -> dict[str, Any]:
    """A chat completion whose one choice says ``text``."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


Reply = Callable[[dict[str, Any]], str]
"""A reply function: the request body -> the reply text (a 200 chat completion)."""


class _Loopback:
    """A threaded HTTP server on 127.0.0.1 (a free port), serving while the ``with`` lasts."""

    def _listen(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class FakeServer(_Loopback):
    """Answers POSTs from a script of (status, headers, body, delay), or with ``reply`` (the
    request body -> the text of a chat completion); records every request."""

    def __init__(
        self,
        script: list[tuple[int, dict[str, str], Any, float]] | None = None,
        *,
        reply: Reply | None = None,
    ) -> None:
        self.script = script or []
        self.reply = reply
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                with outer.lock:
                    outer.requests.append(
                        {
                            "path": self.path,
                            "headers": {k.lower(): v for k, v in self.headers.items()},
                            "body": body,
                        }
                    )
                    seen = len(outer.requests)
                if outer.reply is not None:
                    status, headers, payload, delay = 200, {}, chat_body(outer.reply(body)), 0.0
                else:
                    index = min(seen, len(outer.script)) - 1
                    status, headers, payload, delay = outer.script[index]
                if delay:
                    time.sleep(delay)
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._listen(Handler)


class HostileServer:
    """See the module docstring. Use as a context manager; ``base_url`` ends in ``/v1``."""

    def __init__(self, mode: str = "echo") -> None:
        self.mode = mode
        self.requests = 0
        self._stop = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                outer.requests += 1
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    outer._answer(self)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> HostileServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def _send(self, handler: BaseHTTPRequestHandler, status: int, body: bytes, kind: str) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", kind)
        if status >= 500:  # every retry still gets the echoing body, without the backoff waits
            handler.send_header("Retry-After", "0")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    def _answer(self, handler: BaseHTTPRequestHandler) -> None:
        mode, _, arg = self.mode.partition(":")
        auth = handler.headers.get("Authorization", "")
        key = auth.removeprefix("Bearer ").strip()
        json_type = "application/json"
        if mode == "echo":
            text = json.dumps(update_with(f"Uses key {key}", f"Header was {auth}", "@ESC@"))
            # The same key once more, JSON-escaped inside the reply's JSON text.
            text = text.replace("@ESC@", f"Escaped key {escaped(key)}")
            self._send(handler, 200, _completion(text), json_type)
        elif mode == "ok":
            self._send(handler, 200, _completion(json.dumps(update_with())), json_type)
        elif mode == "not_json":
            self._send(handler, 200, b"<html><body>Bad gateway</body></html>", "text/html")
        elif mode == "empty":
            self._send(handler, 200, b"", json_type)
        elif mode == "wrong_shape":
            self._send(handler, 200, json.dumps({"result": "ok", "choices": 3}).encode(), json_type)
        elif mode == "status":
            body = {"error": {"message": f"Invalid key {key} (Authorization: {auth})"}}
            self._send(handler, int(arg or 500), json.dumps(body).encode(), json_type)
        elif mode == "huge":
            handler.send_response(200)
            handler.send_header("Content-Type", json_type)
            handler.send_header("Connection", "close")
            handler.end_headers()
            chunk = b"x" * (1 << 20)
            for _ in range(int(arg or 300)):
                if self._stop.is_set():
                    return
                handler.wfile.write(chunk)
        elif mode == "long":
            text = "blah " * (int(arg or 10) * (1 << 20) // 5)
            self._send(handler, 200, _completion(text), json_type)
        elif mode == "hang":
            self._stop.wait(600)
        else:
            raise ValueError(f"unknown mode {self.mode!r}")


class EmbeddingServer(_Loopback):
    """Answers ``POST /v1/embeddings`` with the vector ``vectors`` gives each input text
    (``default`` for texts it does not know); with ``status`` set, answers every request
    with that HTTP status and an error body echoing the ``Authorization`` header. With
    ``chat``, answers ``POST /v1/chat/completions`` with ``chat(body)`` as the reply text.
    Counts requests and keeps their headers and bodies (an instrument, not a model)."""

    def __init__(
        self,
        vectors: dict[str, list[float]],
        default: list[float],
        status: int | None = None,
        chat: Reply | None = None,
    ) -> None:
        self.vectors = vectors
        self.default = default
        self.status = status
        self.chat = chat
        self.requests: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                outer.requests.append(
                    {
                        "path": self.path,
                        "headers": {k.lower(): v for k, v in self.headers.items()},
                        "body": body,
                    }
                )
                payload: Any
                if outer.chat is not None and self.path.endswith("/chat/completions"):
                    status, payload = 200, chat_body(outer.chat(body))
                elif outer.status is not None:
                    auth = self.headers.get("Authorization", "")
                    status = outer.status
                    payload = {"error": {"message": f"bad key ({auth})\nsee the docs"}}
                else:
                    status = 200
                    texts = body.get("input", [])
                    payload = {
                        "object": "list",
                        "model": body.get("model"),
                        "data": [
                            {
                                "object": "embedding",
                                "index": i,
                                "embedding": outer.vectors.get(text, outer.default),
                            }
                            for i, text in enumerate(texts)
                        ],
                        "usage": {"prompt_tokens": 1, "total_tokens": 1},
                    }
                data = json.dumps(payload).encode()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._listen(Handler)
