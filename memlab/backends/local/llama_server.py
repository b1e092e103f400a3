"""Run ``python -m llama_cpp.server`` on loopback for the OpenAI-compatible backend.

Used by the integration tests, the benchmarks and the notebooks to exercise the real HTTP path
without any external service::

    with LlamaServer(n_threads=2) as server:
        backend = OpenAICompatibleBackend(
            server.model_alias, base_url=server.base_url, schema_transport="json_object_schema"
        )

The server listens on 127.0.0.1 on a free port; readiness is checked by polling ``/v1/models``.
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType

from memlab.backends.local.llama_local import DEFAULT_N_CTX, bundled_model_path, default_threads
from memlab.core.pipeline.llm import BackendError

__all__ = ["LlamaServer", "free_port"]

logger = logging.getLogger(__name__)


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class LlamaServer:
    """Context manager running a llama.cpp OpenAI-compatible server in a subprocess.

    Args:
        model_path: GGUF file; ``None`` uses the bundled SmolLM2-135M-Instruct.
        port: TCP port on 127.0.0.1; ``None`` picks a free one.
        n_ctx: Context window.
        n_threads: CPU threads (defaults like the local backend).
        model_alias: Model id the server answers to and reports.
        startup_timeout: Seconds to wait for ``/v1/models`` to answer.

    Attributes:
        base_url: ``http://127.0.0.1:PORT/v1`` once started.
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        port: int | None = None,
        *,
        n_ctx: int = DEFAULT_N_CTX,
        n_threads: int | None = None,
        model_alias: str = "smollm2",
        startup_timeout: float = 120.0,
    ) -> None:
        self.model_path = Path(model_path) if model_path is not None else bundled_model_path()
        self.port = port
        self.n_ctx = n_ctx
        self.n_threads = n_threads if n_threads is not None else default_threads()
        self.model_alias = model_alias
        self.startup_timeout = startup_timeout
        self._process: subprocess.Popen[bytes] | None = None
        self._log: tempfile._TemporaryFileWrapper[bytes] | None = None

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL (``.../v1``)."""
        if self.port is None:
            raise RuntimeError("LlamaServer is not started; use it as a context manager.")
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> LlamaServer:
        """Start the server and wait until it answers.

        Raises:
            BackendError: The server exited early or did not become ready in time.
        """
        if self._process is not None:
            return self
        if self.port is None:
            self.port = free_port()
        command = [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(self.model_path),
            "--model_alias",
            self.model_alias,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--n_ctx",
            str(self.n_ctx),
            "--n_threads",
            str(self.n_threads),
            "--verbose",
            "False",
        ]
        # Output goes to a file: an unread pipe could fill up and block the server.
        self._log = tempfile.NamedTemporaryFile(  # noqa: SIM115 - closed in stop()
            prefix="memlab-llama-server-", suffix=".log"
        )
        logger.info("starting llama.cpp server on port %d", self.port)
        self._process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT
        )
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self) -> None:
        assert self._process is not None
        deadline = time.monotonic() + self.startup_timeout
        url = f"{self.base_url}/models"
        while time.monotonic() < deadline:
            code = self._process.poll()
            if code is not None:
                raise BackendError(
                    f"llama.cpp server exited with code {code} before becoming ready. "
                    f"Output:\n{self.log_tail()}\nIs 'llama-cpp-python[server]' installed? "
                    "pip install 'memlab[local]'"
                )
            try:
                with urllib.request.urlopen(url, timeout=2.0) as response:
                    if response.status == 200:
                        logger.info("llama.cpp server ready at %s", self.base_url)
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.2)
        raise BackendError(
            f"llama.cpp server did not answer {url} within {self.startup_timeout:g}s. "
            f"Output:\n{self.log_tail()}"
        )

    def log_tail(self, limit: int = 4000) -> str:
        """Return the end of the server's output (for error messages)."""
        if self._log is None:
            return ""
        try:
            data = Path(self._log.name).read_bytes()
        except OSError:
            return ""
        return data[-limit:].decode("utf-8", errors="replace")

    def stop(self, timeout: float = 10.0) -> None:
        """Terminate the server (kill it if it does not exit within ``timeout`` seconds)."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=timeout)
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
