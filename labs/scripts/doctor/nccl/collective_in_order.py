"""The fixed twin of collective_order.py: every rank, rank 0 included, swaps its block with
its ring neighbours in one batch_isend_irecv, waits it, and THEN joins the all_reduce of the
loss. The
same order of calls on every rank: clean on NCCL's model, with or without device_id
(pass --device-id).

    python -m labs.doctor --nproc-per-node 3 labs/scripts/doctor/nccl/collective_in_order.py
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
rank, world = dist.get_rank(), dist.get_world_size()
right, left = (rank + 1) % world, (rank - 1) % world
mine = torch.full((1 << 12,), float(rank), device=device)
theirs = torch.empty_like(mine)
loss = torch.tensor([float(rank)], device=device)

dist.all_reduce(torch.zeros(1, device=device))   # every rank: the group's first call
ops = [dist.P2POp(dist.isend, mine, right), dist.P2POp(dist.irecv, theirs, left)]
for work in dist.batch_isend_irecv(ops):
    work.wait()
dist.all_reduce(loss)                  # every rank: after its batch
torch.cuda.synchronize()
assert theirs[0].item() == left and loss.item() == sum(range(world))
ops = None                             # a P2POp keeps its group: drop it before leaving
dist.destroy_process_group()
