"""Leaving a job: destroy_process_group() frees the group only if nothing else holds it.

    torchrun --standalone --nproc-per-node=2 labs/scripts/leave_after_ddp.py [--import-first]

Each rank trains one step with DistributedDataParallel, posts one last all_reduce without
waiting for it, calls destroy_process_group() and prints how many of the group's gloo worker
threads still run. Rank 1 joins that all_reduce late, once rank 0 has begun to exit (or after 2 s), so that
rank 0's gloo thread finishes it while rank 0 shuts down, every run (notebook 11, section 5).

DDP's constructor touches torch._dynamo (torch._dynamo.utils.get_optimize_ddp_mode()), and the
first import of torch._dynamo imports torch.distributed.nn.functional (through
torch.distributed.fsdp and torch.distributed._shard; labs/scripts/leave_after_dynamo.py shows it
without DDP). Its functions take `group=group.WORLD` as a default argument. Defaults are
evaluated once, at import: imported after init_process_group, they hold the group.
destroy_process_group() then frees nothing, and gloo's threads are torn down at interpreter
shutdown, where a gloo thread that releases a tensor cannot take the GIL and the process aborts
(CPython 3.13 and earlier end such a thread with pthread_exit; 3.14 hangs it instead,
python/cpython#87135). --import-first imports torch.distributed.nn before joining.
"""
import atexit
import os
import sys
import tempfile
import time

MARKER = os.path.join(tempfile.gettempdir(), f"p2p-leave-{os.environ.get('MASTER_PORT')}")


def exiting_slowly():
    """Rank 0's last exit handler: say "exiting", then hold the GIL for a second, as a busy
    handler might. A gloo thread that must release a tensor meanwhile waits for the GIL,
    and gets it only once the interpreter is shutting down: this makes the rare timing
    nearly certain. If the group is gone already, destroy_process_group() finished the last
    all_reduce, so rank 1 has joined it: nobody waits for the word (and no file is left)."""
    if group_threads() == 0:
        return
    sys.setswitchinterval(30)          # do not hand the GIL to another thread, from now on
    open(MARKER, "w").close()
    until = time.monotonic() + 1.0
    while time.monotonic() < until:
        pass


# Registered before any other exit handler, so it runs last.
if os.environ.get("RANK") == "0":
    if os.path.exists(MARKER):         # left by an earlier run that was stopped
        os.remove(MARKER)
    atexit.register(exiting_slowly)

if "--import-first" in sys.argv:
    import torch.distributed.nn  # noqa: F401  (before joining: its defaults are None)
import datetime  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

# the group's gloo worker threads (pt_gloo_runloop) in this process, read from /proc
from labs.harness.commands.threads import gloo_group_threads as group_threads  # noqa: E402


KEPT = []


def main():
    rank = int(os.environ["RANK"])
    dist.init_process_group("gloo", init_method="env://",
                            timeout=datetime.timedelta(seconds=30))
    try:
        model = DistributedDataParallel(torch.nn.Linear(4, 4))   # imports torch._dynamo
        model(torch.ones(2, 4)).sum().backward()
        del model
        if rank == 1:                   # join the last all_reduce once rank 0 is exiting
            deadline = time.monotonic() + 2.0
            while not os.path.exists(MARKER) and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(0.05)
            # Rank 1 keeps its tensor to the end: gloo's thread then never drops the last
            # reference to a tensor that Python held, and only rank 0 can abort.
            KEPT.append(torch.ones(1000))
            dist.all_reduce(KEPT[-1])
        else:                           # post it, do not wait, drop the tensor
            dist.all_reduce(torch.ones(1000), async_op=True)
    finally:
        dist.destroy_process_group()
    if os.path.exists(MARKER) and rank == 1:
        os.remove(MARKER)
    print(f"rank {rank}: after destroy_process_group(), the group's gloo worker threads still "
          f"running: {group_threads()}\n", end="", flush=True)


if __name__ == "__main__":
    main()
