"""Seventh round, ours: what travels in a reduction (the partial sums, on the probe of
labs.harness.grading.sums), wrong and right bodies that no red team wrote.

(Lesson `gradients`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red7_sums.py.)
"""
import torch
import torch.distributed as dist

from labs.ring import chunk_bounds
from solutions.ring import ring_all_reduce
from tests.graders.bodies._shared import half as _half


def _swap(send, peer, recv, source=None):
    """Send to `peer` and receive from `source` (default: the same peer), one batch."""
    for work in dist.batch_isend_irecv([dist.P2POp(dist.isend, send, peer),
                                        dist.P2POp(dist.irecv, recv, peer if source is None
                                                   else source)]):
        work.wait()


def _ring(tensor, *, owner_shift=0, encode=None, decode=None, gather=True, accumulate=None):
    """The ring all-reduce (or its reduce-scatter alone): rank r ends its reduce-scatter with
    chunk (r + owner_shift) % n. encode/decode: what goes on the wire and back."""
    rank, n = dist.get_rank(), dist.get_world_size()
    flat = tensor.view(-1)
    bounds = chunk_bounds(flat.numel(), n)
    chunks = [flat[a:b] for a, b in bounds]
    nxt, prev = (rank + 1) % n, (rank - 1) % n
    mine = (rank + owner_shift) % n
    if n == 1:
        return chunks[mine] if not gather else tensor
    for step in range(n - 1):
        out, into = chunks[(mine - step - 1) % n], chunks[(mine - step - 2) % n]
        wire = torch.empty_like(into)
        _swap(encode(out) if encode else out, nxt, wire, prev)
        got = decode(wire) if decode else wire
        if accumulate:
            into.copy_((into.to(accumulate) + got.to(accumulate)).to(into.dtype))
        else:
            into.add_(got)
    if not gather:
        return chunks[mine]
    for step in range(n - 1):
        out, into = chunks[(mine - step) % n], chunks[(mine - step - 1) % n]
        wire = torch.empty_like(into)
        _swap(encode(out) if encode else out, nxt, wire, prev)
        into.copy_(decode(wire) if decode else wire)
    return tensor


def a2a_negated_wire(model):
    """WRONG (what travels): every gradient to every other rank, negated on the wire and
    negated back on arrival; the average is right."""
    rank, n = dist.get_rank(), dist.get_world_size()
    params = [p for p in model.parameters() if p.grad is not None]
    if n == 1:
        return None
    sent = [-p.grad.contiguous() for p in params]
    received = [[torch.empty_like(g) for _ in range(n)] for g in sent]
    ops = [op for g, bufs in zip(sent, received) for peer in range(n) if peer != rank
           for op in (dist.P2POp(dist.isend, g, peer), dist.P2POp(dist.irecv, bufs[peer], peer))]
    for work in dist.batch_isend_irecv(ops) if ops else []:
        work.wait()
    for p, bufs in zip(params, received):
        total = p.grad.clone()
        for peer in range(n):
            if peer != rank:
                total -= bufs[peer].view_as(total)
        p.grad.copy_(total / n)
    return None


def ring_avg_doubled_wire(model):
    """WRONG (what travels): one ring per dtype over the flat gradients, every message
    doubled and halved on arrival."""
    by_dtype = {}
    for p in model.parameters():
        if p.grad is not None:
            by_dtype.setdefault(p.dtype, []).append(p)
    for params in by_dtype.values():
        flat = torch.cat([p.grad.reshape(-1) for p in params])
        _ring(flat, encode=lambda c: c * 2, decode=_half)     # (not lesson 05's ring: fails)
        flat /= dist.get_world_size()
        for p, piece in zip(params, flat.split([p.grad.numel() for p in params])):
            p.grad.copy_(piece.view_as(p.grad))
    return None


def ring_avg_predivided(model):
    """RIGHT: one ring per dtype over the flat gradients, each divided by the world size
    before the ring adds them (the sums on the wire are the means' partial sums)."""
    by_dtype = {}
    for p in model.parameters():
        if p.grad is not None:
            by_dtype.setdefault(p.dtype, []).append(p)
    for params in by_dtype.values():
        flat = torch.cat([p.grad.reshape(-1) for p in params]) / dist.get_world_size()
        ring_all_reduce(flat)
        for p, piece in zip(params, flat.split([p.grad.numel() for p in params])):
            p.grad.copy_(piece.view_as(p.grad))
    return None
