"""Lesson 00: the worker functions notebook 00 launches."""
import os
import time

import torch
import torch.distributed as dist

from labs.harness.launcher import launch


def hello(rank, world_size):
    """Each rank says who it is and returns its rank."""
    print(f"I am rank {rank} of {world_size} (backend: {dist.get_backend()})")
    return rank


def first_all_reduce(rank, world_size):
    """Every rank contributes rank + 1; all_reduce sums them on every rank."""
    t = torch.tensor([rank + 1.0])
    dist.all_reduce(t)
    return t.item()


def fails_on_rank(rank, world_size, bad_rank=1):
    """Rank `bad_rank` raises; the others would wait for it in a barrier."""
    if rank == bad_rank:
        raise ValueError(f"rank {rank} found a bad batch")
    dist.barrier()
    return rank


def head_to_head_send(rank, world_size, numel=10):
    """Both ranks call blocking send first: on gloo a send waits for the matching recv."""
    peer = 1 - rank
    dist.send(torch.ones(numel), dst=peer)
    buf = torch.empty(numel)
    dist.recv(buf, src=peer)
    return buf.sum().item()


def die(rank, world_size, how="exit"):
    if rank == world_size - 1:
        if how == "exit":
            os._exit(3)
        os.kill(os.getpid(), 9)
    time.sleep(30)


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
    import ipywidgets as widgets
    from IPython.display import display

    size = widgets.IntSlider(value=4, min=1, max=8, description="world size")
    button = widgets.Button(description="Run", button_style="primary")
    out = widgets.Output()

    def on_click(_):
        out.clear_output()
        with out:
            run_hello(size.value)

    button.on_click(on_click)
    display(widgets.VBox([widgets.HBox([size, button]), out]))


def demo(rank, world_size):
    """Lesson 00 demo: every rank contributes rank + 1; all_reduce sums them."""
    return first_all_reduce(rank, world_size)


if __name__ == "__main__":
    from labs.harness import cli
    cli.main(demo)
