"""Twelfth round, a late red team: lessons 05-07, 09, 10. Each body's docstring starts
with WRONG (...) or RIGHT: and says why in two lines.

(Lesson `gradients`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red9_late.py.)
"""
import torch
import torch.distributed as dist

from solutions.ring import ring_all_reduce as _solution_ring
from tests.graders.bodies._shared import with_grads as _with_grads


# -- lesson 06 ------------------------------------------------------------------------------

def a2a_flipped_wire(model):
    """WRONG (what travels): the reference's one batch, but every gradient travels flattened
    and REVERSED, flipped back on arrival: a stand-in on the wire the constant probe misses."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    params = _with_grads(model)
    if ws == 1 or not params:
        return None
    sent = [p.grad.reshape(-1).flip(0) for p in params]
    got = [[None if q == rank else torch.empty_like(s) for q in range(ws)] for s in sent]
    ops = []
    for s, row in zip(sent, got):
        for q in range(ws):
            if q != rank:
                ops += [dist.P2POp(dist.isend, s, q), dist.P2POp(dist.irecv, row[q], q)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    for p, row in zip(params, got):
        parts = [p.grad.reshape(-1) if q == rank else row[q].flip(0) for q in range(ws)]
        total = parts[0].clone()
        for b in parts[1:]:
            total += b
        p.grad.copy_((total / ws).view_as(p.grad))
    return None


# -- lesson 06, state ------------------------------------------------------------------------


def a2a_sets_deterministic(model):
    """WRONG (global side effect): the reference exchange, after turning on
    torch.use_deterministic_algorithms(True) 'for the same bits', never turned off again."""
    torch.use_deterministic_algorithms(True)
    rank, ws = dist.get_rank(), dist.get_world_size()
    params = _with_grads(model)
    if ws == 1 or not params:
        return None
    sent = [p.grad.contiguous() for p in params]
    got = [[g if q == rank else torch.empty_like(g) for q in range(ws)] for g in sent]
    ops = []
    for g, row in zip(sent, got):
        for q in range(ws):
            if q != rank:
                ops += [dist.P2POp(dist.isend, g, q), dist.P2POp(dist.irecv, row[q], q)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    for p, row in zip(params, got):
        total = row[0].clone()
        for b in row[1:]:
            total += b
        p.grad.copy_((total / ws).view_as(p.grad))
    return None


def ring_avg_unfreezes(model):
    """WRONG (the model's other state): requires_grad switched off on every parameter while the
    grads are averaged, then switched back ON for all: the frozen parameter is now trainable."""
    params = list(model.parameters())
    for p in params:
        p.requires_grad_(False)
    by_dtype = {}
    for p in params:
        if p.grad is not None:
            by_dtype.setdefault(p.dtype, []).append(p)
    ws = dist.get_world_size()
    for group in by_dtype.values():
        grads = [p.grad for p in group]
        flat = torch.cat([g.reshape(-1) for g in grads])
        if ws > 1:
            _solution_ring(flat)
        flat /= ws
        for g, piece in zip(grads, flat.split([g.numel() for g in grads])):
            g.copy_(piece.view_as(g))
    for p in params:
        p.requires_grad_(True)
    return None
