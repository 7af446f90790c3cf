"""A script with a command line of its own that reports its progress: --steps is required.
Run without it, argparse refuses the command line on every rank (the doctor says so, in
argparse's words: exit 2). With `--steps N`, each step shifts a block around the ring in one
batch and every rank prints a line (exit 0): with more than 10 steps the report shows each
rank's last 10 lines and says where the rest is. Rank 0 also writes a line to stderr.

    python -m labs.doctor --nproc-per-node 2 labs/scripts/doctor/argparse_required.py --steps 25
"""
import argparse
import sys

import torch
import torch.distributed as dist

parser = argparse.ArgumentParser(description="a ring shift, --steps times")
parser.add_argument("--steps", type=int, required=True, help="how many shifts")
steps = parser.parse_args().steps

dist.init_process_group("gloo")
rank, n = dist.get_rank(), dist.get_world_size()
if rank == 0:
    print("rank 0: starting", file=sys.stderr)
block = torch.full((4,), float(rank))
for step in range(steps):
    arrived = torch.empty(4)
    for work in dist.batch_isend_irecv([dist.P2POp(dist.isend, block, (rank + 1) % n),
                                        dist.P2POp(dist.irecv, arrived, (rank - 1) % n)]):
        work.wait()
    block = arrived
    print(f"rank {rank} step {step}: holds the block of rank {int(block[0].item())}")
dist.destroy_process_group()
