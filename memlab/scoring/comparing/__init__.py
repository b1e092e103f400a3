"""Comparing lanes: comparability, comparisons and inconclusive verdicts."""

__all__: list[str] = []
