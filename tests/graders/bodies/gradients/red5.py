"""Red-team G bodies for lesson 06 (labs/gradients.py)."""
import torch
import torch.distributed as dist

from labs.gradients import plan_buckets
from solutions.ring import ring_all_reduce
from tests.graders.bodies._shared import with_grads as _with_grads


def _ring_average(params):
    grads = [p.grad for p in params]
    if not grads:
        return
    flat = torch.cat([g.reshape(-1) for g in grads])
    ring_all_reduce(flat)
    flat /= dist.get_world_size()
    for g, piece in zip(grads, flat.split([g.numel() for g in grads])):
        g.copy_(piece.view_as(g))


def ring_avg_two_dtypes_only(model):
    """WRONG: one flat buffer for float32 and one for float64 (the dtypes the learner saw);
    a bfloat16/float16 gradient is never averaged (left as this rank's own gradient)."""
    for dtype in (torch.float32, torch.float64):
        _ring_average([p for p in _with_grads(model) if p.grad.dtype == dtype])
    return None


def a2a_half_as_float32(model):
    """WRONG: every non-float64 gradient travels (and is summed) as float32, 'because gloo
    is picky with half types': bfloat16/float16 gradients go on the wire at twice their
    bytes and are summed in float32 (contract: each gradient travels in its own dtype)."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    params = _with_grads(model)
    if ws == 1:
        return None
    sent = [p.grad.to(torch.float64 if p.grad.dtype == torch.float64 else torch.float32)
            .contiguous() for p in params]
    received = [[g if peer == rank else torch.empty_like(g) for peer in range(ws)]
                for g in sent]
    ops = []
    for g, bufs in zip(sent, received):
        for peer in range(ws):
            if peer != rank:
                ops.append(dist.P2POp(dist.isend, g, peer))
                ops.append(dist.P2POp(dist.irecv, bufs[peer], peer))
    if ops:
        for work in dist.batch_isend_irecv(ops):
            work.wait()
    for p, bufs in zip(params, received):
        total = bufs[0].clone()
        for b in bufs[1:]:
            total += b
        p.grad.copy_((total / ws).to(p.grad.dtype).view_as(p.grad))
    return None


def a2a_no_contiguous(model):
    """WRONG: the reference without .contiguous(): p.grad is sent as is and received into
    empty_like(p.grad) (which keeps a strided layout): raises on any non-contiguous
    gradient (a channels_last conv weight, a parameter that is a transposed view)."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    params = _with_grads(model)
    if ws == 1:
        return None
    received = [[p.grad if peer == rank else torch.empty_like(p.grad) for peer in range(ws)]
                for p in params]
    ops = []
    for p, bufs in zip(params, received):
        for peer in range(ws):
            if peer != rank:
                ops.append(dist.P2POp(dist.isend, p.grad, peer))
                ops.append(dist.P2POp(dist.irecv, bufs[peer], peer))
    if ops:
        for work in dist.batch_isend_irecv(ops):
            work.wait()
    for p, bufs in zip(params, received):
        total = bufs[0].clone()
        for b in bufs[1:]:
            total += b
        p.grad.copy_(total / ws)
    return None


_PLANS = {}


def bucketed_plan_cached_by_class(model, bucket_bytes):
    """WRONG (state between calls): DDP-like, the bucket plan is built once per (model
    class, bucket_bytes) and kept by parameter name; a later step where another set of
    grads is None (a branch used this time), or another instance of the class with other
    sizes, is averaged with the first call's plan (grads skipped, or a crash on None)."""
    key = (type(model).__qualname__, bucket_bytes)
    if key not in _PLANS:
        names = {id(p): n for n, p in model.named_parameters()}
        _PLANS[key] = [[names[id(p)] for p in bucket]
                       for bucket in plan_buckets(_with_grads(model), bucket_bytes)]
    params = dict(model.named_parameters())
    for bucket in _PLANS[key]:
        _ring_average([params[n] for n in bucket])
    return None


def _plan_sorted_leftovers(params, cap):
    buckets, open_ = [], {}
    for p in reversed(params):
        b = open_.setdefault(p.dtype, [[], 0])
        b[0].append(p)
        b[1] += p.numel() * p.element_size()
        if b[1] >= cap:
            buckets.append(b[0])
            del open_[p.dtype]
    for dtype in sorted(open_, key=str):       # "a deterministic order on every rank"
        buckets.append(open_[dtype][0])
    return buckets


def bucketed_leftovers_sorted(model, bucket_bytes):
    """WRONG (method): its own DDP plan, but the buckets left open at the end are closed
    in dtype-name order, not in the order they were opened: whenever the last parameter
    is float64 (its bucket opened first) the float64 bucket should come first."""
    for bucket in _plan_sorted_leftovers(_with_grads(model), bucket_bytes):
        _ring_average(bucket)
    return None


def a2a_stack_mean(model):
    """RIGHT: the one batch, receives listed before sends, and the mean as
    torch.stack(rank-ordered gradients).mean(0): the same order, the same bits on every rank."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    params = _with_grads(model)
    if ws == 1:
        return None
    mine = [p.grad.detach().contiguous() for p in params]
    slots = [[g if peer == rank else torch.empty(g.shape, dtype=g.dtype) for peer in range(ws)]
             for g in mine]
    recvs = [dist.P2POp(dist.irecv, s[peer], peer) for s in slots for peer in range(ws)
             if peer != rank]
    sends = [dist.P2POp(dist.isend, g, peer) for g in mine for peer in range(ws)
             if peer != rank]
    for work in dist.batch_isend_irecv(recvs + sends):
        work.wait()
    for p, s in zip(params, slots):
        p.grad.copy_(torch.stack(s).mean(0).view_as(p.grad))
    return None


def ring_avg_foreach(model):
    """RIGHT: one flat buffer per dtype (dict of lists), the ring, then the pieces copied
    back with torch._foreach_copy_ (one fused call) after an in-place div_."""
    groups = {}
    for p in model.parameters():
        if p.grad is not None:
            groups.setdefault(p.grad.dtype, []).append(p.grad)
    for grads in groups.values():
        flat = torch.cat([g.flatten() for g in grads])
        ring_all_reduce(flat)
        flat.div_(dist.get_world_size())
        pieces = [piece.view_as(g) for g, piece in zip(grads, flat.split([g.numel() for g in grads]))]
        torch._foreach_copy_(grads, pieces)
    return None
