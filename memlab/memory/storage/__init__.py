"""The memory store: items, the SQLite database, vectors, the graph and forgetting."""

__all__: list[str] = []
