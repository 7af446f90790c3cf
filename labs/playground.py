"""Your scratch module: put worker functions for your own experiments here.

Worker processes import functions by name, so a function defined in a notebook cell
cannot be launched. Write it here instead, then in the notebook:

    import importlib, labs.playground as pg
    importlib.reload(pg)            # pick up your edits in the notebook itself
    launch(pg.hello, world_size=2)  # workers always import the file fresh
"""
import torch
import torch.distributed as dist


def hello(rank, world_size):
    t = torch.tensor([float(rank)])
    dist.all_reduce(t)
    print(f"hello from rank {rank} of {world_size}; sum of ranks = {t.item():g}")
    return t.item()
