"""A send to the rank itself with the blocking API (two ranks): torch raises ValueError in its
own Python ("Invalid destination rank") before any backend is involved, so NCCL raises the
same. Rank 1, waiting in its receive, then sees rank 0 gone: a consequence, not a second
problem. Run with `--fixed` for the twin (rank 0 sends to rank 1): a clean bill.

    python -m labs.doctor --nproc-per-node 2 labs/scripts/doctor/python_error_self.py
"""
import sys

import torch
import torch.distributed as dist

FIXED = "--fixed" in sys.argv

dist.init_process_group("gloo")
rank = dist.get_rank()
x = torch.arange(4.0)
if rank == 0:
    dist.send(x, dst=1 if FIXED else rank)            # the bug: dst=rank, not the peer
else:
    dist.recv(x, src=0)
print(f"rank {rank} has {x.tolist()}")
dist.destroy_process_group()
