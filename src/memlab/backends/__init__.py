"""memlab.backends."""

__all__: list[str] = []
