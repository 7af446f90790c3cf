"""A two-node torchrun job in which one worker of the node with group rank 1 exits with code 3
after its rank printed its result (tests/harness/test_torchrun.py runs it)."""
import datetime
import os
import sys

import torch
import torch.distributed as dist

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
total = torch.tensor([1.0])
dist.all_reduce(total)
print(f"rank {dist.get_rank()} result: {total.item():g}", flush=True)
dist.destroy_process_group()
if os.environ["GROUP_RANK"] == "1" and os.environ["LOCAL_RANK"] == "0":
    sys.exit(3)
