"""Round 12 (red team, a): learner bodies for lessons 01-04 and 08 (p2p, batching, waiting,
deadlocks, snippets), of kinds the earlier rounds did not try: the weight copied out of the
grader's sight by a tensor constructor, gradients that are zero on one rank, metadata
compared without its number of dimensions, and correct bodies in other styles (a helper
thread, scratch buffers, a float64 accumulator, rotated peer orders ...).

(Lesson `p2p`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red12_a.py.)
"""

import torch
import torch.distributed as dist


# -- lesson 01: ping_pong -------------------------------------------------------------------------

# RIGHT: rank 1 receives every round into ONE buffer of its own and keeps a clone of it
# (each returned tensor is new); the reply is computed from that buffer.
def ping_pong_one_buffer_cloned(tensor, rounds):
    import time
    rank = dist.get_rank()
    if rank == 0:
        current, replies, seconds = tensor, [], []
        for _ in range(rounds):
            reply = torch.empty_like(tensor)
            t0 = time.perf_counter()
            dist.send(current, dst=1)
            dist.recv(reply, src=1)
            seconds.append(time.perf_counter() - t0)
            replies.append(reply)
            current = reply
        return replies, seconds
    if rank == 1:
        buf, received = torch.empty_like(tensor), []
        for _ in range(rounds):
            dist.recv(buf, src=0)
            received.append(buf.clone())
            dist.send(buf + 1, dst=0)
        return received
    return None


# -- more of lesson 01: ping_pong
# -------------------------------------------------------------------

# RIGHT: rank 0 receives every reply into a row of one (rounds, ...) tensor it allocates per
# call: the replies are views that never overlap, new memory each call.
def ping_pong_replies_in_one_buffer(tensor, rounds):
    import time
    rank = dist.get_rank()
    if rank == 0:
        rows = torch.empty((rounds, *tensor.shape), dtype=tensor.dtype)
        current, seconds = tensor, []
        for r in range(rounds):
            t0 = time.perf_counter()
            dist.send(current, dst=1)
            dist.recv(rows[r], src=1)
            seconds.append(time.perf_counter() - t0)
            current = rows[r]
        return list(rows.unbind(0)), seconds
    if rank == 1:
        received = []
        for _ in range(rounds):
            buf = torch.empty_like(tensor)
            dist.recv(buf, src=0)
            received.append(buf)
            dist.send(buf + 1, dst=0)
        return received
    return None


# -- more, values the grader's inputs never reach --------------------------------------------------

# WRONG: adds the rank in float32 "so that every dtype works", except int64 ("too wide for
# float32"): an int32 token above 2**24 loses its low bits. The grader's int32 tokens are
# below 1000, where float32 is exact.
def pass_token_adds_in_float32_except_int64(token):
    rank, ws = dist.get_rank(), dist.get_world_size()
    if ws == 1:
        return token.clone()
    nxt, prev = (rank + 1) % ws, (rank - 1) % ws
    held = torch.empty_like(token)
    if rank == 0:
        dist.send(token, dst=nxt)
        dist.recv(held, src=prev)
        return held
    dist.recv(held, src=prev)
    if held.dtype in (torch.int64, torch.float64):
        held = held + rank
    else:
        held = (held.to(torch.float32) + rank).to(token.dtype)
    dist.send(held, dst=nxt)
    return held
