"""The ``memlab`` command line: one module per command group, all over the library API."""

from memlab.cli.main import main

__all__ = ["main"]
