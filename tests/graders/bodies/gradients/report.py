"""Lesson 06, issue 52 items 4 and 9: bodies whose fault must be told one way, whatever the
world size (labs/harness/grading/evidence.py)."""
import torch
import torch.distributed as dist

from solutions.ring import ring_all_reduce


def bucketed_counts_elements(model, bucket_bytes):
    """DDP's plan, but a bucket closed once it holds >= bucket_bytes ELEMENTS, not bytes:
    right values, fewer and larger buckets than the plan's (one bug at every world size)."""
    buckets, filling = [], {}
    for p in reversed([p for p in model.parameters() if p.grad is not None]):
        grads = filling.setdefault(p.dtype, [])
        grads.append(p.grad)
        if sum(g.numel() for g in grads) >= bucket_bytes:
            buckets.append(filling.pop(p.dtype))
    for grads in buckets + list(filling.values()):
        flat = torch.cat([g.reshape(-1) for g in grads])
        ring_all_reduce(flat)
        flat /= dist.get_world_size()
        for g, piece in zip(grads, flat.split([g.numel() for g in grads])):
            g.copy_(piece.view_as(g))
