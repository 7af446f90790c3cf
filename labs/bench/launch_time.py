"""`python -m labs.bench launch`: how long a launch takes to start, forkserver vs spawn."""
from __future__ import annotations

import statistics
import time

import torch.distributed as dist
import torch.multiprocessing as tmp

from labs.harness.launch import rendezvous
from labs.harness.launch.launcher import launch
from labs.welcome import first_all_reduce

# The rendezvous store's patience, in seconds: a spawned child imports torch before it joins.
STORE_TIMEOUT = 60.0


def _spawn_launch(world_size):
    """The textbook way: torch.multiprocessing.spawn, children re-import torch each time.

    Rendezvous through a fresh loopback store like launch() does, so only the start method
    differs.
    """
    store = rendezvous.open_store(world_size, STORE_TIMEOUT)
    tmp.spawn(_spawn_worker, args=(world_size, store.port), nprocs=world_size, join=True)


def _spawn_worker(rank, world_size, port):
    store = rendezvous.join_store(port, world_size, STORE_TIMEOUT)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world_size)
    first_all_reduce(rank, world_size)
    dist.destroy_process_group()


def _seconds(start_one, repeats) -> list[float]:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        start_one()
        times.append(time.perf_counter() - t)
    return times


def bench_launch(world_size=4, repeats=7, spawn_repeats=3):
    """Median wall time of a `world_size`-rank launch (join the group + one all_reduce)."""
    def ours():
        launch(first_all_reduce, world_size, quiet=True)

    first = _seconds(ours, 1)[0]
    med_ours = statistics.median(_seconds(ours, repeats))
    med_spawn = statistics.median(_seconds(lambda: _spawn_launch(world_size), spawn_repeats))
    print(f"{world_size}-rank launch (join gloo group + one all_reduce), same run:")
    print(f"  labs.launch, forkserver, first launch : {first:7.3f} s (fork server imports torch once)")
    print(f"  labs.launch, forkserver, median of {repeats} : {med_ours:7.3f} s")
    print(f"  torch.multiprocessing.spawn, median of {spawn_repeats}: {med_spawn:7.3f} s")
    print(f"  spawn / forkserver: {med_spawn / med_ours:.0f}x")
    return {"first": first, "forkserver": med_ours, "spawn": med_spawn}
