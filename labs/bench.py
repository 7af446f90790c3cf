"""Benchmarks: scripts that print ratios measured in one run, never timed tests.

    python -m labs.bench launch        # launch start-up: forkserver (the course) vs spawn
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch.multiprocessing as tmp

from labs import launcher
from labs.welcome import first_all_reduce


def _spawn_launch(world_size):
    """The textbook way: torch.multiprocessing.spawn, children re-import torch each time.

    Rendezvous through a fresh TCPStore like launch() does, so only the start method differs.
    """
    import torch.distributed as dist
    import datetime
    store = dist.TCPStore("127.0.0.1", 0, world_size, is_master=True, wait_for_workers=False,
                          timeout=datetime.timedelta(seconds=60))
    tmp.spawn(_spawn_worker, args=(world_size, store.port), nprocs=world_size, join=True)


def _spawn_worker(rank, world_size, port):
    import datetime
    import torch.distributed as dist
    store = dist.TCPStore("127.0.0.1", port, world_size, is_master=False,
                          timeout=datetime.timedelta(seconds=60))
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world_size)
    first_all_reduce(rank, world_size)
    dist.destroy_process_group()


def bench_launch(world_size=4, repeats=7, spawn_repeats=3):
    """Median wall time of a `world_size`-rank launch (join the group + one all_reduce)."""
    t = time.perf_counter()
    launcher.launch(first_all_reduce, world_size, quiet=True)
    first = time.perf_counter() - t
    ours = []
    for _ in range(repeats):
        t = time.perf_counter()
        launcher.launch(first_all_reduce, world_size, quiet=True)
        ours.append(time.perf_counter() - t)
    spawn = []
    for _ in range(spawn_repeats):
        t = time.perf_counter()
        _spawn_launch(world_size)
        spawn.append(time.perf_counter() - t)
    med_ours, med_spawn = statistics.median(ours), statistics.median(spawn)
    print(f"{world_size}-rank launch (join gloo group + one all_reduce), same run:")
    print(f"  labs.launch, forkserver, first launch : {first:7.3f} s (fork server imports torch once)")
    print(f"  labs.launch, forkserver, median of {repeats} : {med_ours:7.3f} s")
    print(f"  torch.multiprocessing.spawn, median of {spawn_repeats}: {med_spawn:7.3f} s")
    print(f"  spawn / forkserver: {med_spawn / med_ours:.0f}x")
    return {"first": first, "forkserver": med_ours, "spawn": med_spawn}


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m labs.bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command")
    p = sub.add_parser("launch", help="launch start-up time: forkserver vs spawn")
    p.add_argument("--world-size", type=int, default=4)
    p.add_argument("--repeats", type=int, default=7)
    opts = parser.parse_args(argv)
    if opts.command == "launch":
        bench_launch(opts.world_size, opts.repeats)
    else:
        parser.print_help()


if __name__ == "__main__":
    main()
