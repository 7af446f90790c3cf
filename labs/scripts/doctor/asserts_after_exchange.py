"""A ring shift that is right, then the script's own check: with --wrong-check the check is
wrong, and the script raises after a clean exchange (the doctor: exit 2, the error and its
line, and the exchange called clean). Without it: exit 0.

    python -m labs.doctor --nproc-per-node 3 labs/scripts/doctor/asserts_after_exchange.py --wrong-check
"""
import sys

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, n = dist.get_rank(), dist.get_world_size()
mine, theirs = torch.full((4,), float(rank)), torch.empty(4)
works = dist.batch_isend_irecv([dist.P2POp(dist.isend, mine, (rank + 1) % n),
                                dist.P2POp(dist.irecv, theirs, (rank - 1) % n)])
for work in works:
    work.wait()
# the block came from the previous rank; --wrong-check expects the next one's
sender = (rank + 1) % n if "--wrong-check" in sys.argv else (rank - 1) % n
assert theirs[0].item() == sender, f"rank {rank} got {theirs[0].item()}, expected {sender}"
print(f"rank {rank} got the block of rank {sender}")
dist.destroy_process_group()
