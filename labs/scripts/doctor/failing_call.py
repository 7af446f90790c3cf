"""A communication call that raises (two ranks): rank 0 sends with a negative tag.

    torchrun --nproc-per-node 2 failing_call.py

gloo refuses it at the call ("Tag must be nonnegative"); rank 1, which waits for the
message, is then stopped by torchrun (or sees the connection close). (A non-contiguous tensor
raises at the call too: the doctor names that one `not_contiguous`, noncontiguous_recv.py.)
"""
import datetime

import torch
import torch.distributed as dist

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
if dist.get_rank() == 0:
    dist.send(torch.ones(8), dst=1, tag=-1)
else:
    dist.recv(torch.empty(8), src=0)
dist.destroy_process_group()
