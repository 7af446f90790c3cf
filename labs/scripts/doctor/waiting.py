"""Requests and buffers between post and wait (two ranks): it completes, wrongly.

    torchrun --nproc-per-node 2 waiting.py

1. A batch whose requests are waited in part (only reqs[1]).
2. A send buffer written, and a receive buffer read, before their wait.
3. A send never waited for.
"""
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
peer = 1 - rank
a, b = torch.full((4,), float(rank)), torch.empty(4)
reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, a, peer), dist.P2POp(dist.irecv, b, peer)])
reqs[1].wait()

c, d = torch.full((4,), float(rank)), torch.zeros(4)
reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, c, peer), dist.P2POp(dist.irecv, d, peer)])
c.add_(1)                                  # the send buffer, written in flight
print(f"rank {rank} peeks: {d.sum().item() >= 0}")   # the receive buffer, read in flight
for req in reqs:
    req.wait()

e, f = torch.ones(4), torch.empty(4)
dist.isend(e, dst=peer)                    # never waited
dist.irecv(f, src=peer).wait()
dist.destroy_process_group()
