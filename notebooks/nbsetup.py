"""Setup shared by the notebooks: where things are, the cache mode, quiet logs, table display.

Each notebook starts with ``ROOT, CACHE, CACHE_MODE, RUNS = setup()``:

- ``ROOT``: the repository (the first parent holding ``pyproject.toml``);
- ``CACHE``: ``notebooks/cache``, the committed responses of the real local model;
- ``CACHE_MODE``: ``$MEMLAB_CACHE_MODE`` (``read_write`` by default; CI uses ``read_only``,
  so a prompt that was never recorded fails instead of calling the model);
- ``RUNS``: ``runs/notebooks``, where the notebooks' run directories go (not committed).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pandas as pd

from memlab.backends import CacheMode

__all__ = ["setup"]


def setup() -> tuple[Path, Path, CacheMode, Path]:
    """Quiet memlab's log, set the table display, and return ``ROOT, CACHE, CACHE_MODE, RUNS``."""
    # Failed updates are expected (a 135M model, simulated reply failures): warnings would
    # bury the tables.
    logging.getLogger("memlab").setLevel(logging.ERROR)
    pd.set_option("display.precision", 3)
    pd.set_option("display.width", 120)
    here = Path.cwd()
    root = next(p for p in [here, *here.parents] if (p / "pyproject.toml").exists())
    mode = CacheMode(os.environ.get("MEMLAB_CACHE_MODE", "read_write"))
    return root, root / "notebooks" / "cache", mode, root / "runs" / "notebooks"
