"""Notebook 00's explorer: pick a world size, start that many real workers."""
import ipywidgets as widgets
from IPython.display import display

from labs import launch
from labs.welcome import first_all_reduce


def run_hello(world_size):
    """What the explorer's button does: start `world_size` real workers, all_reduce, report."""
    results = launch(first_all_reduce, world_size, quiet=True)
    expected = world_size * (world_size + 1) / 2
    print(f"{world_size} workers started; each rank's all_reduce result: {list(results)}")
    print(f"sum of 1..{world_size} = {expected:g}: "
          f"{'correct' if all(r == expected for r in results) else 'WRONG'}")
    return results


def explorer():
    """A slider for the world size and a Run button that launches real workers."""
    size = widgets.IntSlider(value=4, min=1, max=8, description="world size")
    button = widgets.Button(description="Run", button_style="primary")
    out = widgets.Output()

    def on_click(_):
        out.clear_output()
        with out:
            run_hello(size.value)

    button.on_click(on_click)
    display(widgets.VBox([widgets.HBox([size, button]), out]))
