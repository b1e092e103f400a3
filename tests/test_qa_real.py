"""Memory QA on the real path: the real ``openai`` SDK against ``llama_cpp.server`` on loopback,
serving the bundled SmolLM2-135M, answering and judging.

A 135M model's answers differ between CPUs and builds, so the test pins properties every build
satisfies (every question answered, no error, a verdict that parses or is counted as none, real
token counts and latencies), and the cache: the same step again is answered from it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from real_server import patient_client, patient_server

from memlab.backends.caching.cache import CacheMode
from memlab.backends.local.llama_server import LlamaServer
from memlab.core.pipeline.llm import Backend
from memlab.datasets import load_dataset, resolve_dataset
from memlab.grids.grid import Grid
from memlab.grids.qa_spec import QASpec
from memlab.postrun.qa_step import add_qa
from memlab.sweeps.driver import sweep

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def server() -> Iterator[LlamaServer]:
    with patient_server(n_threads=2, n_ctx=2048) as running:
        yield running


def test_smollm2_answers_and_judges_through_a_real_server(
    server: LlamaServer, tmp_path: Path
) -> None:
    grid = Grid.from_mapping(
        {
            "name": "real-qa",
            "owners": ["amara"],
            # A small budget keeps the prompts short for a 135M model on two cores.
            "base": {"backend": "sim:careful", "max_injection_tokens": 150},
        }
    )
    run = sweep(resolve_dataset("personas"), grid, runs_dir=tmp_path / "runs", progress=False)
    spec = QASpec(
        answer_backend="server:smollm2",
        judges=["strict"],
        conditions=["memory"],
        max_tokens=16,
        judge_max_tokens=12,
    )

    def factory(name: str) -> Backend:
        return patient_client(server)  # bounded by max_tokens, never by wall time

    done = add_qa(
        run,
        spec,
        cache_dir=tmp_path / "cache",
        backend_factory=factory,
        max_workers=2,
        progress=False,
        max_judge_errors=1.0,  # a 135M judge often names no verdict: counted, not refused
    )
    answers = done.qa_answers
    (amara,) = [o for o in load_dataset(resolve_dataset("personas")) if o.user_id == "amara"]
    assert len(answers) == len(amara.questions)
    assert answers["error"].isna().all() and (answers["judge_errors"] == 0).all()
    assert answers["answer"].map(lambda a: isinstance(a, str)).all()
    assert (answers["prompt_tokens"] > 0).all() and (answers["latency_s"] > 0).all()
    # A verdict is CORRECT, WRONG, or none when the small model's reply names neither.
    # (No verdict at all for an abstention on an answerable question: no judge is asked.)
    judged = answers[answers["verdicts"].map(bool)]
    verdicts = judged["verdicts"].map(lambda v: v["strict"]["answer"])
    assert set(verdicts.map(repr)) <= {"True", "False", "None"}
    # Each verdict that names none is counted where the answer is.
    assert int(verdicts.isna().sum()) == int(judged["judge_unreadable"].sum())
    assert done.qa_manifest["identity"]["answer_backend"]
    # The same step again: every answer and verdict from the cache, no request sent.
    again = add_qa(
        done,
        spec,
        cache_dir=tmp_path / "cache",
        cache_mode=CacheMode.READ_ONLY,
        backend_factory=factory,
        progress=False,
        max_judge_errors=1.0,
    )
    assert again.qa_answers["cached"].all()
    assert list(again.qa_answers["answer"]) == list(answers["answer"])
