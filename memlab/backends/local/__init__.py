"""Local models: llama.cpp in process and a local llama-server."""

__all__: list[str] = []
