"""More wrong bodies of the second round, one or two per exercise, of the kinds a learner
writes: another door (a subgroup, an object collective, a store), other partners (any
source, a reversed ring, a flood), the bytes of another dtype, a branch on the world size,
requests left behind, a blocking order that hangs at some world sizes only.

(Lesson `waiting`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/unlisted3.py.)
"""
import torch
import torch.distributed as dist

from tests.graders.bodies._shared import ring_places as _ring


def _wait(works):
    for work in works:
        work.wait()


# lesson 03 ------------------------------------------------------------------------------------

def shift_as_bytes(tensor):
    """The race fixed, the tensor moved as raw bytes (uint8)."""
    rank, n, nxt, prev = _ring()
    out = torch.empty_like(tensor)
    _wait(dist.batch_isend_irecv([
        dist.P2POp(dist.isend, tensor.reshape(-1).view(torch.uint8), nxt),
        dist.P2POp(dist.irecv, out.reshape(-1).view(torch.uint8), prev)]))
    return out
