"""Fact matching: matchers, the default matcher, calibration, the LLM judge, embeddings."""
