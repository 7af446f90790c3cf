"""Red-team bodies for lesson 09 (neighbour exchange, rotate_kv), as they were
written; listed in tests/harness/catalogue/."""
import torch
import torch.distributed as dist

from tests.graders.bodies._shared import neighbours as _ring


# ---------------------------------------------------------------- WRONG
def rotate_v_like_k(k, v):
    """WRONG: copy-paste slip: v_next = torch.empty_like(k) (wrong when v's shape or dtype
    differs from k's, e.g. another head dim for values)."""
    nxt, prev = _ring()
    k_next, v_next = torch.empty_like(k), torch.empty_like(k)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, k, nxt),
                                    dist.P2POp(dist.isend, v, nxt),
                                    dist.P2POp(dist.irecv, k_next, prev),
                                    dist.P2POp(dist.irecv, v_next, prev)])
    return k_next, v_next, works


_POOL = {}


# ---------------------------------------------------------------- RIGHT


