"""memlab: a workbench for LLM long-term-memory pipelines."""

__all__: list[str] = []
__version__ = "0.1.0"
