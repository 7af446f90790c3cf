"""Lesson 06 (average_gradients_all_to_all, average_gradients_ring,
average_gradients_bucketed): wrong bodies, and correct ones in another style."""
import itertools

import torch
import torch.distributed as dist
from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors

import labs.ring
from labs.gradients import plan_buckets
from solutions.ring import ring_all_reduce


def _grads(model):
    return [p.grad for p in model.parameters() if p.grad is not None]


def _ring_average(grads):
    flat = torch.cat([g.reshape(-1) for g in grads])
    ring_all_reduce(flat)
    flat /= dist.get_world_size()
    for g, piece in zip(grads, flat.split([g.numel() for g in grads])):
        g.copy_(piece.view_as(g))


def _by_dtype(params):
    groups = {}
    for p in params:
        groups.setdefault(p.dtype, []).append(p)
    return groups.values()


# ---- average_gradients_all_to_all -----------------------------------------------------------

def a2a_all_reduce(model):
    """Right values from dist.all_reduce: no point-to-point at all."""
    for g in _grads(model):
        dist.all_reduce(g)
        g /= dist.get_world_size()


def a2a_flat_per_dtype(model):
    """Correct: one flat buffer per dtype to every peer, all in one batch, summed in rank
    order."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    if ws == 1:
        return None
    groups = [list(g) for g in _by_dtype(_grads(model))]
    flats = [_flatten_dense_tensors(g) for g in groups]
    inbox = [[f if peer == rank else torch.empty_like(f) for peer in range(ws)] for f in flats]
    ops = [dist.P2POp(op, buf, peer) for f, bufs in zip(flats, inbox)
           for peer in range(ws) if peer != rank
           for op, buf in ((dist.irecv, bufs[peer]), (dist.isend, f))]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    for grads, bufs in zip(groups, inbox):
        total = bufs[0].clone()
        for buf in bufs[1:]:
            total += buf
        for g, mean in zip(grads, _unflatten_dense_tensors(total / ws, grads)):
            g.copy_(mean)
    return None


# ---- average_gradients_ring -----------------------------------------------------------------

def ring_avg_all_reduce(model):
    """Right values, but dist.all_reduce inside instead of the lesson's ring."""
    return a2a_all_reduce(model)


def ring_avg_promoted(model):
    """One flat buffer for all: torch.cat promotes the float32 gradients to float64."""
    _ring_average(_grads(model))


def ring_avg_with_lab_ring(model):
    """Correct, on YOUR lesson-05 ring (labs.ring.ring_all_reduce): with that unsolved,
    the grader must blame ring_all_reduce, not this body."""
    for params in _by_dtype(p for p in model.parameters() if p.grad is not None):
        grads = [p.grad for p in params]
        flat = torch.cat([g.reshape(-1) for g in grads])
        labs.ring.ring_all_reduce(flat)
        flat /= dist.get_world_size()
        for g, piece in zip(grads, flat.split([g.numel() for g in grads])):
            g.copy_(piece.view_as(g))


def ring_avg_grouped(model):
    """Correct: dtype groups by itertools.groupby, torch's own flatten/unflatten."""
    grads = sorted(_grads(model), key=lambda g: str(g.dtype))
    for _, group in itertools.groupby(grads, key=lambda g: g.dtype):
        group = list(group)
        flat = _flatten_dense_tensors(group)
        ring_all_reduce(flat)
        flat.div_(dist.get_world_size())
        for g, mean in zip(group, _unflatten_dense_tensors(flat, group)):
            g.copy_(mean)


# ---- average_gradients_bucketed -------------------------------------------------------------

def bucketed_ignores_size(model, bucket_bytes):
    """One bucket per dtype whatever bucket_bytes says."""
    for params in _by_dtype(p for p in reversed(list(model.parameters())) if p.grad is not None):
        _ring_average([p.grad for p in params])


def bucketed_forward_order(model, bucket_bytes):
    """DDP's rule applied in forward order (DDP fills buckets in the order backward
    produces gradients: reverse)."""
    params = [p for p in model.parameters() if p.grad is not None]
    for bucket in plan_buckets(list(reversed(params)), bucket_bytes):
        _ring_average([p.grad for p in bucket])


def bucketed_closes_early(model, bucket_bytes):
    """A bucket closed BEFORE it would overflow (DDP closes it once it holds >= the cap)."""
    buckets, open_ = [], {}
    for p in reversed([p for p in model.parameters() if p.grad is not None]):
        params, size = open_.get(p.dtype, ([], 0))
        if params and size + p.numel() * p.element_size() > bucket_bytes:
            buckets.append(params)
            params, size = [], 0
        open_[p.dtype] = (params + [p], size + p.numel() * p.element_size())
    buckets += [params for params, _ in open_.values()]
    for bucket in buckets:
        _ring_average([p.grad for p in bucket])


def bucketed_own_plan(model, bucket_bytes):
    """Correct: DDP's plan written out (no plan_buckets), torch's flatten/unflatten."""
    filling, buckets = {}, []
    for p in reversed([p for p in model.parameters() if p.grad is not None]):
        grads = filling.setdefault(p.dtype, [])
        grads.append(p.grad)
        if sum(g.numel() * g.element_size() for g in grads) >= bucket_bytes:
            buckets.append(filling.pop(p.dtype))
    for grads in buckets + list(filling.values()):
        flat = _flatten_dense_tensors(grads)
        ring_all_reduce(flat)
        flat /= dist.get_world_size()
        for g, mean in zip(grads, _unflatten_dense_tensors(flat, grads)):
            g.copy_(mean)
