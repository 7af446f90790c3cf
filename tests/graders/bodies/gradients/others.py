"""Correct bodies in other styles than solutions/, second round: what a correct learner may
write and the contract allows. Each must pass its grader: blocking calls where allowed,
several batches where allowed, extra synchronisation that moves no data, tags, another
order inside a round, waiting through a future, a contiguous staging buffer, `.data`,
the process group passed explicitly, other torch functions for the arithmetic.

(Lesson `gradients`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/others.py.)
"""

import torch
import torch.distributed as dist

from solutions.ring import ring_all_reduce as reduce_around_the_ring


def _wait(works):
    for work in works:
        work.wait()


# lesson 06 ------------------------------------------------------------------------------------

def a2a_receives_first_per_param(model):
    """Receives posted before sends, rank order summed with torch.stack().sum(0)."""
    rank, n = dist.get_rank(), dist.get_world_size()
    params = [p for p in model.parameters() if p.grad is not None]
    if n == 1:
        return None
    inbox = [[None] * n for _ in params]
    recvs, sends = [], []
    for i, p in enumerate(params):
        for peer in range(n):
            if peer == rank:
                inbox[i][peer] = p.grad.detach().clone()
                continue
            inbox[i][peer] = torch.empty_like(p.grad, memory_format=torch.contiguous_format)
            recvs.append(dist.P2POp(dist.irecv, inbox[i][peer], peer))
            sends.append(dist.P2POp(dist.isend, p.grad.contiguous(), peer))
    _wait(dist.batch_isend_irecv(recvs + sends))
    for p, bufs in zip(params, inbox):
        total = bufs[0].clone()
        for b in bufs[1:]:
            total.add_(b)
        p.grad.copy_(total.div_(n))
    return None


def ring_avg_flatten_dense(model):
    """torch._utils' flatten/unflatten, one ring per dtype, with the ring of lesson 05."""
    from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors
    from solutions.ring import ring_all_reduce
    by_dtype = {}
    for p in model.parameters():
        if p.grad is not None:
            by_dtype.setdefault(p.dtype, []).append(p.grad)
    for grads in by_dtype.values():
        flat = _flatten_dense_tensors(grads)
        ring_all_reduce(flat)
        flat.div_(dist.get_world_size())
        for g, piece in zip(grads, _unflatten_dense_tensors(flat, grads)):
            g.copy_(piece)
    return None


def ring_avg_aliased(model):
    """The ring imported under another name; a flat buffer per dtype with torch.cat."""
    by_dtype = {}
    for p in model.parameters():
        if p.grad is not None:
            by_dtype.setdefault(p.dtype, []).append(p.grad)
    for grads in by_dtype.values():
        flat = torch.cat([g.flatten() for g in grads])
        reduce_around_the_ring(flat)
        flat /= dist.get_world_size()
        for g, piece in zip(grads, flat.split([g.numel() for g in grads])):
            g.copy_(piece.reshape(g.shape))
    return None


def bucketed_with_barrier(model, bucket_bytes):
    """DDP's plan, a barrier first, each bucket through the aliased ring."""
    from labs.gradients import plan_buckets
    dist.barrier()
    for bucket in plan_buckets([p for p in model.parameters() if p.grad is not None],
                               bucket_bytes):
        flat = torch.cat([p.grad.reshape(-1) for p in bucket])
        reduce_around_the_ring(flat)
        flat /= dist.get_world_size()
        for p, piece in zip(bucket, flat.split([p.numel() for p in bucket])):
            p.grad.copy_(piece.view_as(p.grad))
    return None
