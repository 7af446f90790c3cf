"""WRONG: no communication at all: every rank rebuilds its neighbours' starting cells and
smooths the whole field itself (the doctor is clean, the numbers right: nothing was
exchanged)."""
import torch
import torch.distributed as dist

CELLS, STEPS = 6, 3

dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
field = torch.cat([torch.arange(CELLS, dtype=torch.float64) ** 2 + 100 * r
                   for r in range(world)])
for step in range(STEPS):
    field = (field.roll(1) + field + field.roll(-1)) / 3
u = field[rank * CELLS:(rank + 1) * CELLS]

print(f"rank {rank}: " + " ".join(f"{x:.6f}" for x in u.tolist()))
dist.destroy_process_group()
