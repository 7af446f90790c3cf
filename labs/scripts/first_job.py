"""A complete distributed job, start to end: what every torch.distributed script does.

    torchrun --standalone --nproc-per-node=4 labs/scripts/first_job.py

torchrun starts one process per rank and tells each who it is through environment
variables: RANK (0 .. WORLD_SIZE-1), WORLD_SIZE, LOCAL_RANK (its index on this machine),
MASTER_ADDR and MASTER_PORT (where the job's rendezvous store listens). The script reads
nothing else, so the same file runs on one machine or on several (notebook 11).
Needs no file from this course: copy it anywhere torch is installed.
"""
import datetime
import os

import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record

# Long enough for the slowest honest step of this job, short enough that a hang fails in
# a minute instead of the default 30 (gloo) or 10 (NCCL) minutes.
TIMEOUT = datetime.timedelta(seconds=60)


def work(rank, world_size):
    """The job itself: one collective and one point-to-point ring shift."""
    total = torch.tensor([float(rank + 1)])
    dist.all_reduce(total)                        # every rank: 1 + 2 + ... + world_size
    mine, theirs = torch.tensor([10.0 * rank]), torch.tensor([10.0 * rank])
    if world_size > 1:                            # gloo cannot send to its own rank
        ops = [dist.P2POp(dist.isend, mine, (rank + 1) % world_size),
               dist.P2POp(dist.irecv, theirs, (rank - 1) % world_size)]
        for request in dist.batch_isend_irecv(ops):
            request.wait()
    return total.item(), theirs.item()


@record     # if this rank fails, torchrun's failure report shows its traceback
def main():
    rank = int(os.environ["RANK"])
    world_size = int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ["LOCAL_RANK"])
    # env:// reads MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE. On GPUs: backend "nccl",
    # and torch.cuda.set_device(local_rank) first.
    dist.init_process_group("gloo", init_method="env://", timeout=TIMEOUT)
    try:
        total, received = work(rank, world_size)
        # One write per line: torchrun runs python -u (unbuffered), where print() writes the
        # text and its newline separately, and ranks sharing a terminal mix lines mid-line.
        print(f"rank {rank} of {world_size} (local rank {local_rank}): all_reduce sum "
              f"{total:g}, received {received:g} from rank {(rank - 1) % world_size}\n",
              end="", flush=True)
    finally:
        dist.destroy_process_group()    # also after an error: leave the group cleanly


if __name__ == "__main__":
    main()
