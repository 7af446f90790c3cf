"""GPU code that receives the next block on the default stream and reads it on a side
stream (to overlap with other work) without ordering the side stream after the wait: on
NCCL, wait() only makes the default stream wait for the transfer. A race on a GPU; fine on
the CPU. Its fixed twin: streams_side_read_ok.py."""
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
    work.wait()                          # the default stream waits for NCCL; `side` does not
with torch.cuda.stream(side):
    doubled = incoming * 2               # HAZARD: on `side`, not ordered after the wait
torch.cuda.synchronize()
assert doubled[0].item() == 2.0 * left
print(f"rank {rank} got {incoming[0].item()}")
dist.destroy_process_group()
