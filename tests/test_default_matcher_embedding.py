"""The embedding stage of the default matcher, and the embeddings-only matcher, with a table
embedder whose vectors are chosen so every cosine is known by hand.

Vectors: (1, 0) and (3, 4) have cosine 3/5 = 0.6; (1, 0) and (4, 3) have cosine 0.8; (1, 0) and
(0, 1) have cosine 0; a text missing from the table gets the zero vector (cosine 0 with
everything). The lexical part of a score is known by hand too: "Owns a boat" and "Plays chess"
share no word (coverage 0 both ways), "User plays chess" and "Plays chess" the same words
(coverage 1 both ways).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence

import numpy as np
import pytest

from memlab.matching.base import MatchResult
from memlab.matching.default_matcher import DefaultMatcher, EmbeddingMatcher, _Vectors
from memlab.matching.embeddings import EmbeddingDuplicates

CHESS, BOARD_GAMES, BOAT = "Plays chess", "Plays board games", "Owns a boat"
SAME_WORDS = "User plays chess"
# The module (the package exports a function of the same name).
dm = importlib.import_module("memlab.matching.default_matcher")


class TableEmbedder:
    """Vectors from a table (the zero vector for any other text); records every batch."""

    name = "table"

    def __init__(self, table: Mapping[str, Sequence[float]]) -> None:
        self.table = dict(table)
        self.batches: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.batches.append(list(texts))
        return [list(self.table.get(text, (0.0, 0.0))) for text in texts]

    def embedded(self) -> list[str]:
        return [text for batch in self.batches for text in batch]


def sentences(**cosine_with_chess: float) -> TableEmbedder:
    """CHESS at (1, 0), and each named text at the vector whose cosine with it is given."""
    vectors = {0.6: (3.0, 4.0), 0.8: (4.0, 3.0), 0.0: (0.0, 1.0), 1.0: (2.0, 0.0)}
    vectors[-1.0] = (-1.0, 0.0)
    names = {"boat": BOAT, "board": BOARD_GAMES, "same": SAME_WORDS}
    table = {CHESS: (1.0, 0.0)}
    table.update({names[key]: vectors[c] for key, c in cosine_with_chess.items()})
    return TableEmbedder(table)


# --- the embeddings-only matcher -------------------------------------------------------


def test_embedding_matcher_matches_from_its_threshold_on() -> None:
    embedder = sentences(board=0.6, boat=0.0)
    matcher = EmbeddingMatcher(embedder)
    assert (matcher.name, matcher.threshold) == ("embeddings", 0.6)
    assert matcher.match(BOARD_GAMES, CHESS) == MatchResult(0.6, True, "cosine 0.60 >= 0.6")
    assert matcher.covers(BOARD_GAMES, CHESS) is True
    assert matcher.match(BOAT, CHESS) == MatchResult(0.0, False, "cosine 0.00 < 0.6")
    assert matcher.covers(BOAT, CHESS) is False
    stricter = EmbeddingMatcher(embedder, threshold=0.61)
    assert stricter.match(BOARD_GAMES, CHESS) == MatchResult(0.6, False, "cosine 0.60 < 0.61")
    assert stricter.covers(BOARD_GAMES, CHESS) is False
    looser = EmbeddingMatcher(embedder, threshold=0.59)
    assert looser.covers(BOARD_GAMES, CHESS) is True


def test_embedding_matcher_scores_the_signed_cosine() -> None:
    embedder = TableEmbedder({CHESS: (1.0, 0.0), BOAT: (-2.0, 0.0), BOARD_GAMES: (4.0, 3.0)})
    matcher = EmbeddingMatcher(embedder, threshold=-1.0)
    assert matcher.match(BOAT, CHESS) == MatchResult(-1.0, True, "cosine -1.00 >= -1")
    assert matcher.match(BOARD_GAMES, CHESS).score == pytest.approx(0.8)
    assert matcher.match(CHESS, BOARD_GAMES).score == pytest.approx(0.8)


# --- vectors per text ------------------------------------------------------------------


class RecordingSource(EmbeddingDuplicates):
    """The embeddings module's cache, recording what the matcher asks it for."""

    def __init__(self, embedder: TableEmbedder) -> None:
        super().__init__(embedder)
        self.asked: list[list[str]] = []

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        self.asked.append(list(texts))
        return super().vectors(texts)


def test_vectors_give_cosines_and_a_matrix_rows_first() -> None:
    source = RecordingSource(sentences(board=0.6, boat=0.0, same=0.8))
    vectors = _Vectors(source)
    assert vectors.cosine(BOARD_GAMES, CHESS) == pytest.approx(0.6)
    assert vectors.cosine(CHESS, SAME_WORDS) == pytest.approx(0.8)
    assert vectors.cosine(BOAT, BOARD_GAMES) == pytest.approx(0.8)  # (0, 1) . (0.6, 0.8)
    matrix = vectors.matrix([CHESS, BOAT], [BOARD_GAMES, SAME_WORDS, CHESS])
    assert matrix.shape == (2, 3)
    np.testing.assert_allclose(matrix, [[0.6, 0.8, 1.0], [0.8, 0.6, 0.0]], atol=1e-12)
    assert vectors.matrix([BOAT], [CHESS]).tolist() == [[0.0]]


def test_vectors_embed_each_new_text_once_in_one_batch() -> None:
    source = RecordingSource(sentences(board=0.6, boat=0.0))
    vectors = _Vectors(source)
    vectors.prepare([CHESS, BOAT, CHESS])
    vectors.prepare([BOAT, BOARD_GAMES, BOARD_GAMES])
    vectors.prepare([CHESS])
    vectors.cosine(CHESS, BOAT)
    vectors.matrix([BOAT], [BOARD_GAMES])
    assert source.asked == [[CHESS, BOAT], [BOARD_GAMES]]
    vectors.cosine(CHESS, SAME_WORDS)
    assert source.asked[-1] == [SAME_WORDS]


def test_vectors_refuse_a_source_that_returns_too_few_rows() -> None:
    class Short(RecordingSource):
        def vectors(self, texts: Sequence[str]) -> np.ndarray:
            return super().vectors(texts)[:-1]

    vectors = _Vectors(Short(sentences(boat=0.0)))
    with pytest.raises(ValueError, match="zip"):
        vectors.prepare([CHESS, BOAT])


# --- the blend in the default matcher --------------------------------------------------


@pytest.mark.parametrize(
    ("cosine", "semantic"),
    [(-1.0, 0.0), (0.0, 0.0), (0.6, 0.5), (0.8, 5 / 6), (1.0, 1.0)],
)
def test_the_cosine_is_rescaled_between_floor_and_ceiling(cosine: float, semantic: float) -> None:
    # No shared word: the score is the embedding share alone, 0.1 x the rescaled cosine
    # (0.3 -> 0, 0.9 -> 1, clipped to [0, 1]).
    matcher = DefaultMatcher(embedder=sentences(boat=cosine))
    result = matcher.match(BOAT, CHESS)
    assert result.score == pytest.approx(0.1 * semantic)
    assert result.matched is False
    shown = f"{cosine:.2f}".replace("-0.00", "0.00")
    expected = f"coverage gold 0.00 stored 0.00, embeddings {shown}: {0.1 * semantic:.2f} < 0.6"
    assert result.reason == expected


def test_the_blend_weighs_words_and_embeddings() -> None:
    # Same words: 0.9 x 1 + 0.1 x 0.5 with the cosine 0.6.
    matcher = DefaultMatcher(embedder=sentences(same=0.6))
    assert matcher.match(SAME_WORDS, CHESS) == MatchResult(
        pytest.approx(0.95),  # type: ignore[arg-type]
        True,
        "coverage gold 1.00 stored 1.00, embeddings 0.60: 0.95 >= 0.6",
    )
    half = DefaultMatcher(
        embedder=sentences(same=0.6, boat=0.6),
        embedding_weight=0.5,
        cosine_floor=0.0,
        cosine_ceiling=1.0,
    )
    assert half.match(SAME_WORDS, CHESS).score == pytest.approx(0.5 * 1 + 0.5 * 0.6)
    assert half.match(BOAT, CHESS).score == pytest.approx(0.5 * 0.6)
    narrow = DefaultMatcher(embedder=sentences(boat=0.8), cosine_floor=0.7, cosine_ceiling=0.8)
    assert narrow.match(BOAT, CHESS).score == pytest.approx(0.1 * 1.0)
    raised = DefaultMatcher(embedder=sentences(boat=0.6), cosine_floor=0.5, cosine_ceiling=1.0)
    assert raised.match(BOAT, CHESS).score == pytest.approx(0.1 * 0.2)


def test_the_blended_score_matches_from_the_threshold_on() -> None:
    # Embeddings alone (weight 1, cosine not rescaled): the score is the cosine, 0.6.
    def matcher(threshold: float) -> DefaultMatcher:
        return DefaultMatcher(
            embedder=sentences(boat=0.6),
            threshold=threshold,
            embedding_weight=1.0,
            cosine_floor=0.0,
            cosine_ceiling=1.0,
        )

    at = matcher(0.6).match(BOAT, CHESS)
    assert at == MatchResult(
        0.6, True, "coverage gold 0.00 stored 0.00, embeddings 0.60: 0.60 >= 0.6"
    )
    assert matcher(0.6).covers(BOAT, CHESS) is True
    above = matcher(0.600001).match(BOAT, CHESS)
    assert (above.score, above.matched) == (0.6, False)
    assert above.reason.endswith(": 0.60 < 0.600001")
    assert matcher(0.600001).covers(BOAT, CHESS) is False


def test_a_veto_or_chinese_text_skips_the_embeddings() -> None:
    embedder = sentences()
    matcher = DefaultMatcher(embedder=embedder)
    denied = matcher.match("Doesn't play chess", CHESS)
    assert denied == MatchResult(
        0.0, False, "polarity: gold positive, stored negative (coverage gold 1.00 stored 1.00)"
    )
    chinese = matcher.match("在上海读博士", "在北京读博士")
    assert "embeddings" not in chinese.reason and chinese.matched is False
    asked = set(embedder.embedded())
    assert not {CHESS, "Doesn't play chess", "在上海读博士", "在北京读博士"} & asked


def test_similar_words_link_from_the_similar_word_cosine_on() -> None:
    # "sofa" / "couch": linked at a cosine of 0.8 (the default similar_word) with credit 0.75,
    # so gold and stored coverage are (1 + 0.75) / 2; the sentences are not in the table
    # (cosine 0, nothing added). Below 0.8 the words stay apart: (1 + 0) / 2.
    gold, stored = "Bought a sofa", "Bought a couch"

    def score(couch: tuple[float, float], **params: float) -> float:
        embedder = TableEmbedder({"sofa": (1.0, 0.0), "couch": couch})
        return DefaultMatcher(embedder=embedder, **params).match(stored, gold).score

    assert score((4.0, 3.0)) == pytest.approx(0.9 * 0.875)
    assert score((3.0, 4.0)) == pytest.approx(0.9 * 0.5)
    assert score((0.799, (1 - 0.799**2) ** 0.5)) == pytest.approx(0.9 * 0.5)  # just below
    assert score((3.0, 4.0), similar_word=0.6) == pytest.approx(0.9 * 0.875)
    assert score((4.0, 3.0), similar_word=0.81) == pytest.approx(0.9 * 0.5)
    assert score((4.0, 3.0), similar_credit=0.5) == pytest.approx(0.9 * 0.75)
    assert score((3.0, 4.0), similar_word=0.6, similar_credit=1.0) == pytest.approx(0.9)


# --- warming: lazy, once, in the order given -------------------------------------------


def test_warmed_texts_wait_for_the_first_pair_to_decide() -> None:
    embedder = sentences(boat=0.0)
    matcher = DefaultMatcher(embedder=embedder)
    matcher.warm([CHESS, BOAT, CHESS, "在上海读博士"])
    matcher.warm([BOAT, "Adopted a dog"])
    assert embedder.batches == []
    matcher.match(BOAT, CHESS)
    # One batch per warm, in order: its English texts, then their words' lemmas.
    assert embedder.batches == [
        [CHESS, BOAT, "play", "chess", "own", "boat"],
        ["Adopted a dog", "adopt", "dog"],
    ]
    assert matcher._pending == []
    matcher.match(CHESS, BOAT)
    assert len(embedder.batches) == 2  # every text was embedded already
    matcher.warm(["Plays the piano"])
    matcher.match(BOAT, CHESS)  # decided already: the waiting batch keeps waiting
    assert len(embedder.batches) == 2 and matcher._pending == [["Plays the piano"]]


def test_warming_without_embeddings_reads_and_embeds_nothing() -> None:
    matcher = DefaultMatcher(threshold=0.55)
    matcher.warm([CHESS])
    matcher.match(SAME_WORDS, CHESS)
    assert matcher._pending == []


def test_a_long_queue_is_embedded_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dm, "_PENDING_TEXTS", 3)
    embedder = sentences()
    matcher = DefaultMatcher(embedder=embedder)
    matcher.warm([CHESS, BOAT])
    matcher.warm([CHESS])
    assert embedder.batches == []  # 3 texts wait
    matcher.warm(["Adopted a dog"])  # the 4th: all are embedded now
    assert embedder.batches == [
        [CHESS, BOAT, "play", "chess", "own", "boat"],
        ["Adopted a dog", "adopt", "dog"],
    ]
    assert matcher._pending == []


def test_a_batch_that_fails_is_dropped() -> None:
    class Failing(TableEmbedder):
        def embed(self, texts: Sequence[str]) -> list[list[float]]:
            if not self.batches:
                self.batches.append(["failed"])
                raise RuntimeError("embedding server down")
            return super().embed(texts)

    embedder = Failing({})
    matcher = DefaultMatcher(embedder=embedder)
    matcher.warm([CHESS])
    matcher.warm([BOAT])
    with pytest.raises(RuntimeError, match="embedding server down"):
        matcher.match(BOAT, CHESS)
    assert matcher._pending == [[BOAT]]  # the next batch still waits
    matcher.match(BOAT, CHESS)
    assert matcher._pending == []
    assert embedder.batches[1] == [BOAT, "own", "boat"]


# --- verdicts kept ---------------------------------------------------------------------


def test_remembered_verdicts_answer_later_lookups() -> None:
    embedder = sentences()
    matcher = DefaultMatcher(embedder=embedder)
    earlier = MatchResult(0.42, True, "decided earlier")
    matcher.remember({(BOAT, CHESS): earlier})
    assert matcher.match(BOAT, CHESS) is earlier
    assert matcher.covers(BOAT, CHESS) is True
    assert embedder.batches == []
    copy = matcher.decided()
    assert copy == {(BOAT, CHESS): earlier}
    copy.clear()
    assert matcher.decided() == {(BOAT, CHESS): earlier}


def _verdicts(n: int, start: int = 0) -> dict[tuple[str, str], MatchResult]:
    return {(f"s{i}", f"g{i}"): MatchResult(i / 10, False, f"v{i}") for i in range(start, n)}


def test_remember_restarts_the_memo_when_it_would_overflow(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(dm, "_MEMO_SIZE", 3)
    matcher = DefaultMatcher(embedder=sentences())
    matcher.remember(_verdicts(2))
    matcher.remember(_verdicts(3, start=2))
    assert list(matcher.decided()) == [("s0", "g0"), ("s1", "g1"), ("s2", "g2")]  # 3 fit
    matcher.remember(_verdicts(4, start=3))
    assert list(matcher.decided()) == [("s3", "g3")]
    fresh = DefaultMatcher(embedder=sentences())
    fresh.remember(_verdicts(5))
    assert list(fresh.decided()) == [("s0", "g0"), ("s1", "g1"), ("s2", "g2")]


def test_match_restarts_a_full_memo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dm, "_MEMO_SIZE", 2)
    matcher = DefaultMatcher(embedder=sentences())
    matcher.remember(_verdicts(1))
    matcher.match(BOAT, CHESS)
    assert list(matcher.decided()) == [("s0", "g0"), (BOAT, CHESS)]
    matcher.match(CHESS, BOAT)
    assert list(matcher.decided()) == [(CHESS, BOAT)]


def test_the_memo_keeps_every_verdict_of_a_1000_owner_sweep() -> None:
    # 1,000 owners x 20 stored facts x 20 gold facts: the pairs a sweep of 20 sessions (one
    # fact each) asks about; a memo that restarts midway has the replay decide them again.
    owners, facts = 1000, 20
    same = MatchResult(0.5, False, "v")
    verdicts = {
        (f"s{o}.{i}", f"g{o}.{j}"): same
        for o in range(owners)
        for i in range(facts)
        for j in range(facts)
    }
    matcher = DefaultMatcher(embedder=sentences())
    matcher.remember(verdicts)
    assert len(matcher.decided()) == owners * facts * facts
    assert matcher.match("s999.19", "g999.19") is same
    assert matcher.match("s0.0", "g0.0") is same
