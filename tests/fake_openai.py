"""A hostile OpenAI-compatible server on 127.0.0.1: a test instrument, not a model.

:class:`HostileServer` answers ``POST /v1/chat/completions`` as its ``mode`` says:

==================  ==========================================================================
``echo``            a valid memory update whose fact repeats the API key it was sent, plain
                    and JSON-escaped (``\\u0073k-...``), and the ``Authorization`` header
``not_json``        HTTP 200 with an HTML page
``empty``           HTTP 200 with an empty body
``wrong_shape``     HTTP 200 with a JSON object that is not a chat completion
``status:N``        HTTP N with an error body that echoes the key
``huge:MB``         HTTP 200 streaming MB megabytes of a reply (no Content-Length)
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
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["SECRET", "HostileServer", "escaped", "update_with"]

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
        elif mode == "hang":
            self._stop.wait(600)
        else:
            raise ValueError(f"unknown mode {self.mode!r}")
