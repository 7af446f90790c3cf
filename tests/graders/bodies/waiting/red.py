"""Red-team bodies for lesson 03 (safe_ring_shift, overlapped_step), as they were
written; listed in tests/harness/catalogue/."""

import torch
import torch.distributed as dist

from tests.graders.bodies._shared import neighbours as _ring


# ---------------------------------------------------------------- WRONG
def step_float32_product(block, weight, recv_buf):
    """WRONG: the product computed in float32 and cast back (float64 blocks lose precision)."""
    nxt, prev = _ring()
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, block, nxt),
                                    dist.P2POp(dist.irecv, recv_buf, prev)])
    product = (block.float() @ weight.float()).to(block.dtype)
    for w in works:
        w.wait()
    return product


# ---------------------------------------------------------------- RIGHT


def step_type_as_first(block, weight, recv_buf):
    """RIGHT: aligns the weight's dtype with the block first (a common idiom, a no-op
    here), then posts, computes in flight, waits."""
    weight = weight.type_as(block)
    nxt, prev = _ring()
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, block, nxt),
                                    dist.P2POp(dist.irecv, recv_buf, prev)])
    product = block @ weight
    for w in works:
        w.wait()
    return product


def step_shape_check_first(block, weight, recv_buf):
    """RIGHT: validates its inputs first (torch.result_type of block and weight must
    match, shapes must chain), then the lesson's overlap."""
    if torch.result_type(block, weight) != block.dtype or block.shape[1] != weight.shape[0]:
        raise ValueError("block and weight do not chain")
    nxt, prev = _ring()
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, block, nxt),
                                    dist.P2POp(dist.irecv, recv_buf, prev)])
    product = block @ weight
    for w in works:
        w.wait()
    return product
