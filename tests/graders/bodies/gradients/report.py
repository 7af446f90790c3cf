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


def all_to_all_sums_halves_in_bfloat16(model):
    """Every gradient to every peer in its own dtype (the method's messages), but the 16-bit
    ones added up in bfloat16: right for bfloat16, float16's 11 bits rounded to 8."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    params = [p for p in model.parameters() if p.grad is not None]
    if ws == 1:
        return None
    sent = [p.grad.contiguous() for p in params]
    received = [[g if peer == rank else torch.empty_like(g) for peer in range(ws)]
                for g in sent]
    ops = [dist.P2POp(op, g if op is dist.isend else bufs[peer], peer)
           for g, bufs in zip(sent, received) for peer in range(ws) if peer != rank
           for op in (dist.isend, dist.irecv)]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    for p, bufs in zip(params, received):
        adds_in = torch.bfloat16 if p.grad.element_size() == 2 else p.grad.dtype
        total = bufs[0].to(adds_in, copy=True)
        for b in bufs[1:]:                  # rank order: the same bits on every rank
            total += b.to(adds_in)
        p.grad.copy_((total / ws).view_as(p.grad))
    return None
