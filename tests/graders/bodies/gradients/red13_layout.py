"""Round 13 (ours): partial sums on the wire in another layout than the tensor's. A ring whose
chunks travel rotated or interleaved sends what the method does not (wrong); a flat gradient
buffer whose gradients are packed in another order, each keeping its elements' order, is
right (DDP packs them in reverse).

(Lesson `gradients`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red13_layout.py.)
"""
import torch
import torch.distributed as dist

from tests.graders.bodies.gradients.red12_b import _grads
from solutions.ring import ring_all_reduce as _solved_ring
from tests.graders.bodies._shared import deinterleave as _deinterleave, interleave as _interleave


# WRONG: the all-to-all average with every gradient sent interleaved.
def a2a_interleaved(model):
    rank, ws = dist.get_rank(), dist.get_world_size()
    params = _grads(model)
    if ws == 1:
        return None
    sent = [_interleave(p.grad.reshape(-1)) for p in params]
    inbox = [[torch.empty_like(g) for _ in range(ws)] for g in sent]
    ops = [dist.P2POp(op, buf, peer) for g, bufs in zip(sent, inbox)
           for peer in range(ws) if peer != rank
           for op, buf in ((dist.isend, g), (dist.irecv, bufs[peer]))]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    for p, g, bufs in zip(params, sent, inbox):
        total = sum(_deinterleave(g if peer == rank else bufs[peer]) for peer in range(ws))
        p.grad.copy_((total / ws).view_as(p.grad))
    return None


# RIGHT: one flat buffer per dtype with the gradients packed largest first (any order of
# the gradients; each keeps its elements' order), ring-reduced whole, copied back.
def ring_avg_largest_first(model):
    groups = {}
    for p in sorted(_grads(model), key=lambda p: -p.numel()):
        groups.setdefault(p.dtype, []).append(p)
    for params in groups.values():
        flat = torch.cat([p.grad.reshape(-1) for p in params])
        _solved_ring(flat)
        flat /= dist.get_world_size()
        for p, piece in zip(params, flat.split([p.numel() for p in params])):
            p.grad.copy_(piece.view_as(p.grad))


# RIGHT: the all-to-all average with the gradients sent in reverse order (backward's).
def a2a_reverse_order(model):
    rank, ws = dist.get_rank(), dist.get_world_size()
    params = _grads(model)[::-1]
    if ws == 1:
        return None
    sent = [p.grad.contiguous() for p in params]
    inbox = [[torch.empty_like(g) for _ in range(ws)] for g in sent]
    ops = [dist.P2POp(op, buf, peer) for g, bufs in zip(sent, inbox)
           for peer in range(ws) if peer != rank
           for op, buf in ((dist.isend, g), (dist.irecv, bufs[peer]))]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    for p, g, bufs in zip(params, sent, inbox):
        parts = [g if peer == rank else bufs[peer] for peer in range(ws)]
        total = parts[0].clone()
        for part in parts[1:]:          # in rank order: the same bits on every rank
            total += part
        p.grad.copy_((total / ws).view_as(p.grad))
    return None
