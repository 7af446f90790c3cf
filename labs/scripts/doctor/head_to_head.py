"""Two ranks both send first: a gloo send waits for its receive, so neither reaches it.

    torchrun --nproc-per-node 2 head_to_head.py [TIMEOUT_S]

With TIMEOUT_S (the process-group timeout), gloo's own timeout ends the hang: both sends
raise "Timed out waiting ... for send operation to complete".
"""
import datetime
import sys

import torch
import torch.distributed as dist

timeout = float(sys.argv[1]) if len(sys.argv) > 1 else 600.0
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=timeout))
rank = dist.get_rank()
peer = 1 - rank
mine, theirs = torch.full((10,), float(rank)), torch.empty(10)
dist.send(mine, dst=peer)
dist.recv(theirs, src=peer)
dist.destroy_process_group()
