"""Lesson 08's last section: claims about batch_isend_irecv and DDP that readers meet
online, each checked on real gloo workers, and the workers behind that section's other
demos (the timings it compares and the PyTorch tutorial's 2019 ring)."""
import torch
import torch.distributed as dist

import labs.gradients as gradients
from labs import launch
from labs.claims.common import error_text
from labs.claims.registry import ClaimResult, claim
from labs.harness.notebook.timing import interleaved
from labs.harness.ranks.tracing import TRACER, span
from labs.snippets import store_barrier

MiB = 2**20


def failing_batch(rank, world_size):
    """Rank 0 posts [isend to 1, isend to itself, irecv from 1] in one batch; what it
    posted before the error, from its trace. Rank 1 does nothing."""
    if rank == 1:
        return None
    t = torch.ones(3)
    try:
        dist.batch_isend_irecv([dist.P2POp(dist.isend, t, 1), dist.P2POp(dist.isend, t, 0),
                                dist.P2POp(dist.irecv, torch.zeros(3), 1)])
        raised = "no error"
    except RuntimeError as exc:
        raised = error_text(exc)
    return [(e.describe(), bool(e.error)) for e in TRACER.events], raised


@claim("08", "batch_isend_irecv does not start its operations at once: on gloo it posts "
             "them one by one, in list order, and one that fails stops the rest")
def batch_posts_ops_in_list_order():
    posted, raised = launch(failing_batch, 2, quiet=True)[0]
    shown = [f"{call}{' raised' if failed else ''}" for call, failed in posted]
    holds = ([failed for _, failed in posted] == [False, True]
             and posted[0][0].startswith("isend(to 1") and "Pair is not connected" in raised)
    return ClaimResult(holds, f"batch [isend to 1, isend to itself, irecv from 1] on rank 0: "
                              f"{'; '.join(shown)}; the irecv was never posted")


def read_before_wait(rank, world_size):
    """Rank 0 posts a batch with one irecv from rank 1 and reads its buffer at once; only
    then (the store orders it) rank 1 sends. Rank 0 reads again after wait()."""
    if rank == 1:
        store_barrier("read")
        dist.send(torch.ones(3), dst=0)
        return None
    buf = torch.zeros(3)
    works = dist.batch_isend_irecv([dist.P2POp(dist.irecv, buf, 1)])
    early = buf.tolist()
    store_barrier("read")
    for work in works:
        work.wait()
    return early, buf.tolist()


@claim("08", "batch_isend_irecv returns without waiting: a receive buffer read right after "
             "it need not hold the data; only wait() says it does")
def batch_returns_before_its_ops_complete():
    early, late = launch(read_before_wait, 2, quiet=True)[0]
    return ClaimResult(early == [0.0] * 3 and late == [1.0] * 3,
                       f"rank 0's buffer right after the batch returned: {early}; "
                       f"after wait(): {late}")


@claim("08", "DDP always buckets: DDP(model) with no bucket arguments averages the "
             "gradients bucket by bucket (a first bucket of about 1 MiB, then about 25 MiB each)")
def ddp_always_buckets():
    hidden = 512
    sizes = launch(gradients.ddp_buckets, 2, args=([(hidden, None)],), quiet=True)[0][0]["sizes"]
    planned = gradients.planned_buckets(hidden, 25 * MiB, first_bucket_bytes=1 * MiB)
    total = sum(sizes) / MiB
    return ClaimResult(len(sizes) > 1 and sizes == planned,
                       f"DDP(model), no bucket arguments, a {total:.1f} MiB model: "
                       f"{len(sizes)} buckets of {', '.join(f'{s / MiB:.2f}' for s in sizes)} "
                       f"MiB, as planned: {sizes == planned}")


# ----------------------------------------------------------------------------------------
# The section's other demos: timings, and the field's own record
# ----------------------------------------------------------------------------------------

def batch_vs_separate_calls(rank, world_size, numel=1024, reps=7):
    """Seconds per exchange with the other rank (two ranks): one batch_isend_irecv, and the
    same isend and irecv called one by one; interleaved repetitions."""
    peer, out, inc = 1 - rank, torch.ones(numel), torch.empty(numel)

    def batched():
        for work in dist.batch_isend_irecv([dist.P2POp(dist.isend, out, peer),
                                            dist.P2POp(dist.irecv, inc, peer)]):
            work.wait()

    def separate():
        for work in [dist.isend(out, peer), dist.irecv(inc, peer)]:
            work.wait()

    return interleaved({"batch_isend_irecv": batched, "isend + irecv": separate}, reps=reps)


def overlap_or_not(rank, world_size, numel=1 << 21, reps=7):
    """Seconds per step (two ranks): exchange a message and multiply matrices, either
    posting the batch, computing, then waiting, or waiting at once, then computing."""
    peer, out, inc = 1 - rank, torch.ones(numel), torch.empty(numel)
    a = torch.randn(256, 256)

    def step(compute_before_wait):
        works = dist.batch_isend_irecv([dist.P2POp(dist.isend, out, peer),
                                        dist.P2POp(dist.irecv, inc, peer)])
        if not compute_before_wait:
            for work in works:
                work.wait()
        with span("compute"):
            for _ in range(8):
                a @ a
        if compute_before_wait:
            for work in works:
                work.wait()

    return interleaved({"post, compute, wait": lambda: step(True),
                        "post, wait, compute": lambda: step(False)}, reps=reps)


def tutorial_allreduce_2019(send, recv):
    """The ring all-reduce of PyTorch's distributed tutorial until mid-2020, rebuilt
    (pytorch/pytorch#31572): its two buffers start as zeros and are never loaded with
    `send`, and each step adds the function's own `recv` or `send` instead of the buffer
    it has just received into."""
    rank, size = dist.get_rank(), dist.get_world_size()
    send_buff = torch.zeros(send.size())
    recv_buff = torch.zeros(send.size())
    accum = torch.zeros(send.size())
    accum[:] = send[:]
    left, right = (rank - 1 + size) % size, (rank + 1) % size
    for i in range(size - 1):
        if i % 2 == 0:
            send_req = dist.isend(send_buff, right)
            dist.recv(recv_buff, left)
            accum[:] += recv[:]
        else:
            send_req = dist.isend(recv_buff, right)
            dist.recv(send_buff, left)
            accum[:] += send[:]
        send_req.wait()
    recv[:] = accum[:]


def tutorial_ring_2019(rank, world_size):
    """Rank r holds r + 1 (three values); returns what the 2019 tutorial's ring gave it."""
    data, result = torch.ones(3) * (rank + 1), torch.zeros(3)
    tutorial_allreduce_2019(data, result)
    return result[0].item()
