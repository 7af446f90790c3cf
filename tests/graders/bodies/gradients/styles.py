"""Right bodies in styles the references do not use (blocking parity pairs, isend/irecv
with tags, torch's own flatten helpers, .grad replaced by views), and one wrong body that
does more than the contract asks.

(Lesson `gradients`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/styles.py.)
"""
import torch
import torch.distributed as dist



def ring_avg_flatten_dense_utils(model):
    """torch's own flatten/unflatten helpers, dtypes in order of first appearance."""
    from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors
    from solutions.ring import ring_all_reduce
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    dtypes = list(dict.fromkeys(g.dtype for g in grads))
    for dtype in dtypes:
        group = [g for g in grads if g.dtype == dtype]
        flat = _flatten_dense_tensors(group)
        ring_all_reduce(flat)
        flat.div_(dist.get_world_size())
        for g, piece in zip(group, _unflatten_dense_tensors(flat, group)):
            g.copy_(piece)


def ring_avg_divide_first(model):
    """Divide each gradient first, then the ring (the same mean up to rounding)."""
    from solutions.ring import ring_all_reduce
    by_dtype = {}
    for p in model.parameters():
        if p.grad is not None:
            by_dtype.setdefault(p.grad.dtype, []).append(p.grad)
    for grads in by_dtype.values():
        flat = torch.cat([g.reshape(-1) / dist.get_world_size() for g in grads])
        ring_all_reduce(flat)
        for g, piece in zip(grads, flat.split([g.numel() for g in grads])):
            g.copy_(piece.view_as(g))


def ring_avg_then_step(model):
    """Wrong: the right averaging, then an SGD step on the weights (not asked for)."""
    ring_avg_divide_first(model)
    with torch.no_grad():
        for p in model.parameters():
            if p.grad is not None:
                p -= 0.01 * p.grad


def ring_avg_grads_replaced(model):
    """Right: the averaging, with each p.grad replaced by a view of the flat buffer (as
    DDP's gradient_as_bucket_view does) instead of copied into."""
    from solutions.ring import ring_all_reduce
    by_dtype = {}
    for p in model.parameters():
        if p.grad is not None:
            by_dtype.setdefault(p.grad.dtype, []).append(p)
    for params in by_dtype.values():
        flat = torch.cat([p.grad.reshape(-1) for p in params])
        ring_all_reduce(flat)
        flat /= dist.get_world_size()
        for p, piece in zip(params, flat.split([p.numel() for p in params])):
            p.grad = piece.view_as(p)
