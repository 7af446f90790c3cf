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

(Lesson `waiting`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/unlisted.py.)
"""
import torch
import torch.distributed as dist

from tests.graders.bodies import copies
from tests.graders.bodies._shared import ring_places as _ring
reference_shift = copies.waiting.safe_ring_shift


def shift_all_to_all(tensor):
    """safe_ring_shift's values from all_to_all_single with uneven splits."""
    rank, n, nxt, prev = _ring()
    out = torch.empty_like(tensor)
    numel = tensor.numel()
    dist.all_to_all_single(out.view(-1), tensor.reshape(-1).contiguous(),
                           output_split_sizes=[numel if p == prev else 0 for p in range(n)],
                           input_split_sizes=[numel if p == nxt else 0 for p in range(n)])
    return out


# 5. waiting -----------------------------------------------------------------------------------------

def shift_sends_never_waited(tensor):
    """Waits for the receive only; the send's request is dropped."""
    _, _, nxt, prev = _ring()
    received = torch.empty_like(tensor)
    send, recv = dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, nxt),
                                         dist.P2POp(dist.irecv, received, prev)])
    recv.wait()
    return received


# 6. buffers that live on --------------------------------------------------------------------------

_KEPT = {}


def shift_cached_result(tensor):
    """Receives into a buffer it keeps: the next call overwrites the last result."""
    _, _, nxt, prev = _ring()
    key = (tuple(tensor.shape), tensor.dtype)
    received = _KEPT.setdefault(key, torch.empty_like(tensor))
    for work in dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, nxt),
                                        dist.P2POp(dist.irecv, received, prev)]):
        work.wait()
    return received


# 8. right, in other styles -------------------------------------------------------------------------

def shift_with_barrier(tensor):
    """Correct, with an extra barrier that moves no data."""
    dist.barrier()
    return reference_shift(tensor)


def step_multi_dot(block, weight, recv_buf):
    """Correct overlap, the product written with torch.linalg.multi_dot."""
    rank, n, nxt, prev = _ring()
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, block, nxt),
                                    dist.P2POp(dist.irecv, recv_buf, prev)])
    product = torch.linalg.multi_dot([block, weight])
    for work in works:
        work.wait()
    return product
