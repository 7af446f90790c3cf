"""Two ranks both send first: a gloo send waits for its receive, so neither reaches it.

    torchrun --nproc-per-node 2 head_to_head.py [TIMEOUT_S]

With TIMEOUT_S, gloo's own timeout ends the hang: both sends raise "Timed out waiting ...
for send operation to complete". The exchange runs in a group of its own with that timeout:
a short timeout given to init_process_group would also bound the join, which a rank that
starts a few seconds late (a loaded machine) outlasts.
"""
import datetime
import sys

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
group = None
if len(sys.argv) > 1:
    group = dist.new_group(timeout=datetime.timedelta(seconds=float(sys.argv[1])))
rank = dist.get_rank()
peer = 1 - rank
mine, theirs = torch.full((10,), float(rank)), torch.empty(10)
dist.send(mine, dst=peer, group=group)
dist.recv(theirs, src=peer, group=group)
dist.destroy_process_group()
