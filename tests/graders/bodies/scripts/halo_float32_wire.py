"""WRONG (lesson 12 halo script): the halo buffers are torch.empty(1), float32 by default,
and the edges are sent as float32 to match: the float64 cells travel narrowed (the printed
cells stay within the grader's 1e-5 tolerance)."""
import torch
import torch.distributed as dist

CELLS, STEPS = 6, 3

dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
left, right = (rank - 1) % world, (rank + 1) % world
u = torch.arange(CELLS, dtype=torch.float64) ** 2 + 100 * rank    # this rank's cells

for step in range(STEPS):
    from_left, from_right = torch.empty(1), torch.empty(1)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, u[:1].float(), left),
                                    dist.P2POp(dist.isend, u[-1:].float(), right),
                                    dist.P2POp(dist.irecv, from_right, right),
                                    dist.P2POp(dist.irecv, from_left, left)])
    for work in works:
        work.wait()
    padded = torch.cat([from_left.double(), u, from_right.double()])
    u = (padded[:-2] + padded[1:-1] + padded[2:]) / 3

print(f"rank {rank}: " + " ".join(f"{x:.6f}" for x in u.tolist()))
dist.destroy_process_group()
