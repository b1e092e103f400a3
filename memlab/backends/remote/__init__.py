"""Remote OpenAI-compatible endpoints: HTTP, retries, rate limits, embeddings."""

__all__: list[str] = []
