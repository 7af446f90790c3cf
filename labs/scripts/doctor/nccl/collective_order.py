"""NCCL hazard: ranks that order a collective and a batch differently. Every rank swaps a
block with its ring neighbours in one batch_isend_irecv and joins an all_reduce of the loss;
rank 0 (the one that logs) posts its batch BEFORE the all_reduce and waits it after, the
others reduce first. Fine on gloo: rank 0's posted batch does not hold back its all_reduce.
On NCCL each rank's calls run on its GPU in the order it issued them: rank 0's batch waits
for its neighbours' batches, queued behind their all_reduce, which waits for rank 0's,
queued behind its batch. A hang at any message size, with or without device_id (pass
--device-id). Fixed: collective_in_order.py.

    python -m labs.doctor --nproc-per-node 3 labs/scripts/doctor/nccl/collective_order.py
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


def post_exchange():
    ops = [dist.P2POp(dist.isend, mine, right), dist.P2POp(dist.irecv, theirs, left)]
    return dist.batch_isend_irecv(ops)


if rank == 0:
    works = post_exchange()            # the logging rank posts its batch first ...
    dist.all_reduce(loss)
else:
    dist.all_reduce(loss)              # ... the others reduce first
    works = post_exchange()
for work in works:
    work.wait()
torch.cuda.synchronize()
assert theirs[0].item() == left and loss.item() == sum(range(world))
dist.destroy_process_group()
