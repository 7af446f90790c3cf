"""A hang the doctor cannot call stuck (two ranks): rank 1 never communicates, it sleeps.

    torchrun --nproc-per-node 2 sleeper.py

Rank 0 waits for a message rank 1 never sends; rank 1 is busy (a sleep stands for a long
computation), not waiting in a call, so only the deadline stops the job.
"""
import time

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
if dist.get_rank() == 0:
    dist.recv(torch.empty(2), src=1)
else:
    time.sleep(600)
dist.destroy_process_group()
