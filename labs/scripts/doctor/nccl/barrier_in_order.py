"""The fixed twin of barrier_order.py: the pair finishes its transfer (rank 0's isend waited,
rank 1's receive) before either joins the barrier, so every rank issues its calls in the
same order. Clean on NCCL's model, with or without device_id (pass --device-id).

    python -m labs.doctor --nproc-per-node 2 labs/scripts/doctor/nccl/barrier_in_order.py
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
    dist.isend(weights, 1).wait()
elif rank == 1:
    dist.recv(weights, 0)
dist.barrier()                         # after the transfer, on every rank
torch.cuda.synchronize()
assert weights[0].item() == 7.0
dist.destroy_process_group()
