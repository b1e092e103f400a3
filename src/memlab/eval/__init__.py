"""memlab.eval."""

__all__: list[str] = []
