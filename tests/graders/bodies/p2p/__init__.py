"""Lesson 01 (ping_pong, pass_token): wrong bodies, and correct ones in another style."""
import time

import torch
import torch.distributed as dist

from tests.graders.bodies import copies

reference_pass_token = copies.p2p.pass_token
reference_ping_pong = copies.p2p.ping_pong


def ping_pong_local(tensor, rounds):
    """Right values from one message: rank 1 gets the start once, both compute the rest."""
    rank = dist.get_rank()
    if rank == 0:
        dist.send(tensor, 1)
        return [tensor + r + 1 for r in range(rounds)], [1e-6] * rounds
    if rank == 1:
        start = torch.empty_like(tensor)
        dist.recv(start, 0)
        return [start + r for r in range(rounds)]
    return None


def ping_pong_nonblocking(tensor, rounds):
    """Correct: isend/irecv and wait(), the reply buffer allocated up front."""
    rank = dist.get_rank()
    if rank > 1:
        return None
    out = []
    seconds, current = [], tensor
    for _ in range(rounds):
        buf = torch.empty_like(tensor)
        t0 = time.perf_counter()
        if rank == 0:
            dist.isend(current, 1).wait()
            dist.irecv(buf, 1).wait()
            current = buf
        else:
            dist.irecv(buf, 0).wait()
            dist.isend(buf + 1, 0).wait()
        seconds.append(time.perf_counter() - t0)
        out.append(buf)
    return (out, seconds) if rank == 0 else out


def pass_token_broadcast(token):
    """Right values, from a broadcast: not point to point."""
    rank, world_size = dist.get_rank(), dist.get_world_size()
    start = token.clone()
    dist.broadcast(start, 0)
    return start + (sum(range(world_size)) if rank == 0 else sum(range(rank + 1)))


def pass_token_same_at_one_rank(token):
    """Right everywhere, but with one rank it returns the caller's token itself."""
    rank, world_size = dist.get_rank(), dist.get_world_size()
    if world_size == 1:
        return token
    held = torch.empty_like(token)
    if rank == 0:
        dist.send(token, (rank + 1) % world_size)
        dist.recv(held, world_size - 1)
        return held
    dist.recv(held, rank - 1)
    held += rank
    dist.send(held, (rank + 1) % world_size)
    return held


def pass_token_batched(token):
    """Correct: rank 0 posts its send and its receive in one batch; the others relay."""
    rank, world_size = dist.get_rank(), dist.get_world_size()
    held = token.clone()
    if world_size == 1:
        return held
    if rank == 0:
        for work in dist.batch_isend_irecv([dist.P2POp(dist.isend, token, 1),
                                            dist.P2POp(dist.irecv, held, world_size - 1)]):
            work.wait()
        return held
    dist.irecv(held, rank - 1).wait()
    held.add_(rank)
    dist.isend(held, (rank + 1) % world_size).wait()
    return held


def ping_pong_reply_local(tensor, rounds):
    """Every message travels, but rank 0 returns replies it computed itself."""
    rank = dist.get_rank()
    if rank != 0:
        return reference_ping_pong(tensor, rounds)
    replies, seconds = reference_ping_pong(tensor, rounds)
    return [tensor + r + 1 for r in range(rounds)], seconds


def ping_pong_clock_after_send(tensor, rounds):
    """Right values, but each 'round trip' stops the clock after the send."""
    rank = dist.get_rank()
    if rank != 0:
        return reference_ping_pong(tensor, rounds)
    current, replies, seconds = tensor, [], []
    for _ in range(rounds):
        reply = torch.empty_like(tensor)
        t0 = time.perf_counter()
        dist.send(current, dst=1)
        seconds.append(time.perf_counter() - t0)
        dist.recv(reply, src=1)
        replies.append(reply)
        current = reply
    return replies, seconds


def pass_token_rank0_local(token):
    """The token goes round, but rank 0 returns the sum it computed, not what came back."""
    held = reference_pass_token(token)
    if dist.get_rank() == 0:
        return token + sum(range(dist.get_world_size()))
    return held
