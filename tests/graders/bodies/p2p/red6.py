"""Red team I: lesson 01 bodies."""
import time

import torch
import torch.distributed as dist


def ping_pong_do_while(tensor, rounds):
    """WRONG: a do-while loop: it always bounces at least once, so rounds=0 returns one
    reply (and one time) instead of none; the graders' rounds are 3, 1, 4, 2 only."""
    rank = dist.get_rank()
    if rank == 0:
        current, replies, seconds = tensor, [], []
        while True:
            reply = torch.empty_like(tensor)
            t0 = time.perf_counter()
            dist.send(current, dst=1)
            dist.recv(reply, src=1)
            seconds.append(time.perf_counter() - t0)
            replies.append(reply)
            current = reply
            if len(replies) >= rounds:
                return replies, seconds
    if rank == 1:
        received = []
        while True:
            buf = torch.empty_like(tensor)
            dist.recv(buf, src=0)
            received.append(buf)
            dist.send(buf + 1, dst=0)
            if len(received) >= rounds:
                return received
    return None


def ping_pong_int_via_float(tensor, rounds):
    """WRONG: rank 1 adds 1 to integer tensors through float32 ("any numeric dtype"):
    int64 values beyond 2**24 come back rounded (16777217 -> 16777218). The graders'
    int64 values are small."""
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
        received = []
        for _ in range(rounds):
            buf = torch.empty_like(tensor)
            dist.recv(buf, src=0)
            received.append(buf)
            bumped = buf + 1 if buf.is_floating_point() else (buf.float() + 1).to(buf.dtype)
            dist.send(bumped, dst=0)
        return received
    return None


def ping_pong_final_barrier(tensor, rounds):
    """RIGHT: the reference, plus a dist.barrier() on every rank at the end (the contract
    says every rank calls it; a barrier moves no data)."""
    rank = dist.get_rank()
    out = None
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
        out = (replies, seconds)
    elif rank == 1:
        received = []
        for _ in range(rounds):
            buf = torch.empty_like(tensor)
            dist.recv(buf, src=0)
            received.append(buf)
            dist.send(buf + 1, dst=0)
        out = received
    dist.barrier()
    return out


def pass_token_prepost(token):
    """RIGHT: rank 0 pre-posts its irecv from the last rank, then sends (blocking), then
    waits; the others receive, add, send (blocking)."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    if ws == 1:
        return token.clone()
    nxt, prev = (rank + 1) % ws, (rank - 1) % ws
    held = torch.empty_like(token)
    if rank == 0:
        work = dist.irecv(held, src=prev)
        dist.send(token, dst=nxt)
        work.wait()
        return held
    dist.recv(held, src=prev)
    held += rank
    dist.send(held, dst=nxt)
    return held


def pass_token_barrier_first(token):
    """RIGHT: the reference preceded by a dist.barrier() on every rank (all ranks call
    pass_token; a barrier moves no data)."""
    dist.barrier()
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
    held += rank
    dist.send(held, dst=nxt)
    return held
