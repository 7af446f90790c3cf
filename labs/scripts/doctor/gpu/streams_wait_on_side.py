"""The wait issued inside a side stream, the block read on the default stream afterwards:
wait() ordered only the side stream after the transfer. A race on a GPU. Its fixed twin:
streams_wait_on_side_ok.py."""
import os

import torch
import torch.distributed as dist

dist.init_process_group("nccl")
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
rank, world = dist.get_rank(), dist.get_world_size()
right, left = (rank + 1) % world, (rank - 1) % world
side = torch.cuda.Stream()
block = torch.full((8,), float(rank), device="cuda")
incoming = torch.empty(8, device="cuda")
with torch.cuda.stream(side):
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, block, right),
                                    dist.P2POp(dist.irecv, incoming, left)])
    for work in works:
        work.wait()                      # orders `side` after the transfer, nothing else
total = incoming.sum()                   # HAZARD: the default stream never waited for `side`
torch.cuda.synchronize()
print(f"rank {rank} got {total.item() / 8}")
dist.destroy_process_group()
