"""memlab.core."""

__all__: list[str] = []
