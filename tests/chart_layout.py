"""Layout rules for a rendered chart: no label is clipped, none covers another, no whisker
crosses a label. Measured on the text boxes matplotlib renders (Agg, the report's dpi)."""

from __future__ import annotations

from itertools import combinations

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.transforms import Bbox

__all__ = ["layout_problems"]

_SLACK = 1.0  # pixels: anti-aliasing may touch a neighbour without covering it


def _drawn_texts(fig: Figure) -> list[Text]:
    """The texts a drawing shows: titles, axis labels, the tick labels of the ticks inside
    the view (matplotlib keeps labels of other ticks around, undrawn), annotations, legends."""
    texts: list[Text] = [*fig.texts]
    for ax in fig.axes:
        texts += [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label]
        texts += ax.texts
        for axis in (ax.xaxis, ax.yaxis):
            for tick in axis._update_ticks():
                texts += [label for label in (tick.label1, tick.label2) if label.get_visible()]
        legend = ax.get_legend()
        if legend is not None:
            texts += [*legend.get_texts(), legend.get_title()]
    return [t for t in texts if t.get_visible() and t.get_text().strip()]


def _boxes(fig: Figure, dpi: float) -> list[tuple[Text, Bbox]]:
    fig.set_dpi(dpi)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    return [(text, text.get_window_extent(renderer)) for text in _drawn_texts(fig)]


def _shrunk(box: Bbox) -> Bbox:
    return Bbox.from_extents(box.x0 + _SLACK, box.y0 + _SLACK, box.x1 - _SLACK, box.y1 - _SLACK)


def _segments(fig: Figure) -> list[np.ndarray]:
    """Pixel end points of every error-bar segment (errorbar draws them as LineCollections)."""
    out = []
    for ax in fig.axes:
        for collection in ax.collections:
            if isinstance(collection, LineCollection):
                transform = collection.get_transform()
                out += [transform.transform(segment) for segment in collection.get_segments()]
    return out


def _crosses(box: Bbox, segment: np.ndarray) -> bool:
    """Whether a straight segment passes through the box (sampled finely: segments are
    horizontal or vertical whiskers)."""
    points = np.linspace(segment[0], segment[-1], 200)
    inside = (
        (points[:, 0] > box.x0) & (points[:, 0] < box.x1)
        & (points[:, 1] > box.y0) & (points[:, 1] < box.y1)
    )  # fmt: skip
    return bool(inside.any())


def layout_problems(fig: Figure, dpi: float = 90) -> list[str]:
    """What breaks the rules in ``fig`` drawn at ``dpi`` (an empty list when nothing does)."""
    boxes = _boxes(fig, dpi)
    whole = fig.bbox
    problems = []
    for text, box in boxes:
        if (
            box.x0 < whole.x0 - _SLACK
            or box.y0 < whole.y0 - _SLACK
            or box.x1 > whole.x1 + _SLACK
            or box.y1 > whole.y1 + _SLACK
        ):
            problems.append(f"clipped: {text.get_text()!r}")
    # Rotated tick labels lean on each other by design; their boxes are not their glyphs.
    upright = [(t, _shrunk(b)) for t, b in boxes if t.get_rotation() % 360 == 0]
    for (a, box_a), (b, box_b) in combinations(upright, 2):
        if box_a.overlaps(box_b):
            problems.append(f"overlap: {a.get_text()!r} and {b.get_text()!r}")
    segments = _segments(fig)
    for text, box in upright:
        if any(_crosses(box, segment) for segment in segments):
            problems.append(f"a whisker crosses {text.get_text()!r}")
    return problems
