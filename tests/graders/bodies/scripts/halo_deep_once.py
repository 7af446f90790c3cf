"""WRONG (a depth-3 halo exchanged once, then 3 steps computed locally): the lesson's
method is one edge value per neighbour EVERY step; the grader sums the values per peer."""
import torch
import torch.distributed as dist

cells, steps = 6, 3
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
left, right = (rank - 1) % world, (rank + 1) % world
u = torch.arange(cells, dtype=torch.float64) ** 2 + 100 * rank
from_left = torch.empty(steps, dtype=u.dtype)
from_right = torch.empty(steps, dtype=u.dtype)
works = dist.batch_isend_irecv([dist.P2POp(dist.isend, u[:steps].clone(), left),
                                dist.P2POp(dist.isend, u[-steps:].clone(), right),
                                dist.P2POp(dist.irecv, from_right, right),
                                dist.P2POp(dist.irecv, from_left, left)])
for work in works:
    work.wait()
padded = torch.cat([from_left, u, from_right])
for _ in range(steps):
    padded = (padded[:-2] + padded[1:-1] + padded[2:]) / 3
print(f"rank {rank}: " + " ".join(f"{x:.6f}" for x in padded.tolist()))
dist.destroy_process_group()
