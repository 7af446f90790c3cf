"""The strided twin of views_strided.py with two hazards: a column view (`grid[:, 0]`,
strided) touches one element of the row being received, and `grid.zero_()` writes every
byte of the matrix, that row included, before the wait."""
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
right, left = (rank + 1) % world, (rank - 1) % world
grid = torch.full((3, 4), float(rank))
outgoing = torch.full((4,), float(rank))
works = dist.batch_isend_irecv([dist.P2POp(dist.isend, outgoing, right),
                                dist.P2POp(dist.irecv, grid[1], left)])
first = grid[:, 0].sum()                 # HAZARD: column 0 includes grid[1, 0], in flight
for work in works:
    work.wait()
works = dist.batch_isend_irecv([dist.P2POp(dist.isend, outgoing, right),
                                dist.P2POp(dist.irecv, grid[2], left)])
grid.zero_()                             # HAZARD: writes the whole matrix, row 2 included
for work in works:
    work.wait()
print(f"rank {rank}: {first.item()}")
dist.destroy_process_group()
