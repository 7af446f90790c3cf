"""Issue 44's learner bodies: messages that must name the cause (what the body did, in the
lesson's words), and correct bodies a probe once rejected.

(Lesson `patterns`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/causes.py.)
"""
import torch
import torch.distributed as dist

from tests.graders.bodies._shared import neighbours as _ring


# ---- rotate_kv: right on gloo, wrong on NCCL ---------------------------------------------------

def rotate_tags_reordered(k, v):
    """K and V told apart by tags, the receives posted v first: gloo pairs by tag (right),
    NCCL by order (k arrives in v_next)."""
    nxt, prev = _ring()
    k_next, v_next = torch.empty_like(k), torch.empty_like(v)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, k, nxt, tag=1),
                                    dist.P2POp(dist.isend, v, nxt, tag=2),
                                    dist.P2POp(dist.irecv, v_next, prev, tag=2),
                                    dist.P2POp(dist.irecv, k_next, prev, tag=1)])
    return k_next, v_next, works


def rotate_tags_sends_reordered(k, v):
    """The same the other way: the sends v first, the receives k first, tags to match."""
    nxt, prev = _ring()
    k_next, v_next = torch.empty_like(k), torch.empty_like(v)
    works = dist.batch_isend_irecv([dist.P2POp(dist.irecv, k_next, prev, tag=7),
                                    dist.P2POp(dist.irecv, v_next, prev, tag=9),
                                    dist.P2POp(dist.isend, v, nxt, tag=9),
                                    dist.P2POp(dist.isend, k, nxt, tag=7)])
    return k_next, v_next, works
