"""How many threads the local model gets when none is named."""

from __future__ import annotations

import pytest

from memlab.backends.local import llama_local
from memlab.core.pipeline.llm import BackendError


@pytest.mark.parametrize(("cpus", "threads"), [(1, 1), (2, 1), (4, 3), (16, 8), (None, 1)])
def test_one_core_is_left_free(
    monkeypatch: pytest.MonkeyPatch, cpus: int | None, threads: int
) -> None:
    monkeypatch.delenv("MEMLAB_LLAMA_THREADS", raising=False)
    monkeypatch.setattr(llama_local.os, "cpu_count", lambda: cpus)
    assert llama_local.default_threads() == threads


def test_the_environment_names_the_thread_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(llama_local.os, "cpu_count", lambda: 2)
    monkeypatch.setenv("MEMLAB_LLAMA_THREADS", "2")
    assert llama_local.default_threads() == 2
    monkeypatch.setenv("MEMLAB_LLAMA_THREADS", "two")
    with pytest.raises(BackendError, match="MEMLAB_LLAMA_THREADS"):
        llama_local.default_threads()
