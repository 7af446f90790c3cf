"""Round 15 (ours), part 2: lessons 04, 06 and 09, in kinds no list named (every dtype in
one float64 ring, DDP's first bucket, buckets in forward order, k and v in one message,
shapes compared by numel), and right bodies in styles the contracts allow.

(Lesson `gradients`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red15_more.py.)
"""
import torch
import torch.distributed as dist

from labs.gradients import plan_buckets
from solutions.ring import ring_all_reduce


def _wait(works):
    for w in works:
        w.wait()


# ---- lesson 06 ------------------------------------------------------------------------

# RIGHT: the mean assigned as a new tensor (`p.grad = ...`): "replace every param.grad".
def a2a_assigns_new_grad(model):
    rank, ws = dist.get_rank(), dist.get_world_size()
    params = [p for p in model.parameters() if p.grad is not None]
    if ws == 1:
        return None
    sent = [p.grad.contiguous() for p in params]
    got = [[g if peer == rank else torch.empty_like(g) for peer in range(ws)] for g in sent]
    ops = [op for g, bufs in zip(sent, got) for peer in range(ws) if peer != rank
           for op in (dist.P2POp(dist.isend, g, peer), dist.P2POp(dist.irecv, bufs[peer], peer))]
    _wait(dist.batch_isend_irecv(ops))
    for p, bufs in zip(params, got):
        total = bufs[0].clone()
        for b in bufs[1:]:
            total += b
        p.grad = (total / ws).view_as(p.grad)
    return None


# WRONG: the ring average with every dtype promoted into one float64 buffer and cast back
# ("one ring call instead of one per dtype").
def ring_avg_one_float64_buffer(model):
    params = [p for p in model.parameters() if p.grad is not None]
    if not params:
        return None
    flat = torch.cat([p.grad.reshape(-1).double() for p in params])
    ring_all_reduce(flat)
    flat /= dist.get_world_size()
    for p, piece in zip(params, flat.split([p.grad.numel() for p in params])):
        p.grad.copy_(piece.view_as(p.grad).to(p.grad.dtype))
    return None


# WRONG: DDP's default first bucket (1 MiB) where the docstring's plan has none.
def bucketed_ddp_first_bucket(model, bucket_bytes):
    params = [p for p in model.parameters() if p.grad is not None]
    for bucket in plan_buckets(params, bucket_bytes, first_bucket_bytes=1 << 20):
        grads = [p.grad for p in bucket]
        flat = torch.cat([g.reshape(-1) for g in grads])
        ring_all_reduce(flat)
        flat /= dist.get_world_size()
        for g, piece in zip(grads, flat.split([g.numel() for g in grads])):
            g.copy_(piece.view_as(g))
    return None


# WRONG: buckets in forward order (the plan reversed: "same buckets, any order").
def bucketed_forward_order(model, bucket_bytes):
    params = [p for p in model.parameters() if p.grad is not None]
    for bucket in reversed(plan_buckets(params, bucket_bytes)):
        grads = [p.grad for p in bucket]
        flat = torch.cat([g.reshape(-1) for g in grads])
        ring_all_reduce(flat)
        flat /= dist.get_world_size()
        for g, piece in zip(grads, flat.split([g.numel() for g in grads])):
            g.copy_(piece.view_as(g))
    return None
