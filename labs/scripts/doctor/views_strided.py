"""Strided views: each rank receives row 1 of a 3-row matrix while it reads rows 0 and 2
through one strided view (`grid[::2]`). That view spans row 1's bytes but touches none of
them: correct on gloo and on NCCL."""
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
right, left = (rank + 1) % world, (rank - 1) % world
grid = torch.full((3, 4), float(rank))
outgoing = torch.full((4,), float(rank))
works = dist.batch_isend_irecv([dist.P2POp(dist.isend, outgoing, right),
                                dist.P2POp(dist.irecv, grid[1], left)])
outer = grid[::2].sum()                  # rows 0 and 2: not the row being received
for work in works:
    work.wait()
assert grid[1].tolist() == [float(left)] * 4 and outer.item() == 8.0 * rank
print(f"rank {rank} got row {grid[1].tolist()}")
dist.destroy_process_group()
