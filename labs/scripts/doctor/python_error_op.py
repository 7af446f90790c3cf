"""A P2POp built with an op that is not isend or irecv (two ranks): torch raises ValueError
in its own Python ("Invalid ``op``", P2POp's check) before any backend is involved, so NCCL
raises the same. Rank 1's batch then waits for a peer that is gone: a consequence, not a
second problem. Run with `--fixed` for the twin (dist.isend): a clean bill.

    python -m labs.doctor --nproc-per-node 2 labs/scripts/doctor/python_error_op.py
"""
import sys

import torch
import torch.distributed as dist

FIXED = "--fixed" in sys.argv


def exchange(rank: int) -> torch.Tensor:
    peer = 1 - rank
    mine, theirs = torch.full((4,), float(rank)), torch.empty(4)
    send = dist.isend if FIXED or rank == 1 else dist.send     # the bug: the blocking send
    for work in dist.batch_isend_irecv([dist.P2POp(send, mine, peer),
                                        dist.P2POp(dist.irecv, theirs, peer)]):
        work.wait()
    return theirs


dist.init_process_group("gloo")
print(f"rank {dist.get_rank()} got {exchange(dist.get_rank()).tolist()}")
dist.destroy_process_group()
