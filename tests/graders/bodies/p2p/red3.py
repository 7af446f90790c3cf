"""Third red team (lesson 01, labs/p2p.py): learner bodies, wrong and right."""
import itertools
import time

import torch
import torch.distributed as dist


def ping_pong_round_tags(tensor, rounds):
    """RIGHT: the lesson's blocking bounce, each round's messages tagged with the round
    number (so a late reply can never be taken for the next round's)."""
    rank = dist.get_rank()
    if rank == 0:
        current, replies, seconds = tensor, [], []
        for r in range(rounds):
            reply = torch.empty_like(tensor)
            t0 = time.perf_counter()
            dist.send(current, dst=1, tag=r)
            dist.recv(reply, src=1, tag=r)
            seconds.append(time.perf_counter() - t0)
            replies.append(reply)
            current = reply
        return replies, seconds
    if rank == 1:
        received = []
        for r in range(rounds):
            buf = torch.empty_like(tensor)
            dist.recv(buf, src=0, tag=r)
            received.append(buf)
            dist.send(buf + 1, dst=0, tag=r)
        return received
    return None


def ping_pong_direction_tags(tensor, rounds):
    """RIGHT: PING=1 for 0 -> 1, PONG=2 for 1 -> 0."""
    rank = dist.get_rank()
    if rank == 0:
        current, replies, seconds = tensor, [], []
        for _ in range(rounds):
            reply = torch.empty_like(tensor)
            t0 = time.perf_counter()
            dist.send(current, dst=1, tag=1)
            dist.recv(reply, src=1, tag=2)
            seconds.append(time.perf_counter() - t0)
            replies.append(reply)
            current = reply
        return replies, seconds
    if rank == 1:
        received = []
        for _ in range(rounds):
            buf = torch.empty_like(tensor)
            dist.recv(buf, src=0, tag=1)
            received.append(buf)
            dist.send(buf + 1, dst=0, tag=2)
        return received
    return None


def ping_pong_prepost(tensor, rounds):
    """RIGHT: rank 1 pre-posts the receive of the next round before replying (a common
    latency optimisation); rank 0 blocking."""
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
        buf = torch.empty_like(tensor)
        req = dist.irecv(buf, src=0)
        for r in range(rounds):
            req.wait()
            received.append(buf)
            reply = buf + 1
            if r + 1 < rounds:
                buf = torch.empty_like(tensor)
                req = dist.irecv(buf, src=0)
            dist.send(reply, dst=0)
        return received
    return None


_CALLS = itertools.count(1)




def pass_token_hop_tags(token):
    """RIGHT: each hop tagged with the sender's rank."""
    rank, world_size = dist.get_rank(), dist.get_world_size()
    if world_size == 1:
        return token.clone()
    nxt, prev = (rank + 1) % world_size, (rank - 1) % world_size
    held = torch.empty_like(token)
    if rank == 0:
        dist.send(token, dst=nxt, tag=rank)
        dist.recv(held, src=prev, tag=prev)
        return held
    dist.recv(held, src=prev, tag=prev)
    held += rank
    dist.send(held, dst=nxt, tag=rank)
    return held


def ping_pong_rank1_running_reply(tensor, rounds):
    """WRONG: rank 1 returns what arrived each round, but its reply is a running value it
    keeps itself (the first arrival, plus one per round), not what arrived + 1."""
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
        received, value = [], None
        for _ in range(rounds):
            buf = torch.empty_like(tensor)
            dist.recv(buf, src=0)
            received.append(buf)
            value = buf.clone() if value is None else value
            value = value + 1          # "rank 1 adds 1 each round"
            dist.send(value, dst=0)
        return received
    return None


def ping_pong_rank1_replies_start(tensor, rounds):
    """WRONG (cruder): rank 1 replies first_arrival + r + 1 from a formula."""
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
        for r in range(rounds):
            buf = torch.empty_like(tensor)
            dist.recv(buf, src=0)
            received.append(buf)
            dist.send(received[0] + (r + 1), dst=0)
        return received
    return None


def ping_pong_rank1_isend_waited_last(tensor, rounds):
    """RIGHT: rank 1 replies with isend of a new tensor each round and waits all its sends
    at the end (each reply buffer is never touched again)."""
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
        received, works = [], []
        for _ in range(rounds):
            buf = torch.empty_like(tensor)
            dist.recv(buf, src=0)
            received.append(buf)
            works.append(dist.isend(buf + 1, dst=0))
        for w in works:
            w.wait()
        return received
    return None
