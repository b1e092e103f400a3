"""Comparing prompts and settings: A/B trials, verdicts, gates and tuning."""

__all__: list[str] = []
