"""Labeled conversation datasets: format, questions, loader, statistics, bundled sets, LoCoMo.

Names are imported on first use (see :mod:`memlab._lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memlab._lazy import lazy_face

if TYPE_CHECKING:
    from memlab.datasets.loader import DatasetError as DatasetError
    from memlab.datasets.loader import dataset_stats as dataset_stats
    from memlab.datasets.loader import format_stats as format_stats
    from memlab.datasets.loader import load_dataset as load_dataset
    from memlab.datasets.loader import validate_dataset as validate_dataset
    from memlab.datasets.loader import write_dataset as write_dataset
    from memlab.datasets.locomo import import_locomo as import_locomo
    from memlab.datasets.models import Message as Message
    from memlab.datasets.models import Owner as Owner
    from memlab.datasets.models import Session as Session
    from memlab.datasets.models import contains_cjk as contains_cjk
    from memlab.datasets.questions import Question as Question
    from memlab.datasets.registry import DatasetNotFoundError as DatasetNotFoundError
    from memlab.datasets.registry import dataset_dirs as dataset_dirs
    from memlab.datasets.registry import resolve_dataset as resolve_dataset
else:  # at run time: each name is imported on first use
    __getattr__, __dir__ = lazy_face(__name__)
