"""Eighth round, ours: gradient averages that call lesson 05's ring as the plan says, or
exchange whole gradients, yet move their data some other way (the sums probe and the
method's partners must see it), and right ones that look unusual.

(Lesson `gradients`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red8_gradients.py.)
"""
import torch
import torch.distributed as dist

from labs.gradients import plan_buckets
from solutions.ring import ring_all_reduce
from tests.graders.bodies._shared import with_grads as _params


def _all_to_all_sum(flat):
    """The sum over ranks, by sending the whole buffer to every other rank (one batch)."""
    rank, n = dist.get_rank(), dist.get_world_size()
    got = {peer: torch.empty_like(flat) for peer in range(n) if peer != rank}
    ops = [op for peer, buf in got.items() for op in (dist.P2POp(dist.isend, flat, peer),
                                                      dist.P2POp(dist.irecv, buf, peer))]
    for work in dist.batch_isend_irecv(ops) if ops else []:
        work.wait()
    total = flat.clone()
    for peer in sorted(got):
        total += got[peer]
    return total


def _average_with_a_ring_for_show(params):
    """One ring_all_reduce on zeros of the flat buffer's size (what a ring-call counter
    sees), the mean itself from an all-to-all exchange."""
    flat = torch.cat([p.grad.reshape(-1) for p in params])
    ring_all_reduce(torch.zeros_like(flat))
    mean = _all_to_all_sum(flat) / dist.get_world_size()
    for p, piece in zip(params, mean.split([p.numel() for p in params])):
        p.grad.copy_(piece.view_as(p))


def bucketed_ring_for_show(model, bucket_bytes):
    """W: one ring_all_reduce per bucket of the plan, as the grader counts them, but on
    zeros; the average itself comes from an all-to-all exchange of each bucket."""
    for bucket in plan_buckets(_params(model), bucket_bytes):
        _average_with_a_ring_for_show(bucket)


def ring_avg_ring_for_show(model):
    """W: the same for average_gradients_ring: a ring call per dtype on zeros."""
    by = {}
    for p in _params(model):
        by.setdefault(p.dtype, []).append(p)
    for params in by.values():
        _average_with_a_ring_for_show(params)
