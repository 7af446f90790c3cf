"""NCCL hazard: an ungrouped ring whose first call on every rank is an isend to the right
neighbour. Without device_id, NCCL creates each pair's communicator at the pair's first
ungrouped call, with both ranks: at 3 ranks or more every rank waits for a neighbour that is
busy creating its own, a hang at any size. Fine on gloo. Fixed: ring_batched.py.

    python -m labs.doctor --nproc-per-node 3 labs/scripts/doctor/nccl/ring_isend_first.py
"""
import torch
import torch.distributed as dist

dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
right, left = (rank + 1) % world, (rank - 1) % world
mine, theirs = torch.full((4,), float(rank)), torch.empty(4)

req = dist.isend(mine, right)
dist.recv(theirs, left)
req.wait()
print(f"rank {rank} got {theirs[0].item():.0f}")
dist.destroy_process_group()
