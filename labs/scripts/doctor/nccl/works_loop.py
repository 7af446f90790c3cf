"""The fixed twin of works_unpacked.py: every Work the list holds is waited in a loop, which
is right on gloo (one Work per op) and on NCCL (one Work per batch).

    python -m labs.doctor --nproc-per-node 2 labs/scripts/doctor/nccl/works_loop.py
"""
import torch
import torch.distributed as dist

dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
right, left = (rank + 1) % world, (rank - 1) % world
mine, theirs = torch.full((4,), float(rank)), torch.empty(4)

for step in range(3):
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, mine, right),
                                    dist.P2POp(dist.irecv, theirs, left)])
    for work in works:
        work.wait()
print(f"rank {rank} got {theirs[0].item():.0f}")
dist.destroy_process_group()
