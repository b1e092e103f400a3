"""Test-wide fixtures: real model requests are blocked unless a test is marked integration;
tests marked ``needs_embeddings`` skip, with the reason, on an install without
``memlab[embeddings]`` (the demo's ``.[local,notebooks]``); ``fresh_loader`` gives a test the
plugin loader of its own."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from plugin_loader import fresh_plugin_loader

from memlab.core.pipeline.llm import allow_model_requests, block_model_requests


@pytest.fixture(autouse=True)
def _model_request_guard(request: pytest.FixtureRequest) -> Iterator[None]:
    if request.node.get_closest_marker("integration") is not None:
        with allow_model_requests():
            yield
    else:
        with block_model_requests():
            yield


@pytest.fixture
def fresh_loader() -> Iterator[list[Any]]:
    """The plugin loader as if nothing was loaded yet, reading the entry points the test puts
    in the list; what loading them records is gone after the test."""
    with fresh_plugin_loader() as found:
        yield found


def embeddings_missing() -> str:
    """Why the bundled word embeddings cannot load ("" when they can)."""
    from memlab.matching.embeddings import EmbeddingsUnavailableError, WordLlamaEmbedder

    try:
        WordLlamaEmbedder()
    except EmbeddingsUnavailableError as exc:
        return str(exc)
    return ""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    marked = [item for item in items if item.get_closest_marker("needs_embeddings")]
    if not marked:
        return  # nothing to decide: the extra is not even loaded
    missing = embeddings_missing()
    if missing:
        skip = pytest.mark.skip(
            reason=f"needs memlab[embeddings] (the default matcher is default-lexical): {missing}"
        )
        for item in marked:
            item.add_marker(skip)
