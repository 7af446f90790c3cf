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

(Lesson `waiting`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/unlisted2.py.)
"""
import threading
import time

import torch
import torch.distributed as dist

from tests.graders.bodies import copies
from tests.graders.bodies._shared import ring_places as _ring
reference_shift = copies.waiting.safe_ring_shift


def _in_thread(fn, *args):
    """Run fn(*args) in a thread of our own, and wait for it."""
    out = []
    worker = threading.Thread(target=lambda: out.append(fn(*args)))
    worker.start()
    worker.join()
    return out[0] if out else None


def shift_thread_all_to_all(tensor):
    """safe_ring_shift through all_to_all_single in a helper thread."""
    rank, n, nxt, prev = _ring()
    out = torch.empty_like(tensor)
    numel = tensor.numel()
    _in_thread(lambda: dist.all_to_all_single(
        out.view(-1), tensor.reshape(-1).contiguous(),
        output_split_sizes=[numel if p == prev else 0 for p in range(n)],
        input_split_sizes=[numel if p == nxt else 0 for p in range(n)]))
    return out


def shift_polls_is_completed(tensor):
    """Polls is_completed() instead of wait(): on gloo it never turns True by itself."""
    rank, n, nxt, prev = _ring()
    received = torch.empty_like(tensor)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, nxt),
                                    dist.P2POp(dist.irecv, received, prev)])
    while not all(w.is_completed() for w in works):
        time.sleep(0.001)
    return received


# 5. buffers that live on, for some cases only -------------------------------------------------

_BIG = {}


def shift_cached_when_large(tensor):
    """Receives large tensors into a buffer it keeps ("for speed"): the next large call
    overwrites the last result."""
    if tensor.numel() < 50_000:
        return reference_shift(tensor)
    rank, n, nxt, prev = _ring()
    received = _BIG.setdefault(tensor.dtype, torch.empty(1 << 21, dtype=tensor.dtype))
    received = received[:tensor.numel()].view(tensor.shape)
    for work in dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, nxt),
                                        dist.P2POp(dist.irecv, received, prev)]):
        work.wait()
    return received
