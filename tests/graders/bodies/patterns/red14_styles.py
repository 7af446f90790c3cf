"""Round 14 (ours): correct bodies in styles a learner picks from other sources (blocking
calls in pairs, one isend/irecv per call, forwards waited at the end, torch's own flatten
helpers), where the contract leaves the style free: each must pass.

(Lesson `patterns`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red14_styles.py.)
"""
import torch
import torch.distributed as dist



# RIGHT: rotate_kv with k and v packed in one P2POp list built in a loop, receives first.
def rotate_kv_loop(k, v):
    rank, n = dist.get_rank(), dist.get_world_size()
    fresh = [torch.empty_like(k), torch.empty_like(v)]
    ops = [dist.P2POp(dist.irecv, t, (rank - 1) % n) for t in fresh] + \
          [dist.P2POp(dist.isend, t, (rank + 1) % n) for t in (k, v)]
    return fresh[0], fresh[1], dist.batch_isend_irecv(ops)
