"""Ring attention written with a helper: each step posts the next K block's rotation, attends
to the block it holds, and waits. The read of a block happens inside `attend`, the mistake at
the line that calls it: the doctor names both, innermost first, as a traceback does.

    python -m labs.doctor --nproc-per-node 3 helper_attend.py          # clean
    python -m labs.doctor --nproc-per-node 3 helper_attend.py --bug    # reads before its wait

--bug: the step attends to `next_k`, the block still being received, before waiting for it.
"""
import sys

import torch
import torch.distributed as dist


def attend(q, k, v):
    scores = q @ k.transpose(0, 1)
    return torch.softmax(scores, dim=-1) @ v


def rotate(k, rank, n):
    """Post the K block's move to the next rank; returns the block arriving and the Works."""
    next_k = torch.empty_like(k)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, k, (rank + 1) % n),
                                    dist.P2POp(dist.irecv, next_k, (rank - 1) % n)])
    return next_k, works


def main():
    dist.init_process_group("gloo")
    rank, n = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(rank)
    q, k, v = torch.randn(4, 8), torch.randn(4, 8), torch.randn(4, 8)
    out = torch.zeros(4, 8)
    for _ in range(n - 1):
        next_k, works = rotate(k, rank, n)
        if "--bug" in sys.argv:
            out += attend(q, next_k, v)            # next_k is still being received
        else:
            out += attend(q, k, v)
        for work in works:
            work.wait()
        k = next_k
    out += attend(q, k, v)
    print(f"rank {rank}: attended to {n} blocks")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
