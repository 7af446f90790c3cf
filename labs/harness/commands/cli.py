"""Run a lesson's demo from the command line: locally through `launch`, or under torchrun.

Every lab module with a demo ends with

    if __name__ == "__main__":
        cli.main(demo)

so the same function runs three ways, with the same printed results:

    python -m labs.ring                                   # local: launch(), 4 ranks
    torchrun --standalone --nproc-per-node=4 -m labs.ring # torchrun: one process per rank
    torchrun --nnodes=2 --nproc-per-node=2 --rdzv-backend=c10d \\
             --rdzv-endpoint=HOST:29500 -m labs.ring        # several machines

`demo(rank, world_size)` returns something printable; each rank prints
`rank R result: <value>` (under torchrun, every process prints its own line).
"""
from __future__ import annotations

import argparse
import datetime
import importlib
import os
import sys

import torch
import torch.distributed as dist


def under_torchrun() -> bool:
    return all(k in os.environ for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"))


def format_result(rank: int, value) -> str:
    if isinstance(value, torch.Tensor):
        value = value.tolist()
    return f"rank {rank} result: {value}"


def _importable(fn):
    """`python -m labs.ring` runs the module as __main__; launch needs `labs.ring.demo`."""
    if fn.__module__ != "__main__":
        return fn
    spec = getattr(sys.modules["__main__"], "__spec__", None)
    if spec is None:
        raise SystemExit("run lessons as modules: python -m labs.<lesson>")
    return getattr(importlib.import_module(spec.name), fn.__name__)


def main(demo, default_world_size: int = 4, argv=None) -> None:
    parser = argparse.ArgumentParser(description=(demo.__doc__ or "").strip().splitlines()[0]
                                     if demo.__doc__ else None)
    parser.add_argument("--world-size", type=int, default=default_world_size,
                        help="ranks for a local run (ignored under torchrun)")
    parser.add_argument("--timeout", type=float, default=60.0)
    opts = parser.parse_args(argv)
    if under_torchrun():
        rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
        # Before joining: the first import of torch._dynamo (DistributedDataParallel's
        # constructor, torch.compile) imports torch.distributed.nn, whose functions take
        # `group=group.WORLD` as a default, evaluated at import. Imported after
        # init_process_group, those defaults hold the group, destroy_process_group() frees
        # nothing, and gloo's threads end at interpreter shutdown, where one can abort the
        # process (notebook 11, section 5). Imported now, the defaults are None.
        import torch.distributed.nn as _dist_nn  # noqa: F401
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=opts.timeout))
        try:
            # As for a local run: call labs.<lesson>.demo, not the copy in __main__, so
            # exercise stubs know their module (solutions.<lesson>, not solutions.__main__).
            value = _importable(demo)(rank, world_size)
            # One write per line: with PYTHONUNBUFFERED=1, print() writes the text and the
            # newline separately, and ranks sharing a terminal interleave mid-line.
            sys.stdout.write(format_result(rank, value) + "\n")
            sys.stdout.flush()
        finally:
            dist.destroy_process_group()
        return
    from labs.harness.launch.launcher import launch
    results = launch(_importable(demo), opts.world_size, timeout=opts.timeout)
    for rank, value in enumerate(results):
        print(format_result(rank, value))
