"""Correct bodies in other styles than solutions/, second round: what a correct learner may
write and the contract allows. Each must pass its grader: blocking calls where allowed,
several batches where allowed, extra synchronisation that moves no data, tags, another
order inside a round, waiting through a future, a contiguous staging buffer, `.data`,
the process group passed explicitly, other torch functions for the arithmetic.

(Lesson `p2p`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/others.py.)
"""
import time

import torch
import torch.distributed as dist



# lesson 01 ------------------------------------------------------------------------------------

def ping_pong_zeros_like_isend(tensor, rounds):
    """isend + wait and irecv + wait, buffers from zeros_like, the clock from time.monotonic."""
    rank = dist.get_rank()
    if rank > 1:
        return None
    current, replies, seconds, received = tensor, [], [], []
    for _ in range(rounds):
        buf = torch.zeros_like(tensor)
        if rank == 0:
            t0 = time.monotonic()
            dist.isend(current, 1).wait()
            dist.irecv(buf, 1).wait()
            seconds.append(time.monotonic() - t0)
            replies.append(buf)
            current = buf
        else:
            dist.irecv(buf, 0).wait()
            received.append(buf)
            dist.isend(buf + 1, 0).wait()
    return (replies, seconds) if rank == 0 else received


def pass_token_tagged_world_group(token):
    """Blocking, a tag of its own, the world group passed explicitly."""
    world = dist.group.WORLD
    rank, n = dist.get_rank(world), dist.get_world_size(world)
    if n == 1:
        return token.detach().clone()
    held = torch.zeros_like(token)
    if rank == 0:
        dist.send(token, (rank + 1) % n, group=world, tag=7)
        dist.recv(held, (rank - 1) % n, group=world, tag=7)
        return held
    dist.recv(held, (rank - 1) % n, group=world, tag=7)
    held.add_(rank)
    dist.send(held, (rank + 1) % n, group=world, tag=7)
    return held
