"""Red team 9 (early lessons 01-04, 08): bodies for the p2p, batching, waiting, deadlocks and
snippets graders. Each docstring starts with WRONG (...) or RIGHT: and says why.

(Lesson `p2p`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red9_early.py.)
"""
import time

import torch
import torch.distributed as dist


def ping_pong_rank1_preposts(tensor, rounds):
    """RIGHT: blocking ping-pong, but rank 1 pre-posts the receive of round r+1 before it
    sends reply r (a fresh buffer each round, every request waited, none left at the end)."""
    rank = dist.get_rank()
    if rank == 0:
        current, replies, seconds = tensor, [], []
        for _ in range(rounds):
            reply = torch.empty_like(tensor)
            t0 = time.perf_counter()
            dist.send(current, 1)
            dist.recv(reply, 1)
            seconds.append(time.perf_counter() - t0)
            replies.append(reply)
            current = reply
        return replies, seconds
    if rank != 1:
        return None
    received = []
    buf = torch.empty_like(tensor)
    pending = dist.irecv(buf, 0) if rounds else None
    for r in range(rounds):
        pending.wait()
        received.append(buf)
        reply = buf + 1
        if r + 1 < rounds:
            buf = torch.empty_like(tensor)
            pending = dist.irecv(buf, 0)
        dist.send(reply, 0)
    return received


def ping_pong_pool_of_four(tensor, rounds):
    """WRONG (replies overwritten from round 5 on): rank 0 receives into a pool of at most
    four buffers made per call, reused round-robin; rank 1 likewise. With rounds >= 5 reply
    4 lands in reply 0's memory. The graded calls and probes never run more than 4 rounds."""
    rank = dist.get_rank()
    if rank > 1:
        return None
    pool = [torch.empty_like(tensor) for _ in range(min(rounds, 4))]
    if rank == 0:
        current, replies, seconds = tensor, [], []
        for r in range(rounds):
            reply = pool[r % 4]
            t0 = time.perf_counter()
            dist.send(current, 1)
            dist.recv(reply, 1)
            seconds.append(time.perf_counter() - t0)
            replies.append(reply)
            current = reply
        return replies, seconds
    received = []
    for r in range(rounds):
        buf = pool[r % 4]
        dist.recv(buf, 0)
        received.append(buf)
        dist.send(buf + 1, 0)
    return received
