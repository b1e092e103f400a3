"""The memory update path: configuration, the LLM call protocol, conversation messages, injection,
middleware, the update queue, storage and the updater.
"""

__all__: list[str] = []
