"""Wrong bodies of the second round: the kinds unlisted.py did not cover. Each is a class of
mistake, caught in general (from the record, the reference and the harness's properties),
not because this file lists it.

  1. communication where the record did not look (a thread of the body's own);
  2. a method that never has to happen (comparisons that bound messages from above only);
  3. the method on some cases only (large tensors, world sizes beyond 4);
  4. waiting (requests handed back in part, is_completed polling);
  5. buffers that live on for some cases only;
  6. values that do not prove communication (a clock started after the send);
  7. a contract that raises: data moved first, or a collective instead of the refusal.

(Lesson `patterns`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/unlisted2.py.)
"""

import torch
import torch.distributed as dist

from tests.graders.bodies._shared import ring_places as _ring


# 4. waiting -------------------------------------------------------------------------------------

def rotate_returns_receives_only(k, v):
    """Hands back the receives' requests only: nobody ever waits for the sends."""
    rank, n, nxt, prev = _ring()
    k_next, v_next = torch.empty_like(k), torch.empty_like(v)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, k, nxt),
                                    dist.P2POp(dist.isend, v, nxt),
                                    dist.P2POp(dist.irecv, k_next, prev),
                                    dist.P2POp(dist.irecv, v_next, prev)])
    return k_next, v_next, works[2:]


def rotate_waits_sends_inside(k, v):
    """Waits for the sends inside (through the request under the course's wrapper) and
    hands back the receives: the caller cannot compute while K and V travel."""
    rank, n, nxt, prev = _ring()
    k_next, v_next = torch.empty_like(k), torch.empty_like(v)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, k, nxt),
                                    dist.P2POp(dist.isend, v, nxt),
                                    dist.P2POp(dist.irecv, k_next, prev),
                                    dist.P2POp(dist.irecv, v_next, prev)])
    for work in works[:2]:
        getattr(work, "_work", work).wait()
    return k_next, v_next, works[2:]
