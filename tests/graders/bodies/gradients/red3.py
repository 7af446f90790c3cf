"""Third red team (lesson 06, labs/gradients.py): learner bodies, wrong and right."""
import torch
import torch.distributed as dist

from labs.gradients import plan_buckets
from solutions.ring import ring_all_reduce
from tests.graders.bodies._shared import with_grads as _with_grads


def _avg(params):
    grads = [p.grad for p in params]
    if not grads:
        return
    flat = torch.cat([g.reshape(-1) for g in grads])
    ring_all_reduce(flat)
    flat /= dist.get_world_size()
    for g, piece in zip(grads, flat.split([g.numel() for g in grads])):
        g.copy_(piece.view_as(g))


def bucketed_ddp_first_bucket(model, bucket_bytes):
    """W: "as DDP does": the first bucket of each dtype capped at 1 MiB (DDP's default
    first_bucket_bytes), never more than bucket_bytes. The contract's plan is
    plan_buckets(params, bucket_bytes): for bucket_bytes > 1 MiB and > 1 MiB of gradients
    in a dtype, the first bucket closes early, a different plan."""
    params = _with_grads(model)
    for bucket in plan_buckets(params, bucket_bytes,
                               first_bucket_bytes=min(1 << 20, bucket_bytes)):
        _avg(bucket)


def _strict_plan(params, cap):
    buckets, open_ = [], {}
    for p in reversed(params):
        b = open_.setdefault(p.dtype, [[], 0])
        b[0].append(p)
        b[1] += p.numel() * p.element_size()
        if b[1] > cap:                      # closes only once it EXCEEDS the cap
            buckets.append(b[0])
            del open_[p.dtype]
    buckets.extend(b[0] for b in open_.values() if b[0])
    return buckets


def bucketed_strict_cap(model, bucket_bytes):
    """W: own plan, a bucket closed only once it holds MORE than bucket_bytes (contract:
    closed as soon as it holds >= bucket_bytes). Differs when a bucket lands exactly on the
    cap (e.g. one parameter of exactly bucket_bytes merges with the next)."""
    for bucket in _strict_plan(_with_grads(model), bucket_bytes):
        _avg(bucket)


def _bytes4_plan(params, cap):
    buckets, open_ = [], {}
    for p in reversed(params):
        b = open_.setdefault(p.dtype, [[], 0])
        b[0].append(p)
        b[1] += p.numel() * 4               # "4 bytes a gradient"
        if b[1] >= cap:
            buckets.append(b[0])
            del open_[p.dtype]
    buckets.extend(b[0] for b in open_.values() if b[0])
    return buckets


def bucketed_bytes_as_float32(model, bucket_bytes):
    """W: own plan that counts 4 bytes per element whatever the dtype (float64 buckets
    hold twice the bytes the cap allows)."""
    for bucket in _bytes4_plan(_with_grads(model), bucket_bytes):
        _avg(bucket)


def a2a_sum_in_float64(model):
    """W?: the one batch, right dtypes on the wire, but the W gradients summed in a float64
    accumulator (rank order) and cast back: float32 means more exact than DDP's (and than
    the contract's 'add the W gradients in rank order' in their own dtype)."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    params = _with_grads(model)
    if ws == 1:
        return None
    sent = [p.grad.contiguous() for p in params]
    recv = [[g if q == rank else torch.empty_like(g) for q in range(ws)] for g in sent]
    ops = []
    for g, row in zip(sent, recv):
        for q in range(ws):
            if q != rank:
                ops += [dist.P2POp(dist.isend, g, q), dist.P2POp(dist.irecv, row[q], q)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    for p, row in zip(params, recv):
        acc = torch.zeros_like(p.grad, dtype=torch.float64)
        for b in row:
            acc += b
        p.grad.copy_((acc / ws).to(p.grad.dtype))
    return None


def ring_avg_state_dict(model):
    """W: gradients found through state_dict(keep_vars=True): the tied weight appears
    twice (a.weight and tied.weight), so its gradient is flattened, summed and divided
    twice over in one buffer."""
    by_dtype = {}
    for t in model.state_dict(keep_vars=True).values():
        if isinstance(t, torch.nn.Parameter) and t.grad is not None:
            by_dtype.setdefault(t.dtype, []).append(t)
    for params in by_dtype.values():
        _avg(params)


def ring_avg_params_to_vector(model):
    """R: torch.nn.utils.parameters_to_vector / vector_to_parameters on the grads, one
    ring per dtype in order of first appearance."""
    from torch.nn.utils import parameters_to_vector
    by_dtype = {}
    for p in _with_grads(model):
        by_dtype.setdefault(p.dtype, []).append(p.grad)
    for grads in by_dtype.values():
        flat = parameters_to_vector(grads)
        ring_all_reduce(flat)
        flat.div_(dist.get_world_size())
        with torch.no_grad():
            for g, piece in zip(grads, flat.split([g.numel() for g in grads])):
                g.copy_(piece.view_as(g))


def bucketed_closure_per_bucket(model, bucket_bytes):
    """R: DDP-like: the plan first, then for each bucket a flat buffer via torch.empty and
    narrow-copies, the ring, a multiply by 1/W, copies back via narrow."""
    ws = dist.get_world_size()
    for bucket in plan_buckets(_with_grads(model), bucket_bytes):
        total = sum(p.numel() for p in bucket)
        flat = torch.empty(total, dtype=bucket[0].dtype)
        off = 0
        for p in bucket:
            flat.narrow(0, off, p.numel()).copy_(p.grad.reshape(-1))
            off += p.numel()
        ring_all_reduce(flat)
        flat.mul_(1.0 / ws)
        off = 0
        for p in bucket:
            p.grad.copy_(flat.narrow(0, off, p.numel()).view_as(p.grad))
            off += p.numel()
