"""A receive into a non-contiguous view (a column of a matrix): gloo refuses it."""
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
if rank == 0:
    dist.send(torch.arange(4.0), 1)
elif rank == 1:
    grid = torch.zeros(4, 4)
    dist.recv(grid[:, 1], 0)                  # HAZARD: a column is not contiguous
    print(f"rank 1 got {grid[:, 1].tolist()}")
dist.destroy_process_group()
