"""memlab.reporting."""

__all__: list[str] = []
