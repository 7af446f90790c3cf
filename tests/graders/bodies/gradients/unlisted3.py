"""More wrong bodies of the second round, one or two per exercise, of the kinds a learner
writes: another door (a subgroup, an object collective, a store), other partners (any
source, a reversed ring, a flood), the bytes of another dtype, a branch on the world size,
requests left behind, a blocking order that hangs at some world sizes only.

(Lesson `gradients`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/unlisted3.py.)
"""
import torch
import torch.distributed as dist

from tests.graders.bodies import copies
reference_a2a = copies.gradients.average_gradients_all_to_all


def _wait(works):
    for work in works:
        work.wait()


# lesson 06 ------------------------------------------------------------------------------------

def a2a_in_float32(model):
    """Every gradient sent as float32: float64 ones lose bits on the way."""
    rank, n = dist.get_rank(), dist.get_world_size()
    params = [p for p in model.parameters() if p.grad is not None]
    if n == 1:
        return None
    sent = [p.grad.float().contiguous() for p in params]
    received = [[torch.empty_like(g) for _ in range(n)] for g in sent]
    ops = [op for g, bufs in zip(sent, received) for peer in range(n) if peer != rank
           for op in (dist.P2POp(dist.isend, g, peer), dist.P2POp(dist.irecv, bufs[peer], peer))]
    _wait(dist.batch_isend_irecv(ops))
    for p, g, bufs in zip(params, sent, received):
        bufs[rank] = g
        total = bufs[0].clone()
        for b in bufs[1:]:
            total += b
        p.grad.copy_((total / n).to(p.grad.dtype))
    return None


def ring_avg_by_all_to_all(model):
    """average_gradients_ring's values from the all-to-all averaging."""
    return reference_a2a(model)


def bucketed_by_all_to_all(model, bucket_bytes):
    return reference_a2a(model)


# the model's parameters are not the exercise's to change ------------------------------------

def a2a_and_sgd_step(model):
    """Averages the gradients, then takes an optimizer step on the parameters."""
    reference_a2a(model)
    with torch.no_grad():
        for p in model.parameters():
            if p.grad is not None:
                p.add_(p.grad, alpha=-0.1)


def bucketed_and_clip_params(model, bucket_bytes):
    """Averages in DDP's buckets, then clamps the parameters "to be safe"."""
    average_gradients_bucketed = copies.gradients.average_gradients_bucketed
    average_gradients_bucketed(model, bucket_bytes)
    with torch.no_grad():
        for p in model.parameters():
            p.clamp_(-0.5, 0.5)
