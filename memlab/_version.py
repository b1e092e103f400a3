"""memlab's version: one definition, read by the package metadata and by lane identities."""

__all__ = ["__version__"]

__version__ = "0.1.0"
