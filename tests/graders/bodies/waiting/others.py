"""Correct bodies in other styles than solutions/, second round: what a correct learner may
write and the contract allows. Each must pass its grader: blocking calls where allowed,
several batches where allowed, extra synchronisation that moves no data, tags, another
order inside a round, waiting through a future, a contiguous staging buffer, `.data`,
the process group passed explicitly, other torch functions for the arithmetic.

(Lesson `waiting`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/others.py.)
"""

import torch
import torch.distributed as dist

from tests.graders.bodies._shared import ring_places as _ring


# lesson 03 ------------------------------------------------------------------------------------

def shift_monitored_barrier_reverse_waits(tensor):
    """Waits in reverse order, a monitored barrier before and after."""
    rank, n, nxt, prev = _ring()
    dist.monitored_barrier()
    out = torch.empty_like(tensor)
    works = dist.batch_isend_irecv([dist.P2POp(dist.irecv, out, prev),
                                    dist.P2POp(dist.isend, tensor, nxt)])
    for work in reversed(works):
        work.wait()
    dist.monitored_barrier()
    return out


def step_einsum_tagged(block, weight, recv_buf):
    """A tag, the product with einsum, each request waited with a timeout."""
    from datetime import timedelta
    rank, n, nxt, prev = _ring()
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, block, nxt, tag=3),
                                    dist.P2POp(dist.irecv, recv_buf, prev, tag=3)])
    product = torch.einsum("nk,km->nm", block, weight)
    for work in works:
        work.wait(timeout=timedelta(seconds=30))
    return product
