"""Scoring: metrics declared once, per-owner counts, statistics, comparisons, operations."""
