"""Red-team bodies for lesson 01 (ping_pong, pass_token), as they were
written; listed in tests/harness/catalogue/."""
import time

import torch
import torch.distributed as dist


# ---------------------------------------------------------------- WRONG
def pp_fixed_three(tensor, rounds):
    """WRONG: ignores `rounds`, always 3 rounds (the number the learner tried)."""
    rank = dist.get_rank()
    rounds = 3
    if rank == 0:
        cur, replies, secs = tensor, [], []
        for _ in range(rounds):
            r = torch.empty_like(tensor)
            t0 = time.perf_counter()
            dist.send(cur, 1)
            dist.recv(r, 1)
            secs.append(time.perf_counter() - t0)
            replies.append(r)
            cur = r
        return replies, secs
    if rank == 1:
        got = []
        for _ in range(rounds):
            b = torch.empty_like(tensor)
            dist.recv(b, 0)
            got.append(b)
            dist.send(b + 1, 0)
        return got
    return None


def pp_avg_seconds(tensor, rounds):
    """WRONG: one clock around the whole loop, each round reported as the average."""
    rank = dist.get_rank()
    if rank == 0:
        cur, replies = tensor, []
        t0 = time.perf_counter()
        for _ in range(rounds):
            r = torch.empty_like(tensor)
            dist.send(cur, 1)
            dist.recv(r, 1)
            replies.append(r)
            cur = r
        total = time.perf_counter() - t0
        return replies, [total / rounds] * rounds
    if rank == 1:
        got = []
        for _ in range(rounds):
            b = torch.empty_like(tensor)
            dist.recv(b, 0)
            got.append(b)
            dist.send(b + 1, 0)
        return got
    return None


def pp_rank1_from_first(tensor, rounds):
    """WRONG: rank 1 receives every round, but replies and returns values computed from
    the FIRST arrival only (first + r), ignoring what later arrived."""
    rank = dist.get_rank()
    if rank == 0:
        cur, replies, secs = tensor, [], []
        for _ in range(rounds):
            r = torch.empty_like(tensor)
            t0 = time.perf_counter()
            dist.send(cur, 1)
            dist.recv(r, 1)
            secs.append(time.perf_counter() - t0)
            replies.append(r)
            cur = r
        return replies, secs
    if rank == 1:
        got, first = [], None
        for i in range(rounds):
            b = torch.empty_like(tensor)
            dist.recv(b, 0)
            if first is None:
                first = b
            got.append(first + i)
            dist.send(first + i + 1, 0)
        return got
    return None


def pp_local_beyond_two(tensor, rounds):
    """WRONG: with more than 2 ranks rank 0 returns replies it computes (current + 1),
    not what arrived (the probe only runs with 2 ranks)."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        cur, replies, secs = tensor, [], []
        for _ in range(rounds):
            r = torch.empty_like(tensor)
            t0 = time.perf_counter()
            dist.send(cur, 1)
            dist.recv(r, 1)
            secs.append(time.perf_counter() - t0)
            mine = cur + 1 if ws > 2 else r
            replies.append(mine)
            cur = mine
        return replies, secs
    if rank == 1:
        got = []
        for _ in range(rounds):
            b = torch.empty_like(tensor)
            dist.recv(b, 0)
            got.append(b)
            dist.send(b + 1, 0)
        return got
    return None


def pp_int_dtypes_local(tensor, rounds):
    """WRONG: for integer tensors rank 0 returns current + 1 (exact anyway, it thinks),
    not the reply that arrived (the probe uses float32 only)."""
    rank = dist.get_rank()
    if rank == 0:
        cur, replies, secs = tensor, [], []
        for _ in range(rounds):
            r = torch.empty_like(tensor)
            t0 = time.perf_counter()
            dist.send(cur, 1)
            dist.recv(r, 1)
            secs.append(time.perf_counter() - t0)
            mine = r if tensor.is_floating_point() else cur + 1
            replies.append(mine)
            cur = mine
        return replies, secs
    if rank == 1:
        got = []
        for _ in range(rounds):
            b = torch.empty_like(tensor)
            dist.recv(b, 0)
            got.append(b)
            dist.send(b + 1, 0)
        return got
    return None


def pt_local_beyond_three(token):
    """WRONG: the token goes round, but with 4+ ranks rank 0 returns the sum it computes
    (the probe runs with 2 and 3 ranks only)."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    if ws == 1:
        return token.clone()
    nxt, prev = (rank + 1) % ws, (rank - 1) % ws
    held = torch.empty_like(token)
    if rank == 0:
        dist.send(token, nxt)
        dist.recv(held, prev)
        return held if ws <= 3 else token + sum(range(ws))
    dist.recv(held, prev)
    held += rank
    dist.send(held, nxt)
    return held


# ---------------------------------------------------------------- RIGHT


def pp_fake_seconds(tensor, rounds):
    """WRONG: never times anything; reports a made-up 80 ms per round."""
    rank = dist.get_rank()
    if rank == 0:
        cur, replies = tensor, []
        for _ in range(rounds):
            r = torch.empty_like(tensor)
            dist.send(cur, 1)
            dist.recv(r, 1)
            replies.append(r)
            cur = r
        return replies, [0.08] * rounds
    if rank == 1:
        got = []
        for _ in range(rounds):
            b = torch.empty_like(tensor)
            dist.recv(b, 0)
            got.append(b)
            dist.send(b + 1, 0)
        return got
    return None


