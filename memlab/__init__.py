"""memlab: a workbench for LLM long-term-memory pipelines.

Replay labeled conversation datasets through the memory pipeline under different prompts,
thresholds and limits; validate every LLM reply against the JSON contract; chart and compare.

The names of the README's example and of the workflow (load, sweep, compare, report, gate,
try a prompt, A/B two prompts) are exported here; the subpackages' faces export what other
packages, the notebooks and the docs use (the layers are described in
``docs/architecture.md``): ``memlab.core`` (the pipeline, and the seed's names such as
``get_memory_queue``), ``memlab.backends`` (LLMs and the response cache), ``memlab.datasets``
(labeled data), ``memlab.matching`` (fact matchers), ``memlab.scoring`` (metrics and
statistics), ``memlab.grids`` (grids and lane settings), ``memlab.runs`` (run directories and
their readers), ``memlab.sweeps`` (replays), ``memlab.postrun`` (steps on a finished run),
``memlab.memory_qa`` (memory QA, the whole feature: prompts, scores, judges, the step, reports),
``memlab.reporting`` (charts, reports, the CI gate) and ``memlab.plugins`` (the registries
that built-ins and installed plugins share).

Each name is declared once, in the ``TYPE_CHECKING`` block below, and imported on first use
(:mod:`memlab._lazy`), so ``import memlab.core`` loads neither pandas nor matplotlib.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memlab._lazy import lazy_face
from memlab._version import __version__ as __version__

if TYPE_CHECKING:
    from memlab.backends import OutputMode as OutputMode
    from memlab.backends import resolve_backend as resolve_backend
    from memlab.core import JsonFileStorage as JsonFileStorage
    from memlab.core import MemoryUpdater as MemoryUpdater
    from memlab.datasets import load_dataset as load_dataset
    from memlab.errors import MemlabError as MemlabError
    from memlab.grids import Grid as Grid
    from memlab.reporting import ab as ab
    from memlab.reporting import build_report as build_report
    from memlab.reporting import check_gate as check_gate
    from memlab.reporting import try_prompt as try_prompt
    from memlab.runs import load_run as load_run
    from memlab.scoring import compare as compare
    from memlab.sweeps import sweep as sweep
else:  # at run time: each name is imported on first use
    __getattr__, __dir__ = lazy_face(__name__)
