"""Near-duplicate facts by embeddings: counting rules, the bundled model, sweep and report."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from builders import marker_backend, one_turn, update, write_owners

from memlab.backends.remote import embeddings as embeddings_module  # where the loader lives
from memlab.backends.scripted import ScriptedBackend
from memlab.cli.main import main
from memlab.grids.grid import Grid
from memlab.matching.embeddings import (
    EmbeddingDuplicates,
    EmbeddingsUnavailableError,
    WordLlamaEmbedder,
)
from memlab.reporting.compare.gate import Thresholds, check_gate
from memlab.reporting.report import build_report
from memlab.reporting.tables import compare_table
from memlab.sweeps.driver import sweep


class TableEmbedder:
    """Vectors given per text; records every batch it was asked to embed."""

    name = "table"

    def __init__(self, vectors: dict[str, Sequence[float]]) -> None:
        self.vectors = vectors
        self.batches: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> Any:
        self.batches.append(list(texts))
        return np.array([self.vectors[t] for t in texts], dtype=float)


VECTORS = {
    "a": [1.0, 0.0, 0.0],
    "a2": [0.9, 0.1, 0.0],  # cosine with a: 0.994
    "b": [0.0, 1.0, 0.0],
    "b2": [0.1, 1.0, 0.0],  # cosine with b: 0.995
    "c": [0.6, 0.8, 0.0],  # cosine 0.6 with a, 0.8 with b
    "zero": [0.0, 0.0, 0.0],
}


def test_later_fact_of_a_close_pair_counts_once() -> None:
    dups = EmbeddingDuplicates(TableEmbedder(VECTORS), threshold=0.9)
    assert dups.duplicate_flags(["a", "b", "a2", "b2", "c"]) == [False, False, True, True, False]
    assert dups.count(["a", "b", "a2", "b2", "c"]) == 2
    assert dups.count(["a2", "a", "a"]) == 2  # an exact repeat is a duplicate too


def test_threshold_is_inclusive_and_checked() -> None:
    assert EmbeddingDuplicates(TableEmbedder(VECTORS), threshold=0.8).count(["b", "c"]) == 1
    assert EmbeddingDuplicates(TableEmbedder(VECTORS), threshold=0.81).count(["b", "c"]) == 0
    with pytest.raises(ValueError, match="threshold"):
        EmbeddingDuplicates(TableEmbedder(VECTORS), threshold=1.5)


def test_a_repeated_text_counts_even_with_a_zero_or_nan_vector() -> None:
    vectors = {**VECTORS, "": [float("nan")] * 3}
    dups = EmbeddingDuplicates(TableEmbedder(vectors), threshold=0.9)
    assert dups.duplicate_flags(["", "a", ""]) == [False, False, True]
    assert dups.duplicate_flags(["zero", "zero", "a"]) == [False, True, False]
    assert np.isfinite(dups.vectors([""])).all()


def test_a_fact_is_never_its_own_duplicate() -> None:
    # Even at the lowest threshold only facts with an earlier neighbour count.
    dups = EmbeddingDuplicates(TableEmbedder(VECTORS), threshold=-1.0)
    assert dups.count(["a"]) == 0
    assert dups.count(["a", "b", "c"]) == 2
    assert dups.count(["zero", "zero"]) == 1


def test_pairs_lists_each_close_pair_with_its_similarity() -> None:
    dups = EmbeddingDuplicates(TableEmbedder(VECTORS), threshold=0.9)
    pairs = dups.pairs(["a", "b", "a2"])
    assert [(i, j) for i, j, _ in pairs] == [(0, 2)]
    assert pairs[0][2] == pytest.approx(0.9 / np.hypot(0.9, 0.1))


def test_each_distinct_text_is_embedded_once() -> None:
    embedder = TableEmbedder(VECTORS)
    dups = EmbeddingDuplicates(embedder, threshold=0.9)
    dups.count(["a", "b", "a"])
    dups.count(["a", "b", "c"])
    assert embedder.batches == [["a", "b"], ["c"]]


def test_embedder_returning_the_wrong_shape_is_reported() -> None:
    class Broken(TableEmbedder):
        def embed(self, texts: Sequence[str]) -> Any:
            return np.zeros((1, 3))

    with pytest.raises(ValueError, match=r"returned shape \(1, 3\) for 2 texts"):
        EmbeddingDuplicates(Broken(VECTORS)).count(["a", "b"])


def test_missing_extra_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_wordllama() -> Any:
        raise ImportError("No module named 'wordllama'")

    monkeypatch.setattr(embeddings_module, "_import_wordllama", no_wordllama)
    monkeypatch.setattr(WordLlamaEmbedder, "_models", {})
    with pytest.raises(EmbeddingsUnavailableError, match=r"pip install 'memlab\[embeddings\]'"):
        WordLlamaEmbedder()


# --- the bundled model ----------------------------------------------------------------------

PARAPHRASES = [
    ("User works as a nurse in Leeds", "The user is a nurse working in Leeds"),
    ("User is allergic to peanuts", "User has a peanut allergy"),
    ("User's daughter is named Mia", "User has a daughter called Mia"),
    ("User prefers dark roast coffee", "User likes dark roast coffee best"),
    ("User moved to Berlin in 2023", "In 2023 the user relocated to Berlin"),
]
DIFFERENT = [
    ("User works as a nurse in Leeds", "User is allergic to peanuts"),
    ("User's daughter is named Mia", "User's son is named Leo"),
    ("User prefers dark roast coffee", "User prefers green tea"),
    ("User moved to Berlin in 2023", "User moved to Paris in 2019"),
    ("User is vegetarian", "User plays the guitar"),
]


@pytest.fixture(scope="module")
def wordllama_embedder() -> WordLlamaEmbedder:
    pytest.importorskip("wordllama", reason="needs the optional extra memlab[embeddings]")
    return WordLlamaEmbedder()


def test_bundled_model_separates_paraphrases_from_other_facts(
    wordllama_embedder: WordLlamaEmbedder,
) -> None:
    dups = EmbeddingDuplicates(wordllama_embedder)
    for first, second in PARAPHRASES:
        assert dups.count([first, second]) == 1, (first, second)
    for first, second in DIFFERENT:
        assert dups.count([first, second]) == 0, (first, second)


def test_bundled_model_handles_empty_text(wordllama_embedder: WordLlamaEmbedder) -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning from 0/0
        dups = EmbeddingDuplicates(wordllama_embedder)
        assert dups.count(["", "User plays chess", ""]) == 1


def test_bundled_model_vectors_are_unit_length(wordllama_embedder: WordLlamaEmbedder) -> None:
    vectors = np.asarray(wordllama_embedder.embed(["User plays chess", "User is vegetarian"]))
    assert vectors.shape == (2, 256)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert wordllama_embedder.embed([]).shape == (0, 256)


def test_loading_the_model_leaves_logging_alone(wordllama_embedder: WordLlamaEmbedder) -> None:
    # wordllama configures the root logger when imported; memlab undoes it.
    root = logging.getLogger()
    before = (list(root.handlers), root.level)
    monkey_models: dict[int, Any] = {}
    original = WordLlamaEmbedder._models
    WordLlamaEmbedder._models = monkey_models
    try:
        WordLlamaEmbedder(dim=128)
    finally:
        WordLlamaEmbedder._models = original
    assert (list(root.handlers), root.level) == before


# --- in a sweep and a report ----------------------------------------------------------------

T0 = datetime(2025, 4, 7, 9, 0, tzinfo=UTC)


def test_sweep_and_report_show_embedding_duplicates(tmp_path: Path) -> None:
    dataset = tmp_path / "owners.jsonl"
    owner = {
        "user_id": "ann",
        "sessions": [
            one_turn("t1", T0, "[s:1] hello"),
            one_turn("t2", T0 + timedelta(days=1), "[s:2] hello again"),
        ],
    }
    write_owners(dataset, [owner])
    replies = {"[s:1]": update("a", "b"), "[s:2]": update("a2", "c")}

    grid = Grid.from_mapping({"name": "emb", "dataset": str(dataset), "base": {}})
    dups = EmbeddingDuplicates(TableEmbedder(VECTORS), threshold=0.9)
    run = sweep(
        str(dataset),
        grid,
        runs_dir=tmp_path / "runs",
        backend_factory=lambda _spec: marker_backend(replies),
        progress=False,
        embedding_duplicates=dups,
    )
    assert list(run.sessions["dup_embedding"]) == [0, 1]  # a2 repeats a; c is 0.8 from b
    assert list(run.sessions["dup_near"]) == [0, 0]  # no shared words: lexically distinct
    summary = run.summary.iloc[0]
    assert summary["dup_embedding"] == 1
    assert summary["duplicate_rate_embedding"] == pytest.approx(1 / 4)

    table = compare_table([run])
    assert table["duplicate_rate_embedding"].iloc[0] == pytest.approx(0.25)
    paths = build_report([run], tmp_path / "report")
    assert "duplicate rate (embeddings)" in paths.markdown.read_text(encoding="utf-8")
    assert "duplicate rate (embeddings)" in paths.html.read_text(encoding="utf-8")
    # The measure and its threshold are recorded with the run and named in the report.
    assert run.environment["embedding_duplicates"] == "table >= 0.9"
    assert "duplicate rate (embeddings) in emb: table >= 0.9" in paths.markdown.read_text(
        encoding="utf-8"
    )

    plain = sweep(
        str(dataset),
        grid,
        runs_dir=tmp_path / "runs",
        run_name="plain",
        backend_factory=lambda _spec: marker_backend(replies),
        progress=False,
    )
    assert "dup_embedding" not in plain.sessions.columns
    assert "duplicate_rate_embedding" not in compare_table([plain]).columns
    paths = build_report([plain], tmp_path / "report-plain")
    assert "duplicate rate (embeddings)" not in paths.markdown.read_text(encoding="utf-8")


def test_cli_reports_a_missing_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def unavailable(self: WordLlamaEmbedder, dim: int = 256) -> None:
        raise EmbeddingsUnavailableError("install memlab[embeddings]")

    monkeypatch.setattr(WordLlamaEmbedder, "__init__", unavailable)
    code = main(["run", "smoke", "--embedding-duplicates", "--runs-dir", str(tmp_path)])
    assert code == 2
    assert "install memlab[embeddings]" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()  # nothing ran


def test_gate_checks_the_embedding_duplicate_rate(tmp_path: Path) -> None:
    dataset = tmp_path / "owners.jsonl"
    owner = {"user_id": "ann", "sessions": [one_turn("t1", T0, "[s:1] hello")]}
    write_owners(dataset, [owner])
    run = sweep(
        str(dataset),
        Grid.from_mapping({"name": "gated", "dataset": str(dataset), "base": {}}),
        runs_dir=tmp_path / "runs",
        backend_factory=lambda _spec: ScriptedBackend(replies=[update("a", "b", "a2", "c")]),
        progress=False,
        embedding_duplicates=EmbeddingDuplicates(TableEmbedder(VECTORS), threshold=0.9),
    )
    assert run.summary.iloc[0]["duplicate_rate_embedding"] == pytest.approx(0.25)
    assert check_gate(run, Thresholds(max_duplicate_rate_embedding=0.25)) == []
    (failure,) = check_gate(run, Thresholds(max_duplicate_rate_embedding=0.2))
    assert failure.metric == "duplicate_rate_embedding" and failure.value == pytest.approx(0.25)
