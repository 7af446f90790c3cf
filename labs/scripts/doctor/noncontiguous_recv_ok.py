"""The fixed twin of noncontiguous_recv.py: receive into a contiguous buffer, then copy it
into the column."""
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
if rank == 0:
    dist.send(torch.arange(4.0), 1)
elif rank == 1:
    grid = torch.zeros(4, 4)
    column = torch.empty(4)
    dist.recv(column, 0)
    grid[:, 1].copy_(column)
    assert grid[:, 1].tolist() == [0.0, 1.0, 2.0, 3.0]
    print(f"rank 1 got {grid[:, 1].tolist()}")
dist.destroy_process_group()
