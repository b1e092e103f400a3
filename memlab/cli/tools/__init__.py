"""Commands for setup and inspection: cache, matching, plugins, init, prompts, datasets."""

__all__: list[str] = []
