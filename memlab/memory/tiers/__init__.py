"""The tiered memory design: its options, bounds, calls, embeddings and view."""

__all__: list[str] = []
