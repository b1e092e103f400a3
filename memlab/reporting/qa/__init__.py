"""The memory-QA section of a report: its tables, charts, audits and procedures."""

__all__: list[str] = []
