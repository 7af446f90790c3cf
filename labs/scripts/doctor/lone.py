"""Ops that match nothing (three ranks): it hangs, and the doctor says why.

    torchrun --nproc-per-node 3 lone.py

Rank 0 sends to rank 2 with tag 0, but rank 2 expects tag 1 (a tag mismatch); rank 1
waits for a message from rank 0 that rank 0 never sends (an unmatched receive).
"""
import datetime

import torch
import torch.distributed as dist

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
rank = dist.get_rank()
if rank == 0:
    dist.isend(torch.ones(4), dst=2, tag=0).wait()
elif rank == 1:
    dist.irecv(torch.empty(4), src=0).wait()
else:
    dist.recv(torch.empty(4), src=0, tag=1)
dist.destroy_process_group()
