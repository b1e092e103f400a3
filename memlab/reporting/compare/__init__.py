"""Comparing prompts and settings: A/B trials, verdicts and gates."""

__all__: list[str] = []
