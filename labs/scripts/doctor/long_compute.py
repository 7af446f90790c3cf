"""A correct exchange, then a computation longer than the doctor's deadline (--seconds S):
the doctor stops the job at its deadline and says after how many calls; what ran is clean,
the rest was not checked (exit 2). With --seconds 0 the job ends: exit 0.

    python -m labs.doctor --deadline 20 --nproc-per-node 2 labs/scripts/doctor/long_compute.py
"""
import argparse
import time

import torch
import torch.distributed as dist

parser = argparse.ArgumentParser(description="an exchange, then a long computation")
parser.add_argument("--seconds", type=float, default=600.0, help="the computation's length")
seconds = parser.parse_args().seconds

dist.init_process_group("gloo")
rank, n = dist.get_rank(), dist.get_world_size()
mine, theirs = torch.full((4,), float(rank)), torch.empty(4)
for work in dist.batch_isend_irecv([dist.P2POp(dist.isend, mine, (rank + 1) % n),
                                    dist.P2POp(dist.irecv, theirs, (rank - 1) % n)]):
    work.wait()
time.sleep(seconds)              # stands for a long computation: no communication
print(f"rank {rank} done")
dist.destroy_process_group()
