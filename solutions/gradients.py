"""Reference solutions for labs/gradients.py (lesson 06).

The ring versions use the reference ring (solutions.ring), so that grading these does
not depend on your lesson 05 exercise; yours (labs.gradients) use labs.ring.
"""
import torch
import torch.distributed as dist

from labs.gradients import plan_buckets
from solutions.ring import ring_all_reduce


def _with_grads(model):
    return [p for p in model.parameters() if p.grad is not None]


def average_gradients_all_to_all(model):
    rank, ws = dist.get_rank(), dist.get_world_size()
    params = _with_grads(model)
    if ws == 1:
        return None          # the mean of one gradient is itself
    sent = [p.grad.contiguous() for p in params]    # must stay alive until the waits
    received = [[g if peer == rank else torch.empty_like(g) for peer in range(ws)]
                for g in sent]
    ops = []
    for g, bufs in zip(sent, received):     # same parameter order on every rank: FIFO
        for peer in range(ws):
            if peer != rank:
                ops.append(dist.P2POp(dist.isend, g, peer))
                ops.append(dist.P2POp(dist.irecv, bufs[peer], peer))
    if ops:
        for work in dist.batch_isend_irecv(ops):
            work.wait()
    for p, bufs in zip(params, received):
        total = bufs[0].clone()
        for b in bufs[1:]:              # rank order: the same bits on every rank
            total += b
        p.grad.copy_((total / ws).view_as(p.grad))
    return None


def _ring_average(params):
    """Flatten `params`' grads (one dtype), ring all-reduce, divide, copy back."""
    grads = [p.grad for p in params]
    flat = torch.cat([g.reshape(-1) for g in grads])
    ring_all_reduce(flat)
    flat /= dist.get_world_size()
    for g, piece in zip(grads, flat.split([g.numel() for g in grads])):
        g.copy_(piece.view_as(g))


def average_gradients_ring(model):
    by_dtype = {}
    for p in _with_grads(model):
        by_dtype.setdefault(p.dtype, []).append(p)
    for params in by_dtype.values():     # insertion order: the same on every rank
        _ring_average(params)
    return None


def average_gradients_bucketed(model, bucket_bytes):
    for bucket in plan_buckets(_with_grads(model), bucket_bytes):
        _ring_average(bucket)
    return None
