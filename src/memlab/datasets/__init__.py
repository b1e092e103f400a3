"""memlab.datasets."""

__all__: list[str] = []
