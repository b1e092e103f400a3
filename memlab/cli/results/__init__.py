"""Commands that read runs: runs, report and compare."""

__all__: list[str] = []
