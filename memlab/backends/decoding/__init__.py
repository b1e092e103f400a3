"""Bounded decoding: JSON-schema grammars, schema walks and token masks."""

__all__: list[str] = []
