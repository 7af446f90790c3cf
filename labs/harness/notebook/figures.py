"""Figures drawn outside pyplot, and the one way the course shows them: `show(fig)`.

    fig, ax = detached_axes((9, 2.5))
    ax.plot(...)
    show(fig)            # a PNG in the output, in any kernel, from a cell or a widget callback

Why not `display(fig)`: IPython draws a matplotlib Figure as an image only once the inline
backend has registered its PNG formatter, which happens when *pyplot* makes its first
figure. In a fresh kernel where no pyplot figure was made yet (open a lesson, run the import
cell, then a widget) `display(fig)` shows the text `<Figure size 900x310 with 1 Axes>`.
Run All hides this: an earlier cell happened to make a pyplot figure. `show` renders the
PNG itself, so nothing depends on what ran before.
"""
from __future__ import annotations

import base64
import io

from IPython.display import display
from matplotlib.figure import Figure

PNG_DPI = 100          # the inline backend's default; sizes match the stored notebooks


def detached_axes(figsize) -> tuple:
    """(figure, axes) that pyplot does not know about, for drawing inside a widget callback.

    JupyterLab can handle another widget message on a second kernel thread while a callback
    draws; after each message that thread runs the inline backend's end-of-cell hook, which
    redraws and closes every *pyplot* figure: a pyplot figure drawn in a callback can be
    sent half-drawn or blank. A figure outside pyplot is drawn once, by us, then shown.
    """
    fig = Figure(figsize=figsize)
    return fig, fig.subplots()


def png(fig) -> bytes:
    """The figure as PNG bytes, cropped to what is drawn (as the inline backend does)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=PNG_DPI, bbox_inches="tight", facecolor="white")
    return buf.getvalue()


def show(fig) -> None:
    """Display `fig` as a PNG image, whatever the kernel's backend has done so far.

    The output keeps the figure's own text form (`<Figure size 900x310 with 1 Axes>`) as its
    plain-text part: what a text-only front end prints, and what the stored notebooks hold
    (nbval compares the text; it leaves the image out)."""
    display({"image/png": base64.b64encode(png(fig)).decode("ascii"), "text/plain": repr(fig)},
            raw=True)
