"""Thread state schema shared by agent middlewares, with its reducers.

``ThreadState`` is a plain ``TypedDict`` (no agent framework needed). The ``Annotated`` fields
carry the reducer a graph runtime uses to merge concurrent writes: ``artifacts`` are merged
with :func:`merge_artifacts` and ``viewed_images`` with :func:`merge_viewed_images`.
"""

from __future__ import annotations

from typing import Annotated, Any, NotRequired, TypedDict

__all__ = [
    "SandboxState",
    "ThreadDataState",
    "ThreadState",
    "ViewedImageData",
    "merge_artifacts",
    "merge_viewed_images",
]


class SandboxState(TypedDict):
    """The sandbox a thread runs in."""

    sandbox_id: NotRequired[str | None]


class ThreadDataState(TypedDict):
    """Per-thread directories."""

    workspace_path: NotRequired[str | None]
    uploads_path: NotRequired[str | None]
    outputs_path: NotRequired[str | None]


class ViewedImageData(TypedDict):
    """An image the agent has looked at, kept for re-injection into the model input."""

    base64: str
    mime_type: str


def merge_artifacts(existing: list[str] | None, new: list[str] | None) -> list[str]:
    """Merge artifact paths: ``existing + new`` without duplicates, first occurrence kept.

    ``None`` on either side counts as an empty list. Always returns a new list.
    """
    return list(dict.fromkeys([*(existing or []), *(new or [])]))


def merge_viewed_images(
    existing: dict[str, ViewedImageData] | None,
    new: dict[str, ViewedImageData] | None,
) -> dict[str, ViewedImageData]:
    """Merge viewed images keyed by path.

    ``None`` as ``new`` keeps ``existing``; an empty dict as ``new`` clears every image (so
    images already sent to the model are not injected again); otherwise a dict merge in which
    ``new`` wins. Always returns a new dict.
    """
    if new is None:
        return dict(existing or {})
    if not new:
        return {}
    return {**(existing or {}), **new}


class ThreadState(TypedDict, total=False):
    """State of one agent thread."""

    messages: list[Any]
    sandbox: SandboxState | None
    thread_data: ThreadDataState | None
    title: str | None
    artifacts: Annotated[list[str], merge_artifacts]
    todos: list[Any] | None
    uploaded_files: list[dict[str, Any]] | None
    viewed_images: Annotated[dict[str, ViewedImageData], merge_viewed_images]
