"""The reply cache: keys, entries, the in-memory layer and cache administration."""

__all__: list[str] = []
