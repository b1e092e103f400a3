"""Charts: the chart helpers, overlays, forgetting curves and memory over time."""

__all__: list[str] = []
