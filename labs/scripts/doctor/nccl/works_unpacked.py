"""NCCL hazard: a batch's list of Works read as if it held one Work per op. gloo returns one
Work per op; NCCL returns ONE Work for the whole batch, so each read below raises or changes
what the script does there: unpacked into names, indexed at 1, zipped with the ops, its len()
compared with the number of ops. Fixed: works_loop.py; the reads that are right on a
one-element list too: works_relative.py.

    python -m labs.doctor --nproc-per-node 2 labs/scripts/doctor/nccl/works_unpacked.py
"""
import torch
import torch.distributed as dist

dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
right, left = (rank + 1) % world, (rank - 1) % world
mine, theirs = torch.full((4,), float(rank)), torch.empty(4)


def exchange():
    ops = [dist.P2POp(dist.isend, mine, right), dist.P2POp(dist.irecv, theirs, left)]
    return ops, dist.batch_isend_irecv(ops)


def main():
    _, (send_req, recv_req) = exchange()             # unpacked: one Work on NCCL
    send_req.wait()
    recv_req.wait()
    _, works = exchange()
    works[0].wait()
    works[1].wait()                                  # indexed at 1: IndexError on NCCL
    ops, works = exchange()
    for op, work in zip(ops, works):                 # zip stops after the one Work on NCCL
        work.wait()
    ops, works = exchange()
    if len(works) == len(ops):                       # False on NCCL: nothing is waited there
        for work in works:
            work.wait()
    print(f"rank {rank} got {theirs[0].item():.0f}")


main()
dist.destroy_process_group()
