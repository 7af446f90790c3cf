"""The fixed twin of streams_wait_on_side.py: the wait is issued inside the side stream and
the block is read there too; the default stream reads it only after waiting for an event
recorded on the side stream."""
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
        work.wait()
    doubled = incoming * 2               # on `side`, after the wait issued on `side`
    ready = torch.cuda.Event()
    ready.record()
torch.cuda.current_stream().wait_event(ready)    # the default stream after `side`
total = incoming.sum() + doubled.sum()
torch.cuda.synchronize()
assert total.item() == 24.0 * left
print(f"rank {rank} got {incoming[0].item()}")
dist.destroy_process_group()
