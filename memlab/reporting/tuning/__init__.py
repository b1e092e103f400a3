"""Searching prompts and settings (memlab tune): the search space, Optuna and GEPA, budgets,
the overfitting flag and the search report."""

__all__: list[str] = []
