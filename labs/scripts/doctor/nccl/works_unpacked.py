"""NCCL hazard: a batch's list of Works read as if it held one Work per op (unpacked into
names, indexed at 1, its len() relied on). gloo returns one Work per op; NCCL returns ONE
Work for the whole batch, so each of these raises or misleads there. Fixed: works_loop.py.

    python -m labs.doctor --nproc-per-node 2 labs/scripts/doctor/nccl/works_unpacked.py
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


send_req, recv_req = exchange()                  # unpacked: one Work on NCCL
send_req.wait()
recv_req.wait()
works = exchange()
works[0].wait()
works[1].wait()                                  # indexed at 1: IndexError on NCCL
works = exchange()
for i in range(len(works)):                      # len() is 1 on NCCL
    works[i].wait()
print(f"rank {rank} got {theirs[0].item():.0f}")
dist.destroy_process_group()
