"""Red team F: p2p bodies."""
import time

import torch
import torch.distributed as dist


def pass_token_last_adds_all(token):
    """WRONG: ranks 1..W-2 forward the token UNCHANGED (they add nothing to what they send)
    and return a value computed locally (arrived + 1 + ... + r); the last rank adds the
    whole sum 1 + ... + W-1 before sending back. Rank 0's view (the only one the probe
    checks) is right, but the message r -> r+1 is not 'token + 1 + ... + r'."""
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
    mine = held + sum(range(rank + 1))
    dist.send(held + sum(range(ws)) if rank == ws - 1 else held, dst=nxt)
    return mine


def ping_pong_any_source(tensor, rounds):
    """RIGHT: the lesson's blocking bounce, receives with src=None (lesson 01 section 4):
    only rank 0 and rank 1 talk, so nobody else can match them."""
    rank = dist.get_rank()
    if rank == 0:
        current, replies, seconds = tensor, [], []
        for _ in range(rounds):
            reply = torch.empty_like(tensor)
            t0 = time.perf_counter()
            dist.send(current, dst=1)
            dist.recv(reply)
            seconds.append(time.perf_counter() - t0)
            replies.append(reply)
            current = reply
        return replies, seconds
    if rank == 1:
        got = []
        for _ in range(rounds):
            buf = torch.empty_like(tensor)
            dist.recv(buf)
            got.append(buf)
            dist.send(buf + 1, dst=0)
        return got
    return None


def pass_token_any_source(token):
    """RIGHT: the reference ring, each receive with src=None: in this ring exactly one rank
    (rank - 1) ever sends to a given rank, so any-source matches the same message."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    if ws == 1:
        return token.clone()
    held = torch.empty_like(token)
    if rank == 0:
        dist.send(token, dst=1)
        dist.recv(held)
        return held
    dist.recv(held)
    held += rank
    dist.send(held, dst=(rank + 1) % ws)
    return held
