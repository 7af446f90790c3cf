"""Second red team (lessons 01-04, 07-09): p2p.py bodies."""
import time

import torch
import torch.distributed as dist

_PAIRS = {}


def pass_token_double_buffered(token):
    """WRONG: the token is received into one of two buffers kept per (shape, dtype), used
    in turn; the third call of a shape overwrites what the first returned."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    if ws == 1:
        return token.clone()
    key = (tuple(token.shape), token.dtype)
    entry = _PAIRS.setdefault(key, [torch.empty_like(token), torch.empty_like(token), 0])
    held = entry[entry[2]]
    entry[2] ^= 1
    nxt, prev = (rank + 1) % ws, (rank - 1) % ws
    if rank == 0:
        dist.send(token, dst=nxt)
        dist.recv(held, src=prev)
        return held
    dist.recv(held, src=prev)
    held += rank
    dist.send(held, dst=nxt)
    return held


def ping_pong_ns_clock(tensor, rounds):
    """RIGHT: perf_counter_ns, buffers from torch.empty(shape, dtype=...), rank 1 replies
    with torch.add(buf, 1), ranks > 1 pass a barrier-free None."""
    rank = dist.get_rank()
    if rank > 1:
        return None
    if rank == 0:
        replies, seconds, current = [], [], tensor
        for _ in range(rounds):
            reply = torch.empty(tensor.shape, dtype=tensor.dtype)
            t0 = time.perf_counter_ns()
            dist.send(current, 1)
            dist.recv(reply, 1)
            seconds.append((time.perf_counter_ns() - t0) / 1e9)
            replies.append(reply)
            current = reply
        return replies, seconds
    got = []
    for _ in range(rounds):
        buf = torch.empty(tensor.shape, dtype=tensor.dtype)
        dist.recv(buf, 0)
        got.append(buf)
        dist.send(torch.add(buf, 1), 0)
    return got


def pass_token_isend_chain(token):
    """RIGHT: every rank posts its irecv first (rank 0 too), rank 0 isends its token,
    others forward with isend after adding; all requests waited."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    if ws == 1:
        return torch.clone(token)
    nxt, prev = (rank + 1) % ws, (rank - 1) % ws
    held = torch.zeros_like(token)
    recv = dist.irecv(held, src=prev)
    if rank == 0:
        send = dist.isend(token, dst=nxt)
        recv.wait()
        send.wait()
        return held
    recv.wait()
    held.add_(rank)
    dist.isend(held, dst=nxt).wait()
    return held
