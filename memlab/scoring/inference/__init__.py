"""Statistics: estimators, intervals, coverage, survival and collapse."""

__all__: list[str] = []
