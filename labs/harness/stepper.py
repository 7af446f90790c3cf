"""A slider that steps through a picture: drag "step" to redraw it as of step k.

Both step-by-step views use it: `labs.harness.plots.scrub` (a traced run, moment by
moment) and `labs.harness.schedule.drawing.step_through` (a schedule's prediction).
"""
from __future__ import annotations

import ipywidgets as widgets
import matplotlib.pyplot as plt


def step_slider(count: int, draw, caption, *, value: int = 0, play: bool = False,
                continuous_update: bool = True):
    """A widget over steps 0..count-1: each move calls `draw(k)` (which draws one figure),
    shows it and prints `caption(k)` under it. `play=True` adds a play button.
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

    def show(change=None):
        k = slider.value
        with out:
            out.clear_output(wait=True)
            draw(k)
            plt.show()
            print(caption(k))

    slider.observe(show, names="value")
    show()
    return widgets.VBox([controls, out])
