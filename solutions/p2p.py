"""Reference solutions for lesson 01 (labs/p2p.py)."""
import time

import torch
import torch.distributed as dist


def ping_pong(tensor, rounds):
    """Ranks 0 and 1 bounce the tensor; rank 1 adds 1 each time."""
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
            dist.send(buf + 1, dst=0)
        return received
    return None


def pass_token(token):
    """0 sends first; everyone else receives, adds its rank, forwards."""
    rank, world_size = dist.get_rank(), dist.get_world_size()
    if world_size == 1:
        return token.clone()
    nxt, prev = (rank + 1) % world_size, (rank - 1) % world_size
    held = torch.empty_like(token)
    if rank == 0:
        dist.send(token, dst=nxt)
        dist.recv(held, src=prev)
        return held
    dist.recv(held, src=prev)
    held += rank
    dist.send(held, dst=nxt)
    return held
