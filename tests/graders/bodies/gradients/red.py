"""Red-team bodies for lesson 06 (gradients), as they were written; listed in
tests/harness/catalogue/."""
import torch
import torch.distributed as dist

from labs.gradients import plan_buckets
from solutions.ring import ring_all_reduce
from tests.graders.bodies._shared import with_grads as _params


# ---------------- WRONG ----------------


_KEPT = {}


def ring_avg_grads_in_kept_buffer(model):
    """W: one flat buffer per dtype KEPT between calls (no allocation per step), each
    p.grad replaced by a view of it: averaging a second model overwrites the first
    model's gradients."""
    by = {}
    for p in _params(model):
        by.setdefault(p.dtype, []).append(p)
    for dtype, params in by.items():
        n = sum(p.numel() for p in params)
        buf = _KEPT.get(dtype)
        if buf is None or buf.numel() < n:
            buf = _KEPT[dtype] = torch.empty(n, dtype=dtype)
        flat = buf[:n]
        torch.cat([p.grad.reshape(-1) for p in params], out=flat)
        ring_all_reduce(flat)
        flat /= dist.get_world_size()
        for p, piece in zip(params, flat.split([p.numel() for p in params])):
            p.grad = piece.view_as(p)
    return None


def bucketed_kept_views(model, bucket_bytes):
    """W: bucketed, each bucket's flat buffer kept between calls by bucket index, grads
    replaced by views."""
    for i, bucket in enumerate(plan_buckets(_params(model), bucket_bytes)):
        n = sum(p.numel() for p in bucket)
        key = (i, bucket[0].dtype)
        buf = _KEPT.get(key)
        if buf is None or buf.numel() < n:
            buf = _KEPT[key] = torch.empty(n, dtype=bucket[0].dtype)
        flat = buf[:n]
        torch.cat([p.grad.reshape(-1) for p in bucket], out=flat)
        ring_all_reduce(flat)
        flat /= dist.get_world_size()
        for p, piece in zip(bucket, flat.split([p.numel() for p in bucket])):
            p.grad = piece.view_as(p)
    return None


def ring_avg_hook_left_behind(model):
    """W: averages correctly and also registers a hook on every parameter that divides
    future gradients by world size (a side effect on the model that outlives the call)."""
    by = {}
    for p in _params(model):
        by.setdefault(p.dtype, []).append(p)
    for params in by.values():
        flat = torch.cat([p.grad.reshape(-1) for p in params])
        ring_all_reduce(flat)
        flat /= dist.get_world_size()
        for p, piece in zip(params, flat.split([p.numel() for p in params])):
            p.grad.copy_(piece.view_as(p))
    ws = dist.get_world_size()
    for p in model.parameters():
        if p.requires_grad and not getattr(p, "_probe_hooked", False):
            p.register_hook(lambda g: g / ws)
            p._probe_hooked = True
    return None


# ---------------- RIGHT ----------------

def _flat_average(params, reduce=ring_all_reduce):
    flat = torch.cat([p.grad.reshape(-1) for p in params])
    reduce(flat)
    flat /= dist.get_world_size()
    for p, piece in zip(params, flat.split([p.numel() for p in params])):
        p.grad.copy_(piece.view_as(p))


def ring_avg_default_arg(model):
    """R: a helper whose reducer is a parameter defaulting to lesson 05's ring."""
    by = {}
    for p in _params(model):
        by.setdefault(p.dtype, []).append(p)
    for params in by.values():
        _flat_average(params)
    return None


def bucketed_default_arg(model, bucket_bytes):
    """R: the same helper per bucket of plan_buckets."""
    for bucket in plan_buckets(_params(model), bucket_bytes):
        _flat_average(bucket)
    return None


class _Averager:
    """R: a small class holding the reducer (as a learner would for 'pluggable' reducers)."""
    def __init__(self, reduce):
        self.reduce = reduce

    def __call__(self, model):
        by = {}
        for p in _params(model):
            by.setdefault(p.dtype, []).append(p)
        for params in by.values():
            flat = torch.cat([p.grad.reshape(-1) for p in params])
            self.reduce(flat)
            flat /= dist.get_world_size()
            for p, piece in zip(params, flat.split([p.numel() for p in params])):
                p.grad.copy_(piece.view_as(p))


_AVG = _Averager(ring_all_reduce)


def ring_avg_via_object(model):
    """R: the class above."""
    _AVG(model)
    return None


def a2a_peer_major(model):
    """R: ops ordered peer by peer (for each peer: every gradient), receives before sends,
    the sum with torch.stack(...).sum(0) in rank order."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    params = _params(model)
    if ws == 1:
        return None
    grads = [p.grad.detach().contiguous().clone() for p in params]
    got = {q: [torch.empty_like(g) for g in grads] for q in range(ws) if q != rank}
    ops = []
    for q in range(ws):
        if q == rank:
            continue
        ops += [dist.P2POp(dist.irecv, b, q) for b in got[q]]
        ops += [dist.P2POp(dist.isend, g, q) for g in grads]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    for i, p in enumerate(params):
        parts = [grads[i] if q == rank else got[q][i] for q in range(ws)]
        total = parts[0].clone()
        for t in parts[1:]:
            total += t
        p.grad = total / ws
    return None


def a2a_skips_zero_grads(model):
    """W: skips gradients that are all zero on this rank ("nothing to average"): when a
    rank's gradient is zero and the others' are not, the messages no longer pair up."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    params = [p for p in _params(model) if bool(p.grad.any())]
    if ws == 1 or not params:
        return None
    sent = [p.grad.contiguous() for p in params]
    recv = [[g if q == rank else torch.empty_like(g) for q in range(ws)] for g in sent]
    ops = []
    for g, bufs in zip(sent, recv):
        for q in range(ws):
            if q != rank:
                ops += [dist.P2POp(dist.isend, g, q), dist.P2POp(dist.irecv, bufs[q], q)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    for p, bufs in zip(params, recv):
        total = bufs[0].clone()
        for b in bufs[1:]:
            total += b
        p.grad.copy_(total / ws)
    return None


def ring_avg_sorted_by_name(model):
    """R: groups by dtype name, sorted; within a group, parameters sorted by name."""
    named = sorted((n, p) for n, p in model.named_parameters() if p.grad is not None)
    groups = {}
    for n, p in named:
        groups.setdefault(str(p.dtype), []).append(p)
    for key in sorted(groups):
        params = groups[key]
        flat = torch.cat([p.grad.flatten() for p in params])
        ring_all_reduce(flat)
        flat.div_(dist.get_world_size())
        off = 0
        for p in params:
            p.grad.copy_(flat[off:off + p.numel()].view_as(p.grad))
            off += p.numel()
    return None


def bucketed_generator_style(model, bucket_bytes):
    """R: one flat buffer per bucket built with torch.empty + copy, unflatten via
    narrow(); the bucket plan from plan_buckets."""
    ws = dist.get_world_size()
    for bucket in plan_buckets([p for p in model.parameters() if p.grad is not None],
                               bucket_bytes):
        flat = torch.empty(sum(p.numel() for p in bucket), dtype=bucket[0].dtype)
        off = 0
        for p in bucket:
            flat.narrow(0, off, p.numel()).copy_(p.grad.reshape(-1))
            off += p.numel()
        ring_all_reduce(flat)
        flat /= ws
        off = 0
        for p in bucket:
            p.grad.copy_(flat.narrow(0, off, p.numel()).view_as(p.grad))
            off += p.numel()
    return None


def a2a_modules_iteration(model):
    """W: parameters found by walking the modules (m.parameters(recurse=False)): a tied
    (shared) parameter is found twice, and its own contribution is read back after being
    overwritten with the mean."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    params = [p for m in model.modules() for p in m.parameters(recurse=False)
              if p.grad is not None]
    if ws == 1:
        return None
    sent = [p.grad for p in params]
    recv = [[g if q == rank else torch.empty_like(g) for q in range(ws)] for g in sent]
    ops = []
    for g, bufs in zip(sent, recv):
        for q in range(ws):
            if q != rank:
                ops += [dist.P2POp(dist.isend, g, q), dist.P2POp(dist.irecv, bufs[q], q)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    for p, bufs in zip(params, recv):
        total = bufs[0].clone()
        for b in bufs[1:]:
            total += b
        p.grad.copy_(total / ws)
    return None


_BY_SHAPE = {}


def a2a_result_buffer_by_shape(model):
    """W: each mean written into a result buffer kept per (shape, dtype), p.grad replaced by
    it: two parameters of the same shape (two Linear(256, 256)) end up with ONE grad tensor,
    the last one's mean."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    params = _params(model)
    if ws == 1:
        return None
    sent = [p.grad.contiguous() for p in params]
    recv = [[g if q == rank else torch.empty_like(g) for q in range(ws)] for g in sent]
    ops = []
    for g, bufs in zip(sent, recv):
        for q in range(ws):
            if q != rank:
                ops += [dist.P2POp(dist.isend, g, q), dist.P2POp(dist.irecv, bufs[q], q)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    for p, bufs in zip(params, recv):
        total = bufs[0].clone()
        for b in bufs[1:]:
            total += b
        out = _BY_SHAPE.setdefault((tuple(p.shape), p.dtype), torch.empty_like(p.grad))
        torch.div(total, ws, out=out)
        p.grad = out
    return None


def ring_avg_reseeds(model):
    """W: the ring averaging, plus torch.manual_seed(0) "so every rank rounds the same":
    the caller's global RNG is reset at every step (dropout masks, data shuffles repeat)."""
    torch.manual_seed(0)
    by = {}
    for p in _params(model):
        by.setdefault(p.dtype, []).append(p)
    for params in by.values():
        flat = torch.cat([p.grad.reshape(-1) for p in params])
        ring_all_reduce(flat)
        flat /= dist.get_world_size()
        for p, piece in zip(params, flat.split([p.numel() for p in params])):
            p.grad.copy_(piece.view_as(p))
    return None
