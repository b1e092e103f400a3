"""Compatibility with the agent framework the pipeline comes from (names of the seed).

Not part of the memory pipeline itself: ``ThreadState`` and its reducers describe an agent's
thread state, which the middleware only reads messages from. They are kept here so code
written against the seed's names keeps working.

Names are imported on first use (see :mod:`memlab._lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memlab._lazy import lazy_face

if TYPE_CHECKING:
    from memlab.compat.thread_state import SandboxState as SandboxState
    from memlab.compat.thread_state import ThreadDataState as ThreadDataState
    from memlab.compat.thread_state import ThreadState as ThreadState
    from memlab.compat.thread_state import ViewedImageData as ViewedImageData
    from memlab.compat.thread_state import merge_artifacts as merge_artifacts
    from memlab.compat.thread_state import merge_viewed_images as merge_viewed_images
else:  # at run time: each name is imported on first use
    __getattr__, __dir__ = lazy_face(__name__)
