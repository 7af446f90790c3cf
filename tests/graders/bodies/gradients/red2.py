"""Second red team (lesson 06, labs/gradients.py): bucket plans and averaging styles."""
import torch
import torch.distributed as dist

from labs.gradients import plan_buckets
from solutions.ring import ring_all_reduce
from tests.graders.bodies._shared import with_grads as _with_grads


def _flat_ring_average(params, predivide=False):
    grads = [p.grad for p in params]
    if not grads:
        return
    ws = dist.get_world_size()
    flat = torch.cat([g.reshape(-1) for g in grads])
    if predivide:
        flat /= ws
    ring_all_reduce(flat)
    if not predivide:
        flat /= ws
    for g, piece in zip(grads, flat.split([g.numel() for g in grads])):
        g.copy_(piece.view_as(g))


def ring_avg_predivide(model):
    """R: DDP's predivide: each flat buffer divided by W before the ring, summed after."""
    groups = {}
    for p in _with_grads(model):
        groups.setdefault(p.dtype, []).append(p)
    for params in groups.values():
        _flat_ring_average(params, predivide=True)


def bucketed_plan_over_all_params(model, bucket_bytes):
    """W: plan_buckets over ALL parameters (frozen and unused ones too), the None grads
    dropped from each bucket afterwards: frozen/unused parameters take room in the buckets
    and move the boundaries, unlike DDP's plan (which the hint and contract ask for)."""
    for bucket in plan_buckets(list(model.parameters()), bucket_bytes):
        _flat_ring_average([p for p in bucket if p.grad is not None])


def bucketed_plan_requires_grad(model, bucket_bytes):
    """W: the plan over parameters that require grad (the unused one, whose grad is None,
    included), None grads skipped inside each bucket."""
    for bucket in plan_buckets([p for p in model.parameters() if p.requires_grad],
                               bucket_bytes):
        _flat_ring_average([p for p in bucket if p.grad is not None])


def bucketed_forward_within_bucket(model, bucket_bytes):
    """R: the plan's buckets, in order, each flattened in forward parameter order."""
    for bucket in plan_buckets(_with_grads(model), bucket_bytes):
        _flat_ring_average(list(reversed(bucket)))


def a2a_futures(model):
    """R: the one batch, waited through torch.futures.wait_all on the works' futures."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    params = _with_grads(model)
    if ws == 1 or not params:
        return None
    bufs = [[p.grad if q == rank else torch.empty_like(p.grad) for q in range(ws)]
            for p in params]
    ops = []
    for p, row in zip(params, bufs):
        for q in range(ws):
            if q != rank:
                ops += [dist.P2POp(dist.isend, p.grad, q), dist.P2POp(dist.irecv, row[q], q)]
    works = dist.batch_isend_irecv(ops)
    torch.futures.wait_all([w.get_future() for w in works])
    for p, row in zip(params, bufs):
        total = torch.zeros_like(p.grad)
        for b in row:
            total += b
        p.grad.copy_(total / ws)
    return None


def a2a_tagged_mul_reciprocal(model):
    """R: a tag per parameter, receives listed first, the mean as sum * (1 / W) written
    by replacing .grad with a new tensor."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    params = _with_grads(model)
    if ws == 1:
        return None
    bufs, ops = [], []
    for i, p in enumerate(params):
        row = {q: torch.empty_like(p.grad, memory_format=torch.contiguous_format)
               for q in range(ws) if q != rank}
        bufs.append(row)
        ops += [dist.P2POp(dist.irecv, row[q], q, tag=i) for q in row]
        ops += [dist.P2POp(dist.isend, p.grad.contiguous(), q, tag=i) for q in row]
    if ops:
        for w in dist.batch_isend_irecv(ops):
            w.wait()
    for p, row in zip(params, bufs):
        parts = [p.grad if q == rank else row[q] for q in range(ws)]
        total = parts[0].clone()
        for t in parts[1:]:
            total.add_(t)
        p.grad = total.mul_(1.0 / ws)
    return None
