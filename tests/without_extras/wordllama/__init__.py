# Put first on PYTHONPATH, this stands in for the optional extra not being installed.
raise ImportError("wordllama is not installed (memlab[embeddings] left out)")
