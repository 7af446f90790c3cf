"""WRONG: the halo through dist.all_gather of every rank's edges (the doctor is clean: a
collective is no problem; the exercise is point to point)."""
import torch
import torch.distributed as dist

CELLS, STEPS = 6, 3

dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
left, right = (rank - 1) % world, (rank + 1) % world
u = torch.arange(CELLS, dtype=torch.float64) ** 2 + 100 * rank    # this rank's cells

for step in range(STEPS):
    from_left, from_right = torch.empty(1, dtype=u.dtype), torch.empty(1, dtype=u.dtype)
    edges = torch.stack([u[0], u[-1]])
    every = [torch.empty_like(edges) for _ in range(world)]
    dist.all_gather(every, edges)
    from_left.copy_(every[left][1:])
    from_right.copy_(every[right][:1])
    padded = torch.cat([from_left, u, from_right])
    u = (padded[:-2] + padded[1:-1] + padded[2:]) / 3     # new memory: nothing in flight

print(f"rank {rank}: " + " ".join(f"{x:.6f}" for x in u.tolist()))
dist.destroy_process_group()
