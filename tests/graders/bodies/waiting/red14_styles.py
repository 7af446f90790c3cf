"""Round 14 (ours): correct bodies in styles a learner picks from other sources (blocking
calls in pairs, one isend/irecv per call, forwards waited at the end, torch's own flatten
helpers), where the contract leaves the style free: each must pass.

(Lesson `waiting`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red14_styles.py.)
"""
import torch
import torch.distributed as dist



# RIGHT: the safe shift with the receive first in the batch, waited in reverse order.
def shift_recv_first(tensor):
    rank, n = dist.get_rank(), dist.get_world_size()
    out = torch.empty_like(tensor)
    works = dist.batch_isend_irecv([dist.P2POp(dist.irecv, out, (rank - 1) % n),
                                    dist.P2POp(dist.isend, tensor, (rank + 1) % n)])
    for w in reversed(works):
        w.wait()
    return out
