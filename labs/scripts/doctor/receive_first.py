"""Every rank receives from its right neighbour before it sends to its left one: each waits
for a send that the next rank never reaches. No buffer can break this cycle, on any backend.

    torchrun --nproc-per-node 3 receive_first.py
"""
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
mine, theirs = torch.full((10,), float(rank)), torch.empty(10)
dist.recv(theirs, src=(rank + 1) % world)
dist.send(mine, dst=(rank - 1) % world)
dist.destroy_process_group()
