"""The fixed twin of ring_isend_first.py: each rank's send and receive in one
batch_isend_irecv (the group's communicator, one fused call). The ops list stays at module
level, as PyTorch's own docstring writes it: a correct script, exit 0.

    python -m labs.doctor --nproc-per-node 3 labs/scripts/doctor/nccl/ring_batched.py
"""
import torch
import torch.distributed as dist

dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
right, left = (rank + 1) % world, (rank - 1) % world
mine, theirs = torch.full((4,), float(rank)), torch.empty(4)

ops = [dist.P2POp(dist.isend, mine, right), dist.P2POp(dist.irecv, theirs, left)]
for work in dist.batch_isend_irecv(ops):
    work.wait()
print(f"rank {rank} got {theirs[0].item():.0f}")
dist.destroy_process_group()
