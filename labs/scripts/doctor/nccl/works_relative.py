"""The reads of a batch's list of Works that are right on a one-element list too (NCCL
returns one Work for the whole batch, gloo one per op): an index relative to len() of the
list, the last Work, a slice, a reversed loop, a star-unpacking that needs one element, and
a len() compared with what holds at 1 and at n alike. A clean bill, at any world size.
The same reads, wrong on NCCL: works_unpacked.py.

    python -m labs.doctor --nproc-per-node 2 labs/scripts/doctor/nccl/works_relative.py
"""
import torch
import torch.distributed as dist

dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
right, left = (rank + 1) % world, (rank - 1) % world
mine, theirs = torch.full((4,), float(rank)), torch.empty(4)


def exchange():
    return dist.batch_isend_irecv([dist.P2POp(dist.isend, mine, right),
                                   dist.P2POp(dist.irecv, theirs, left)])


reqs = exchange()
for i in range(len(reqs)):                       # relative to len(): 1 or 2 Works, all waited
    reqs[i].wait()
reqs = exchange()
for q in reqs[::-1]:
    q.wait()
reqs = exchange()
*others, last = reqs                             # needs one element: right on both
for q in reqs[:-1]:
    q.wait()
reqs[-1].wait()
reqs = exchange()
assert len(reqs) >= 1
n = len(reqs)
while n:
    n -= 1
    reqs[n].wait()
print(f"rank {rank} got {theirs[0].item():.0f}")
dist.destroy_process_group()
