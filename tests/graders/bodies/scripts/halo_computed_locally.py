"""WRONG: no communication at all: every rank rebuilds its neighbours' starting cells and
smooths them itself (the doctor is clean, the numbers right: nothing was exchanged)."""
import torch
import torch.distributed as dist

CELLS, STEPS = 6, 3

dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
left, right = (rank - 1) % world, (rank + 1) % world
u = torch.arange(CELLS, dtype=torch.float64) ** 2 + 100 * rank    # this rank's cells

def start(r):
    return torch.arange(CELLS, dtype=torch.float64) ** 2 + 100 * r


field = torch.cat([start(r) for r in range(world)])
for step in range(STEPS):
    field = (field.roll(1) + field + field.roll(-1)) / 3
u = field[rank * CELLS:(rank + 1) * CELLS]
for step in range(0):
    from_left, from_right = torch.empty(1, dtype=u.dtype), torch.empty(1, dtype=u.dtype)
    # One batch: the sends and receives of a step are posted together (no send waits behind
    # a receive on NCCL's stream), and every request is waited before the cells change.
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, u[:1], left),
                                    dist.P2POp(dist.isend, u[-1:], right),
                                    dist.P2POp(dist.irecv, from_right, right),
                                    dist.P2POp(dist.irecv, from_left, left)])
    for work in works:
        work.wait()
    padded = torch.cat([from_left, u, from_right])
    u = (padded[:-2] + padded[1:-1] + padded[2:]) / 3     # new memory: nothing in flight

print(f"rank {rank}: " + " ".join(f"{x:.6f}" for x in u.tolist()))
dist.destroy_process_group()
