"""The fixed twin of streams_side_read.py: the side stream waits for the default stream
(which waited for NCCL) before it reads the received block."""
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
works = dist.batch_isend_irecv([dist.P2POp(dist.isend, block, right),
                                dist.P2POp(dist.irecv, incoming, left)])
for work in works:
    work.wait()
side.wait_stream(torch.cuda.current_stream())   # the fix: `side` now runs after the wait
with torch.cuda.stream(side):
    doubled = incoming * 2
torch.cuda.synchronize()
assert doubled[0].item() == 2.0 * left
print(f"rank {rank} got {incoming[0].item()}")
dist.destroy_process_group()
