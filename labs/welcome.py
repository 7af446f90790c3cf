"""Lesson 00: the worker functions notebook 00 launches (its explorer: labs.views.welcome)."""
import os
import time

import torch
import torch.distributed as dist

from labs.harness.commands import cli


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
    """The last rank exits with code 3 (how="exit") or is killed by SIGKILL; the others wait."""
    if rank == world_size - 1:
        if how == "exit":
            os._exit(3)
        os.kill(os.getpid(), 9)
    time.sleep(30)


def demo(rank, world_size):
    """Lesson 00 demo: every rank contributes rank + 1; all_reduce sums them."""
    return first_all_reduce(rank, world_size)


if __name__ == "__main__":
    cli.main(demo)
