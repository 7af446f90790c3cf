"""A two-node job in which one worker of the second node fails after the work is done: it
exits with code 3 once its rank printed its result. Lesson 11 (section 6) and
tests/harness/test_torchrun.py run it as two torchrun "nodes" on one machine.

    run_two_nodes("one_node_fails.py")        # labs/harness/commands/torchrun.py
"""
import datetime
import os
import sys

import torch
import torch.distributed as dist

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
total = torch.tensor([1.0])
dist.all_reduce(total)
# The newline inside the text: one write per line. torchrun runs python -u (unbuffered),
# where print() writes the text and its newline separately: two ranks' lines can mix.
print(f"rank {dist.get_rank()} result: {total.item():g}\n", end="", flush=True)
dist.destroy_process_group()
if os.environ["GROUP_RANK"] == "1" and os.environ["LOCAL_RANK"] == "0":
    sys.exit(3)
