"""Notebook 02's ring-shift explorer: where every rank's tensor lands for a given k.
Until the ring_shift exercise is solved, it shows the reference solution's result."""
import ipywidgets as widgets

from labs import launch_exercise
from labs.batching import ring_shifts_run


def show_ring_shifts(world_size, ks):
    """Run ring_shift on real workers for each k in `ks` (one launch); print where each
    tensor went. Returns {k: holders}."""
    ks = [int(k) for k in ks]
    per_rank = launch_exercise(ring_shifts_run, world_size, args=(ks,), quiet=True)
    holders = {k: [per_rank[r][i] for r in range(world_size)] for i, k in enumerate(ks)}
    for k in ks:
        print(f"world size {world_size}, k = {k} (k % world_size = {k % world_size}):")
        print("  rank r now holds the tensor of rank:", dict(enumerate(holders[k])))
    return holders


def show_ring_shift(world_size, k):
    """The explorer's button: one shift, printed (no return value for interact to show)."""
    show_ring_shifts(world_size, [k])


def ring_shift_explorer():
    """Sliders for the world size and k; each click launches real workers."""
    widgets.interact_manual(
        show_ring_shift,
        world_size=widgets.IntSlider(value=4, min=1, max=6, description="world size"),
        k=widgets.IntSlider(value=1, min=-7, max=7, description="k"))
