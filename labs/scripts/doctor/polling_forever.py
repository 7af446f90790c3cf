"""A polling loop on is_completed() in place of wait() (two ranks): on gloo a point-to-point
Work says is_completed() False until wait() is called, so the loop never ends there. On
NCCL (CUDA) is_completed() turns True once the output is usable on the default stream
(torch's Work.is_completed docs), so the same loop ends there. Fixed twin: polling_then_wait.py.

    python -m labs.doctor --nproc-per-node 2 labs/scripts/doctor/polling_forever.py
"""
import time

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
peer = 1 - rank
mine, theirs = torch.full((4,), float(rank)), torch.empty(4)
works = dist.batch_isend_irecv([dist.P2POp(dist.isend, mine, peer),
                                dist.P2POp(dist.irecv, theirs, peer)])
while not all(w.is_completed() for w in works):      # never True on gloo without wait()
    time.sleep(0.01)
print(f"rank {rank} got {theirs[0].item():.0f}")
dist.destroy_process_group()
