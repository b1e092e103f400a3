"""Commands that run experiments: demo, run, ab, tune, qa and judge."""

__all__: list[str] = []
