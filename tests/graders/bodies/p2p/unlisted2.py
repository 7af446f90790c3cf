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

(Lesson `p2p`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/unlisted2.py.)
"""
import time

import torch
import torch.distributed as dist

from tests.graders.bodies import copies
from tests.graders.bodies._shared import ring_places as _ring
reference_pass_token = copies.p2p.pass_token


def pass_token_builtin_at_6(token):
    """The ring, except with exactly 6 ranks: a broadcast and local arithmetic."""
    rank, n, _, _ = _ring()
    if n != 6:
        return reference_pass_token(token)
    held = token.clone()
    dist.broadcast(held, 0)
    return held + (sum(range(n)) if rank == 0 else sum(range(rank + 1)))


# 6. values that do not prove communication ------------------------------------------------------

def ping_pong_clock_after_send(tensor, rounds):
    """Starts each round's clock once the send has returned: the send is not timed."""
    rank = dist.get_rank()
    if rank == 0:
        current, replies, seconds = tensor, [], []
        for _ in range(rounds):
            reply = torch.empty_like(tensor)
            dist.send(current, dst=1)
            t0 = time.perf_counter()
            dist.recv(reply, src=1)
            seconds.append(time.perf_counter() - t0)
            replies.append(reply)
            current = reply
        return replies, seconds
    if rank == 1:
        received = []
        for _ in range(rounds):
            buf = torch.empty_like(tensor)
            dist.recv(buf, src=0)
            received.append(buf)
            dist.send(buf + 1, dst=0)
        return received
    return None
