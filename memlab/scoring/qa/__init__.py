"""Scoring memory QA: QA metrics, causes of wrong answers, judge and injection audits."""

__all__: list[str] = []
