"""Wrong bodies of the kinds no grader names, one or more per kind (and right ones in other
styles): each kind is a class of mistake the graders must catch in general, from the
record and the reference, not because this file lists it.

  1. communication the old tracer did not see (process-group methods, coalesced, object and
     functional collectives);
  2. who talks to whom (direct sends to the owner, a star inside a ring, growing messages);
  3. what travels (a wider dtype);
  4. the method on some cases only (a built-in for small tensors);
  5. waiting (sends never waited, waited in part, a buffer written in flight);
  6. buffers that live on (a result the next call overwrites);
  8. right bodies in other styles (an extra barrier, another way to write a product).

(Lesson `collectives`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/unlisted.py.)
"""
import torch
import torch.distributed as dist

from tests.graders.bodies import copies
from tests.graders.bodies._shared import ring_places as _ring

reference_all_gather = copies.collectives.p2p_all_gather


def all_gather_object(tensor):
    """p2p_all_gather through all_gather_object (pickles, then all_gather)."""
    out = [None] * dist.get_world_size()
    dist.all_gather_object(out, tensor)
    return [t.clone() for t in out]


def all_gather_growing(tensor):
    """A 'ring' all-gather whose messages grow: everything received so far, each step."""
    rank, n, nxt, prev = _ring()
    held = tensor.reshape(1, -1).clone()
    for step in range(n - 1):
        incoming = torch.empty((step + 1, tensor.numel()), dtype=tensor.dtype)
        for work in dist.batch_isend_irecv([dist.P2POp(dist.isend, held, nxt),
                                            dist.P2POp(dist.irecv, incoming, prev)]):
            work.wait()
        held = torch.cat([tensor.reshape(1, -1), incoming])
    order = [(rank - i) % n for i in range(n)]
    return [held[order.index(r)].reshape(tensor.shape).clone() for r in range(n)]


_LIST = []


def all_gather_cached_list(tensor):
    """Returns the same list object every call, refilled."""
    _LIST[:] = reference_all_gather(tensor)
    return _LIST
