"""Two ranks both send first: a gloo send waits for its receive, so neither reaches it."""
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
peer = 1 - rank
mine, theirs = torch.full((10,), float(rank)), torch.empty(10)
dist.send(mine, dst=peer)
dist.recv(theirs, src=peer)
dist.destroy_process_group()
