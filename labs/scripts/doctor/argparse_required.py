"""A script with a command line of its own: --steps is required. Run without it, argparse
refuses the command line on every rank (the doctor says so, with argparse's words: exit 2);
with `--steps 2`, each step shifts a block around the ring in one batch (exit 0).

    python -m labs.doctor --nproc-per-node 2 labs/scripts/doctor/argparse_required.py --steps 2
"""
import argparse

import torch
import torch.distributed as dist

parser = argparse.ArgumentParser(description="a ring shift, --steps times")
parser.add_argument("--steps", type=int, required=True, help="how many shifts")
steps = parser.parse_args().steps

dist.init_process_group("gloo")
rank, n = dist.get_rank(), dist.get_world_size()
block = torch.full((4,), float(rank))
for _ in range(steps):
    arrived = torch.empty(4)
    for work in dist.batch_isend_irecv([dist.P2POp(dist.isend, block, (rank + 1) % n),
                                        dist.P2POp(dist.irecv, arrived, (rank - 1) % n)]):
        work.wait()
    block = arrived
print(f"rank {rank} after {steps} steps holds the block of rank {int(block[0].item())}")
dist.destroy_process_group()
