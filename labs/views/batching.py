"""Notebook 02's ring-shift explorer: where every rank's tensor lands for a given k."""
import ipywidgets as widgets

from labs import launch
from labs.batching import ring_shift_run


def show_ring_shift(world_size, k):
    """Run ring_shift on real workers; print where each tensor went."""
    holders = launch(ring_shift_run, world_size, args=(int(k),), quiet=True)
    print(f"world size {world_size}, k = {k} (k % world_size = {k % world_size}):")
    print("  rank r now holds the tensor of rank:", dict(enumerate(holders)))
    return holders


def ring_shift_explorer():
    """Sliders for the world size and k; each change launches real workers."""
    widgets.interact_manual(
        show_ring_shift,
        world_size=widgets.IntSlider(value=4, min=1, max=6, description="world size"),
        k=widgets.IntSlider(value=1, min=-7, max=7, description="k"))
