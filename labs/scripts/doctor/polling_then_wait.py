"""The fixed twin of polling_forever.py: poll is_completed() while there is other work to do
(here: a few rounds), then wait() every request, which is what completes a point-to-point
request on gloo and orders the stream on NCCL. A clean bill.

    python -m labs.doctor --nproc-per-node 2 labs/scripts/doctor/polling_then_wait.py
"""
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
peer = 1 - rank
mine, theirs = torch.full((4,), float(rank)), torch.empty(4)
works = dist.batch_isend_irecv([dist.P2POp(dist.isend, mine, peer),
                                dist.P2POp(dist.irecv, theirs, peer)])
overlapped = 0
for _ in range(3):                              # compute while the transfer is in flight
    if all(w.is_completed() for w in works):
        break
    overlapped += int(torch.ones(64, 64).sum().item() > 0)
for w in works:
    w.wait()
print(f"rank {rank} got {theirs[0].item():.0f} after {overlapped} rounds of work")
dist.destroy_process_group()
