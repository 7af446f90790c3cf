"""Lesson 11: your own job. What the workers run; notebook 11 runs the rest.

Every lesson so far ran through `launch`, which does for you what a real job must do
itself. Here the scripts in labs/scripts/ do it all, as on a cluster, under torchrun:

    labs/scripts/first_job.py   a complete job: read torchrun's environment, join the group
                                (env://, a timeout chosen on purpose), work, leave
    labs/scripts/hung_job.py    a job that hangs on purpose (two ranks both send first),
                                to find with py-spy, monitored_barrier and the timeouts
    labs/scripts/ring_job.py    the exercise below, run as a script

Exercise (write the body; `make check` grades it by running it under torchrun):
    ring_job(numel, timeout_s)      lesson 05's ring all-reduce as a whole job

Worker functions for the last section (launched from the notebook, like every lesson):
    work_objects      isend and all_reduce(async_op=True) both return a Work; on gloo only
                      the collective's Work reports completion without wait()
    overlap_timing    compute while communicating: lesson 03's point-to-point overlap vs
                      an async all_reduce, each against its serial version, interleaved
"""
from __future__ import annotations

import time

import torch
import torch.distributed as dist

from labs.harness.commands import cli
from labs.harness.ranks.exercises import exercise, todo
from labs.harness.ranks.tracing import span
from labs.waiting import overlapped_step


# -- exercise: a whole job ---------------------------------------------------------------

@exercise
def ring_job(numel=6, timeout_s=30.0):
    """The body of a real torchrun script: a ring all-reduce job, start to end.

    torchrun starts one process per rank and each calls `ring_job` once (see
    labs/scripts/ring_job.py): no process group exists yet, and RANK, WORLD_SIZE,
    LOCAL_RANK, MASTER_ADDR and MASTER_PORT are set in the environment. Do what every job
    does, in this order:

      1. Join: `dist.init_process_group("gloo", init_method="env://",
         timeout=datetime.timedelta(seconds=timeout_s))`. env:// reads the variables above.
      2. Work: rank r builds `torch.arange(numel, dtype=torch.float32) + 10 * r` and sums it
         over all ranks in place with a ring from lesson 05: `labs.ring.ring_all_reduce`
         (or `labs.ring.pass_along_all_reduce` until you have written that one). Point-to-
         point ops only: no `dist.all_reduce`.
      3. Report: print exactly one line, `rank R result: [v0, v1, ...]`
         (`labs.harness.commands.cli.format_result(rank, tensor)` formats it).
      4. Leave: `dist.destroy_process_group()`, also when the work raises (try/finally;
         the exception still propagates, so torchrun reports the failed rank).

    Returns the summed tensor. Any world size >= 1, any numel >= 0 (a negative numel makes
    `torch.arange` raise: the group must still be destroyed).

    Hint: read the rank from `os.environ["RANK"]` or, once joined, `dist.get_rank()`; put
    steps 2 and 3 in the `try:` of a try/finally whose `finally:` holds step 4.
    labs/scripts/first_job.py has the same shape with other work.
    """
    raise todo("notebook 11, 'Exercise: the ring as a job'")


# -- async_op=True collectives -----------------------------------------------------------

def work_objects(rank, world_size, numel=100_000, poll_s=0.3, patience_s=10.0):
    """What a Work from `isend` and one from `all_reduce(async_op=True)` report on gloo.

    Rank 0 isends to rank 1, which receives it with a blocking recv: the data has arrived.
    Rank 0 then polls its Work's is_completed() for `poll_s`, without wait(). Every rank
    then posts an async all_reduce and polls its Work (up to `patience_s`) the same way.
    Returns {what: (is_completed() while polling, is_completed() after wait())}. Needs
    world size >= 2.
    """
    seen = {}
    if rank == 0:
        send = dist.isend(torch.ones(8), dst=1)
        dist.barrier()                              # rank 1's recv has returned
        seen["isend"] = (_completes_within(send, poll_s), _waited(send))
    else:
        if rank == 1:
            dist.recv(torch.empty(8), src=0)
        dist.barrier()
    total = torch.ones(numel)
    reduce = dist.all_reduce(total, async_op=True)
    seen["all_reduce(async_op=True)"] = (_completes_within(reduce, patience_s), _waited(reduce))
    seen["sum correct"] = bool((total == world_size).all())
    return seen


def _completes_within(work, seconds):
    """Poll `work.is_completed()` (never wait()) for up to `seconds`."""
    deadline = time.perf_counter() + seconds
    while not work.is_completed() and time.perf_counter() < deadline:
        time.sleep(0.005)
    return work.is_completed()


def _waited(work):
    work.wait()
    return work.is_completed()


VARIANTS = ("p2p serial", "p2p overlapped", "all_reduce serial", "all_reduce overlapped")


def overlap_timing(rank, world_size, rows=1024, cols=1024, out_cols=256, reps=5):
    """Compute `block @ weight` while `block` travels, two ways, each against its serial twin.

    p2p:        send `block` to the next rank, receive the previous one's (lesson 03's
                `overlapped_step` for the overlapped variant; post, wait, then compute
                for the serial one)
    all_reduce: sum a copy of `block` over the ranks with `dist.all_reduce`, with
                `async_op=True` and the matmul before `wait()`, or blocking then matmul
    At 2 ranks both move the same bytes per rank. Each repetition runs every variant once,
    in a rotated order, each after a barrier; the time of a variant is the slowest rank's.
    Returns {"seconds": {variant: [per repetition]}, "checks": {...}} on every rank.
    """
    torch.manual_seed(rank)
    block, weight = torch.randn(rows, cols), torch.randn(cols, out_cols)
    received, reduced = torch.empty_like(block), torch.empty_like(block)
    expected = block @ weight
    run = {"p2p serial": lambda: _p2p_serial(block, weight, received),
           "p2p overlapped": lambda: overlapped_step(block, weight, received),
           "all_reduce serial": lambda: _all_reduce_step(block, weight, reduced, False),
           "all_reduce overlapped": lambda: _all_reduce_step(block, weight, reduced, True)}
    for name in VARIANTS:                           # warm-up: connect, fault in the pages
        run[name]()
    seconds = {name: [] for name in VARIANTS}
    products_ok = True
    for rep in range(reps):
        order = VARIANTS[rep % len(VARIANTS):] + VARIANTS[:rep % len(VARIANTS)]
        for name in order:
            dist.barrier()
            t0 = time.perf_counter()
            product = run[name]()
            seconds[name].append(time.perf_counter() - t0)
            products_ok &= torch.allclose(product, expected)
    slowest = torch.tensor([seconds[name] for name in VARIANTS], dtype=torch.float64)
    dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
    checks = {"products equal block @ weight": products_ok,
              "received the previous rank's block": _received_ok(received, rank, world_size,
                                                                 rows, cols),
              "all_reduce summed the blocks": _reduced_ok(reduced, rows, cols, world_size)}
    return {"seconds": {name: slowest[i].tolist() for i, name in enumerate(VARIANTS)},
            "checks": checks}


def _p2p_serial(block, weight, recv_buf):
    rank, world_size = dist.get_rank(), dist.get_world_size()
    ops = [dist.P2POp(dist.isend, block, (rank + 1) % world_size),
           dist.P2POp(dist.irecv, recv_buf, (rank - 1) % world_size)]
    for request in dist.batch_isend_irecv(ops):
        request.wait()
    with span("matmul"):
        return block @ weight


def _all_reduce_step(block, weight, out, overlapped):
    out.copy_(block)
    if not overlapped:
        dist.all_reduce(out)
        with span("matmul"):
            return block @ weight
    request = dist.all_reduce(out, async_op=True)    # a Work, as isend returns
    with span("matmul"):
        product = block @ weight                     # runs while gloo's thread reduces
    request.wait()
    return product


def _received_ok(received, rank, world_size, rows, cols):
    torch.manual_seed((rank - 1) % world_size)
    return torch.equal(received, torch.randn(rows, cols))


def _reduced_ok(reduced, rows, cols, world_size):
    total = torch.zeros(rows, cols)
    for r in range(world_size):
        torch.manual_seed(r)
        total += torch.randn(rows, cols)
    return torch.allclose(reduced, total, atol=1e-4)


# -- command line / torchrun -------------------------------------------------------------

def demo(rank, world_size):
    """An async all_reduce of rank + 1 with a matmul before wait(): every rank gets the sum."""
    total = torch.tensor([float(rank + 1)])
    request = dist.all_reduce(total, async_op=True)
    torch.ones(64, 64) @ torch.ones(64, 64)         # work while the sum is computed
    request.wait()
    return total.item()


if __name__ == "__main__":
    cli.main(demo)
