"""Round 14 (ours): correct bodies in styles a learner picks from other sources (blocking
calls in pairs, one isend/irecv per call, forwards waited at the end, torch's own flatten
helpers), where the contract leaves the style free: each must pass.

(Lesson `gradients`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red14_styles.py.)
"""
import torch.distributed as dist

from solutions.ring import ring_all_reduce


# RIGHT: the ring average of gradients through torch's own flatten helpers.
def ring_avg_flatten_dense(model):
    from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors
    by_dtype = {}
    for p in model.parameters():
        if p.grad is not None:
            by_dtype.setdefault(p.grad.dtype, []).append(p)
    for params in by_dtype.values():
        grads = [p.grad for p in params]
        flat = _flatten_dense_tensors(grads)
        ring_all_reduce(flat)     # lesson 05's (solved: the reference stands in for it)
        flat /= dist.get_world_size()
        for g, new in zip(grads, _unflatten_dense_tensors(flat, grads)):
            g.copy_(new)
