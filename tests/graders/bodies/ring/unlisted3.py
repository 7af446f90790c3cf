"""More wrong bodies of the second round, one or two per exercise, of the kinds a learner
writes: another door (a subgroup, an object collective, a store), other partners (any
source, a reversed ring, a flood), the bytes of another dtype, a branch on the world size,
requests left behind, a blocking order that hangs at some world sizes only.

(Lesson `ring`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/unlisted3.py.)
"""
import torch
import torch.distributed as dist

from labs.ring import chunk_bounds
from tests.graders.bodies import copies
from tests.graders.bodies._shared import ring_places as _ring

reference_doubling = copies.algorithms.recursive_doubling_all_reduce
reference_ring = copies.ring.ring_all_reduce


def _wait(works):
    for work in works:
        work.wait()


# lesson 05 ------------------------------------------------------------------------------------

def rs_reversed_ring(tensor):
    """Reduce-scatter around the ring the other way: sends to rank - 1."""
    rank, n, _, _ = _ring()
    flat = tensor.view(-1)
    bounds = chunk_bounds(flat.numel(), n)
    chunks = [flat[a:b] for a, b in bounds]
    if n == 1:
        return chunks[0]
    nxt, prev = (rank - 1) % n, (rank + 1) % n         # the mirror image
    for step in range(n - 1):
        outgoing = chunks[(rank + step + 1) % n]
        target = chunks[(rank + step + 2) % n]
        incoming = torch.empty_like(target)
        _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, outgoing, nxt),
                                      dist.P2POp(dist.irecv, incoming, prev)]))
        target.add_(incoming)
    return chunks[rank]


def ring_doubling_instead(tensor):
    """recursive doubling in place of the ring: whole tensors, other partners."""
    return reference_doubling(tensor)


def ring_blocking_from_5(tensor):
    """The ring up to 4 ranks; from 5 on, blocking sends first everywhere (a deadlock)."""
    rank, n, nxt, prev = _ring()
    if n <= 4:
        return reference_ring(tensor)
    flat = tensor.view(-1)
    incoming = torch.empty_like(flat)
    dist.send(flat, nxt)
    dist.recv(incoming, prev)
    return tensor
