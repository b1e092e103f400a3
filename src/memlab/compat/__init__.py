"""Compatibility with the agent framework the pipeline comes from (names of the seed).

Not part of the memory pipeline itself: ``ThreadState`` and its reducers describe an agent's
thread state, which the middleware only reads messages from. They are kept here so code
written against the seed's names keeps working.
"""

from memlab.compat.thread_state import (
    SandboxState,
    ThreadDataState,
    ThreadState,
    ViewedImageData,
    merge_artifacts,
    merge_viewed_images,
)

__all__ = [
    "SandboxState",
    "ThreadDataState",
    "ThreadState",
    "ViewedImageData",
    "merge_artifacts",
    "merge_viewed_images",
]
