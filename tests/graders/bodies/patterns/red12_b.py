"""Red team, round 12 (b): ring, gradients, collectives, patterns and algorithms bodies.

New kinds: encodings that are the identity on a constant tensor (the sums probe holds
2**rank everywhere, so a message [x0, x1 - x0, ...] or a permuted chunk looks like the
partial sums), receive buffers sized by the caller's own slot (the grader's all_to_all has
the same size for every peer), a dtype the collectives grader never runs, and correct
bodies in other styles (another chunk owner, strided chunks, a send thread, balanced
segments, torch.stack(...).sum, .grad as views of the reduced buffer).

(Lesson `patterns`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red12_b.py.)
"""

import torch
import torch.distributed as dist



# -- lesson 09: patterns ----------------------------------------------------------------------

# WRONG: rotate_kv that sends half precisions as float32 and returns float32 k_next/v_next (no
# half case is graded).
def rotate_kv_half_widened(k, v):
    rank, ws = dist.get_rank(), dist.get_world_size()
    nxt, prev = (rank + 1) % ws, (rank - 1) % ws

    def wire(t):
        return t.float() if t.dtype in (torch.float16, torch.bfloat16) else t
    ks, vs = wire(k), wire(v)
    k_next, v_next = torch.empty_like(ks), torch.empty_like(vs)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, ks, nxt),
                                    dist.P2POp(dist.isend, vs, nxt),
                                    dist.P2POp(dist.irecv, k_next, prev),
                                    dist.P2POp(dist.irecv, v_next, prev)])
    return k_next, v_next, works
