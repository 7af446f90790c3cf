"""The fixed twin of eager_ring_isend_first.py: with device_id, each rank's send and receive
in one batch_isend_irecv, one fused call on the group's communicator.

    python -m labs.doctor --nproc-per-node 3 labs/scripts/doctor/nccl/eager_ring_batched.py
"""
import os

import torch
import torch.distributed as dist

local_rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local_rank)
device = torch.device("cuda", local_rank)
dist.init_process_group("nccl", device_id=device)
rank, world = dist.get_rank(), dist.get_world_size()
right, left = (rank + 1) % world, (rank - 1) % world
mine = torch.full((1 << 16,), float(rank), device=device)
theirs = torch.empty_like(mine)

for step in range(2):
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, mine, right),
                                    dist.P2POp(dist.irecv, theirs, left)])
    for work in works:
        work.wait()
    mine, theirs = theirs, torch.empty_like(theirs)
torch.cuda.synchronize()
print(f"rank {rank} got {mine[0].item():.0f}")
dist.destroy_process_group()
