# Put first on PYTHONPATH, this stands in for the optional extra not being installed: the
# error an absent package raises (pytest.importorskip skips on it).
raise ModuleNotFoundError(
    "No module named 'wordllama' (memlab[embeddings] left out)", name="wordllama"
)
