"""What calls cost: prices, spend records and estimates before a run."""

__all__: list[str] = []
