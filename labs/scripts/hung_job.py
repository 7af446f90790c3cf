"""A job that hangs, on purpose: find out why with the tools of notebook 11.

    torchrun --standalone --nproc-per-node=4 labs/scripts/hung_job.py --timeout 4

Ranks pair up, (0, 1), (2, 3), ..., and swap shards of different sizes. To avoid two
blocking sends facing each other, the rank with the bigger shard sends first and its
partner receives first. The bug: on a tie (ranks 2 and 3 hold 4 values each) both ranks
send first, and a gloo send waits until its receiver has posted the matching receive.
Ranks 0 and 1 swap, work a second (--compute: the senders time out first), then wait.

--check barrier      end the step with dist.barrier() (as most jobs do)
--check monitored    end it with dist.monitored_barrier(), which names the missing ranks
--fr-dump DIR        with TORCH_FR_BUFFER_SIZE=N in the environment (the flight recorder),
                     every rank writes its record to DIR/rank<R>.json --fr-dump-after
                     seconds into the step (gloo has no dump on timeout: this is one)
"""
import argparse
import datetime
import os
import threading
import time

import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record

SHARD_SIZES = (3, 5, 4, 4)      # rank r holds SHARD_SIZES[r % 4] values


def say(rank, text):     # one write per line: under torchrun's python -u, print() makes two
    print(f"rank {rank}: {text}\n", end="", flush=True)


def swap_with(peer, mine, their_size):
    """Send `mine` to `peer`, receive its shard. The bigger shard goes first."""
    theirs = torch.empty(their_size)
    if mine.numel() >= their_size:      # the bug: on a tie, BOTH ranks send first
        dist.send(mine, dst=peer)
        dist.recv(theirs, src=peer)
    else:
        dist.recv(theirs, src=peer)
        dist.send(mine, dst=peer)
    return theirs


def dump_flight_recorder_later(directory, rank, after):
    """The flight recorder's record of this rank, written to a file `after` seconds from now,
    from a thread of its own: the main thread may be stuck in a call by then."""
    def dump():
        time.sleep(after)
        trace = torch._C._distributed_c10d._dump_fr_trace_json()   # every entry, as JSON
        with open(os.path.join(directory, f"rank{rank}.json"), "wb") as f:
            f.write(trace)
    threading.Thread(target=dump, daemon=True).start()


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="process-group timeout in seconds")
    parser.add_argument("--check", choices=("barrier", "monitored"), default="barrier")
    parser.add_argument("--check-timeout", type=float, default=10.0,
                        help="monitored_barrier's own timeout in seconds")
    parser.add_argument("--compute", type=float, default=1.0,
                        help="seconds of the step's other work after the swap")
    parser.add_argument("--fr-dump", metavar="DIR",
                        help="write the flight recorder's record to DIR/rank<R>.json")
    parser.add_argument("--fr-dump-after", type=float, default=2.0,
                        help="seconds after the step starts to write it")
    return parser.parse_args()


@record
def main():
    args = parse_args()
    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    assert world_size % 2 == 0, "ranks swap in pairs: use an even number of processes"
    dist.init_process_group("gloo", init_method="env://",
                            timeout=datetime.timedelta(seconds=args.timeout))
    try:
        mine = torch.full((SHARD_SIZES[rank % 4],), float(rank))
        sizes = [torch.zeros(1, dtype=torch.int64) for _ in range(world_size)]
        dist.all_gather(sizes, torch.tensor([mine.numel()]))     # everyone's shard size
        peer = rank ^ 1                                         # 0<->1, 2<->3, ...
        if args.fr_dump:
            dump_flight_recorder_later(args.fr_dump, rank, args.fr_dump_after)
        say(rank, f"swapping {mine.numel()} values with rank {peer}")
        theirs = swap_with(peer, mine, int(sizes[peer]))
        say(rank, f"received {theirs.numel()} values from rank {peer}")
        time.sleep(args.compute)                # stands for the rest of the step
        if args.check == "monitored":
            dist.monitored_barrier(timeout=datetime.timedelta(seconds=args.check_timeout),
                                   wait_all_ranks=True)
        else:
            dist.barrier()
        say(rank, "step done")
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
