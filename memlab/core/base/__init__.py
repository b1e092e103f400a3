"""Low-level helpers with no memlab concept of their own: files and atomic writes, JSON and YAML
text, time, redaction, safe names and text.
"""

__all__: list[str] = []
