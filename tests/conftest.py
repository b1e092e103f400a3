"""Test-wide fixtures: real model requests are blocked unless a test is marked integration."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from memlab.core.llm import allow_model_requests, block_model_requests


@pytest.fixture(autouse=True)
def _model_request_guard(request: pytest.FixtureRequest) -> Iterator[None]:
    if request.node.get_closest_marker("integration") is not None:
        with allow_model_requests():
            yield
    else:
        with block_model_requests():
            yield
