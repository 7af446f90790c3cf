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

(Lesson `p2p`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/unlisted.py.)
"""
import torch
import torch.distributed as dist

from tests.graders.bodies._shared import ring_places as _ring


def pass_token_star_any_source(token):
    """A star through rank 0 with any-source receives: right values, not a ring."""
    rank, n, _, _ = _ring()
    if n == 1:
        return token.clone()
    held = torch.empty_like(token)
    if rank == 0:
        for _ in range(n - 1):
            dist.recv(held)                    # from any source: whoever is ready
        for peer in range(1, n):
            dist.send(token, peer)
        return token + sum(range(n))
    dist.send(token, 0)
    dist.recv(held, 0)
    return held + sum(range(rank + 1))
