"""A slider that steps through a picture: drag "step" to redraw it as of step k.

Both step-by-step views use it: `labs.harness.notebook.plots.scrub` (a traced run, moment by
moment) and `labs.harness.schedule.drawing.step_through` (a schedule's prediction).
"""
from __future__ import annotations

import ipywidgets as widgets

from labs.harness.notebook.figures import detached_axes, show


def step_slider(count: int, draw, caption, *, figsize, value: int = 0, play: bool = False,
                continuous_update: bool = True):
    """A widget over steps 0..count-1: each move calls `draw(k, ax)` on a fresh figure of
    `figsize`, shows it and prints `caption(k)` under it. `play=True` adds a play button.
    Returns the widget (display it)."""
    out = widgets.Output()
    last = max(count - 1, 0)
    slider = widgets.IntSlider(value=value, min=0, max=last, description="step",
                               continuous_update=continuous_update)
    controls = slider
    if play:
        player = widgets.Play(value=value, min=0, max=last, interval=600, description="play")
        widgets.jslink((player, "value"), (slider, "value"))
        controls = widgets.HBox([player, slider])

    def redraw(change=None):
        k = slider.value
        fig, ax = detached_axes(figsize)
        draw(k, ax)
        with out:
            out.clear_output(wait=True)
            show(fig)
            print(caption(k))

    slider.observe(redraw, names="value")
    redraw()
    return widgets.VBox([controls, out])
