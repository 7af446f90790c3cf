"""Red team, round 12 (b): ring, gradients, collectives, patterns and algorithms bodies.

New kinds: encodings that are the identity on a constant tensor (the sums probe holds
2**rank everywhere, so a message [x0, x1 - x0, ...] or a permuted chunk looks like the
partial sums), receive buffers sized by the caller's own slot (the grader's all_to_all has
the same size for every peer), a dtype the collectives grader never runs, and correct
bodies in other styles (another chunk owner, strided chunks, a send thread, balanced
segments, torch.stack(...).sum, .grad as views of the reduced buffer).

(Lesson `gradients`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red12_b.py.)
"""

import torch
import torch.distributed as dist

from solutions.ring import ring_all_reduce as _solved_ring
from tests.graders.bodies._shared import delta as _delta, undelta as _undelta, with_grads as _grads


def _wait(ops):
    if ops:
        for work in dist.batch_isend_irecv(ops):
            work.wait()


# -- lesson 06: gradients ---------------------------------------------------------------------

def _a2a(model, enc, dec, combine):
    rank, ws = dist.get_rank(), dist.get_world_size()
    params = _grads(model)
    if ws == 1:
        return None
    sent = [enc(p.grad.contiguous()) for p in params]
    inbox = [[None if peer == rank else torch.empty_like(g) for peer in range(ws)] for g in sent]
    ops = [dist.P2POp(op, buf, peer) for g, bufs in zip(sent, inbox)
           for peer in range(ws) if peer != rank
           for op, buf in ((dist.isend, g), (dist.irecv, bufs[peer]))]
    _wait(ops)
    for p, g, bufs in zip(params, sent, inbox):
        parts = [dec(g) if peer == rank else dec(bufs[peer]) for peer in range(ws)]
        p.grad.copy_(combine(parts).view_as(p.grad))
    return None


def _rank_order_mean(parts):
    total = parts[0].clone()
    for part in parts[1:]:
        total += part
    return total / len(parts)


def _delta_full(x):
    return _delta(x.reshape(-1)) if x.dtype in (torch.float32, torch.float64) else x.clone()


def _undelta_full(m):
    return _undelta(m) if m.dtype in (torch.float32, torch.float64) else m


# WRONG: every float32/float64 gradient travels delta-encoded against its first element
# (identity on the probe's constant gradients).
def a2a_delta_encoded(model):
    return _a2a(model, _delta_full, _undelta_full, _rank_order_mean)


# RIGHT: the W gradients stacked in rank order and reduced with torch.stack(...).sum(0), then /
# W: the same on every rank.
def a2a_stack_sum(model):
    return _a2a(model, lambda g: g, lambda g: g,
                lambda parts: torch.stack(parts).sum(0) / len(parts))


# RIGHT: gradient_as_bucket_view style: one flat buffer per dtype, ring-reduced, then every
# .grad becomes a view of its piece.
def ring_avg_grad_views(model):
    groups = {}
    for p in _grads(model):
        groups.setdefault(p.dtype, []).append(p)
    for params in groups.values():
        flat = torch.cat([p.grad.reshape(-1) for p in params])
        _solved_ring(flat)
        flat /= dist.get_world_size()
        for p, piece in zip(params, flat.split([p.numel() for p in params])):
            p.grad = piece.view(p.grad.shape)
    return None


# RIGHT: the ring in each gradient's own dtype, then the divide done in float64 and rounded once
# (local arithmetic only).
def ring_avg_divide_float64(model):
    groups = {}
    for p in _grads(model):
        groups.setdefault(p.dtype, []).append(p)
    for params in groups.values():
        flat = torch.cat([p.grad.reshape(-1) for p in params])
        _solved_ring(flat)
        mean = (flat.double() / dist.get_world_size()).to(flat.dtype)
        for p, piece in zip(params, mean.split([p.numel() for p in params])):
            p.grad.copy_(piece.view(p.grad.shape))
    return None
