"""Issue 44's learner bodies: messages that must name the cause (what the body did, in the
lesson's words), and correct bodies a probe once rejected.

(Lesson `gradients`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/causes.py.)
"""
import torch
import torch.distributed as dist

from labs.gradients import plan_buckets
from solutions.ring import ring_all_reduce


def _divided_first(grads):
    """Flatten `grads` in the order given, divide by W, then the ring: the mean arrives."""
    flat = torch.cat([g.reshape(-1) for g in grads]) / dist.get_world_size()
    ring_all_reduce(flat)
    for g, piece in zip(grads, flat.split([g.numel() for g in grads])):
        g.copy_(piece.view_as(g))


# ---- average_gradients_bucketed: dividing before the ring is right ---------------------------

def bucketed_divides_first(model, bucket_bytes):
    """Correct: the plan's buckets, each flattened in the plan's (backward) order and divided
    by W before the ring."""
    for bucket in plan_buckets([p for p in model.parameters() if p.grad is not None],
                               bucket_bytes):
        _divided_first([p.grad for p in bucket])


def bucketed_divides_first_forward(model, bucket_bytes):
    """Correct: the same, each bucket flattened in forward order."""
    for bucket in plan_buckets([p for p in model.parameters() if p.grad is not None],
                               bucket_bytes):
        _divided_first([p.grad for p in reversed(bucket)])


# ---- stateless bodies wrong on the first call: the fault is the value, not a kept result -----

def a2a_mean_without_own(model):
    """The mean of the peers' gradients only: the rank's own gradient left out of the sum."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    if ws == 1:
        return None
    sent = [g.contiguous() for g in grads]
    inbox = [[torch.empty_like(g) for _ in range(ws)] for g in sent]
    ops = [dist.P2POp(op, buf, peer) for g, bufs in zip(sent, inbox)
           for peer in range(ws) if peer != rank
           for op, buf in ((dist.isend, g), (dist.irecv, bufs[peer]))]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    for g, bufs in zip(grads, inbox):
        total = sum(bufs[peer] for peer in range(ws) if peer != rank)
        g.copy_((total / ws).view_as(g))
    return None


# ---- average_gradients_ring: the dtype groups in any order (issue 52 item 8) -----------------

def ring_dtype_groups_reversed(model):
    """Correct: one ring per dtype, the groups in reverse name order (the same on every rank;
    the contract leaves the order free), each group's gradients flattened, summed, divided."""
    by_dtype: dict = {}
    for p in model.parameters():
        if p.grad is not None:
            by_dtype.setdefault(str(p.grad.dtype), []).append(p.grad)
    for dtype in sorted(by_dtype, reverse=True):
        grads = by_dtype[dtype]
        flat = torch.cat([g.reshape(-1) for g in grads])
        ring_all_reduce(flat)
        flat /= dist.get_world_size()
        for g, piece in zip(grads, flat.split([g.numel() for g in grads])):
            g.copy_(piece.view_as(g))
