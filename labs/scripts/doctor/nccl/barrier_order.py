"""NCCL hazard: a barrier between a pair's isend and its receive. Rank 0 posts an isend to
rank 1, then joins a barrier, then waits; rank 1 joins the barrier first, then receives.
Fine on gloo: rank 0's posted isend does not hold back its barrier. On NCCL a barrier blocks
the CPU until it completes, and each rank's calls run in the order it issued them: rank 0's
barrier is queued behind its isend, which waits for rank 1's receive, which rank 1 posts only
after the barrier. Without device_id rank 0 even waits at the isend itself, creating the
pair's communicator with a rank 1 that sits in the barrier. Other ranks only join the
barrier. With or without device_id (pass --device-id). Fixed: barrier_in_order.py.

    python -m labs.doctor --nproc-per-node 2 labs/scripts/doctor/nccl/barrier_order.py
"""
import os
import sys

import torch
import torch.distributed as dist

local_rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local_rank)
device = torch.device("cuda", local_rank)
if "--device-id" in sys.argv:
    dist.init_process_group("nccl", device_id=device)
else:
    dist.init_process_group("nccl")
rank = dist.get_rank()
weights = torch.full((1 << 12,), 7.0, device=device)

dist.barrier()                         # every rank: the group's first call
if rank == 0:
    work = dist.isend(weights, 1)
    dist.barrier()                     # "everyone has posted": before the isend completes
    work.wait()
else:
    dist.barrier()
    if rank == 1:
        dist.recv(weights, 0)
torch.cuda.synchronize()
assert weights[0].item() == 7.0
dist.destroy_process_group()
