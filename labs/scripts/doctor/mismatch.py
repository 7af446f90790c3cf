"""Matched pairs whose buffers disagree (two ranks): gloo compares byte counts only.

    torchrun --nproc-per-node 2 mismatch.py [--abort]

1. 10 floats into a 12-float buffer: a silent prefix.
2. 4 float32 into 2 float64 (the same 16 bytes): silently reinterpreted.
3. --abort: 5 floats into a 4-float buffer: gloo aborts the receiver (SIGABRT).
"""
import sys

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
if dist.get_rank() == 0:
    dist.send(torch.ones(10), dst=1)
    dist.send(torch.ones(4), dst=1)
    if "--abort" in sys.argv:
        dist.send(torch.ones(5), dst=1)
else:
    big = torch.zeros(12)
    dist.recv(big, src=0)
    other = torch.zeros(2, dtype=torch.float64)
    dist.recv(other, src=0)
    if "--abort" in sys.argv:
        dist.recv(torch.zeros(4), src=0)
dist.destroy_process_group()
