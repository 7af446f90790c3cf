"""NCCL hazard, GPU style: the isend-then-recv ring with device_id in init_process_group
(NCCL's eager init). No per-pair communicator is created later, so no creation cycle; but
every point-to-point op of a rank then runs on the group's one communicator, in program
order: each rank's recv waits behind its own isend, whose receive waits behind the next
rank's isend. It can hang for large messages. Fixed: eager_ring_batched.py.

    python -m labs.doctor --nproc-per-node 3 labs/scripts/doctor/nccl/eager_ring_isend_first.py
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

req = dist.isend(mine, right)
dist.recv(theirs, left)
req.wait()
torch.cuda.synchronize()
print(f"rank {rank} got {theirs[0].item():.0f}")
dist.destroy_process_group()
