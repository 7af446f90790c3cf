"""A script that joins a process group and leaves it, and never communicates through it:
the doctor made nothing to check (exit 2, "never communicated through it"), not a clean
bill. With --barrier, the ranks meet once in a barrier: checked and clean (exit 0).

    python -m labs.doctor --nproc-per-node 2 labs/scripts/doctor/joins_and_leaves.py
"""
import sys

import torch.distributed as dist

dist.init_process_group("gloo")
print(f"rank {dist.get_rank()} of {dist.get_world_size()} joined")
if "--barrier" in sys.argv:
    dist.barrier()
dist.destroy_process_group()
