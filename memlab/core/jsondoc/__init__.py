"""The memory document and its JSON contract: the schema, validating and parsing a reply, repairing
JSON, merging updates, near-duplicate similarity, echo checks.
"""

__all__: list[str] = []
