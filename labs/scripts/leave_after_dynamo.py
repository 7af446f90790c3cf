"""Leaving a job: any import of torch._dynamo after joining pins the group, no DDP needed.

    torchrun --standalone --nproc-per-node=2 labs/scripts/leave_after_dynamo.py [--import-first]

Each rank joins, sums one tensor with all_reduce, imports torch._dynamo (as DDP's constructor,
torch.compile and many libraries do), calls destroy_process_group() and prints how many of
the group's gloo worker threads (pt_gloo_runloop) still run: 0 means the group is gone.

The first import of torch._dynamo imports torch.distributed.fsdp, whose imports reach
torch.distributed._shard.sharded_tensor.reshard, which imports torch.distributed.nn.functional.
Its functions take `group=group.WORLD` as a default argument, evaluated once, at import:
imported after init_process_group, they hold the world group, and destroy_process_group()
frees nothing (notebook 11, section 5). --import-first imports torch.distributed.nn before
joining: its defaults are then None (the default group, looked up at each call).
"""
import datetime
import os
import sys

if "--import-first" in sys.argv:
    import torch.distributed.nn  # noqa: F401  (before joining: its defaults are None)
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

# the group's gloo worker threads (pt_gloo_runloop) in this process, read from /proc
from labs.harness.commands.threads import gloo_group_threads as group_threads  # noqa: E402


def import_dynamo():
    """What DDP's constructor, torch.compile and many libraries do first: import torch._dynamo."""
    import torch._dynamo  # noqa: F401


def main():
    rank = int(os.environ["RANK"])
    dist.init_process_group("gloo", init_method="env://",
                            timeout=datetime.timedelta(seconds=30))
    try:
        total = torch.ones(4)
        dist.all_reduce(total)
        import_dynamo()                 # after joining: no DDP, no compile, just the import
    finally:
        dist.destroy_process_group()
    print(f"rank {rank}: torch._dynamo imported after joining; after destroy_process_group(), "
          f"the group's gloo worker threads still running: {group_threads()}\n",
          end="", flush=True)


if __name__ == "__main__":
    main()
