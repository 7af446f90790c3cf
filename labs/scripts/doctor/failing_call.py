"""A communication call that raises (two ranks): rank 0 sends a non-contiguous tensor.

    torchrun --nproc-per-node 2 failing_call.py

gloo refuses it at the call ("input tensor has to be contiguous"); rank 1, which waits for
the message, is then stopped by torchrun (or sees the connection close).
"""
import datetime

import torch
import torch.distributed as dist

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
if dist.get_rank() == 0:
    dist.send(torch.ones(4, 2).t(), dst=1)
else:
    dist.recv(torch.empty(8), src=0)
dist.destroy_process_group()
