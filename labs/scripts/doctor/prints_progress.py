"""A correct ring shift whose ranks print a progress line per step, more lines than the
report shows (10 per rank): the doctor shows the last ones and says where the rest is;
rank 0 also writes a line to stderr. Exit 0.

    python -m labs.doctor --nproc-per-node 2 labs/scripts/doctor/prints_progress.py --steps 25
"""
import argparse
import sys

import torch
import torch.distributed as dist

parser = argparse.ArgumentParser(description="a ring shift that reports its progress")
parser.add_argument("--steps", type=int, default=25, help="how many shifts (default 25)")
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
