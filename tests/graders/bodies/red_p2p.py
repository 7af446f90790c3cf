"""Probe bodies for lesson 01 (ping_pong, pass_token)."""
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


def pp_float32_add(tensor, rounds):
    """WRONG: rank 1 adds 1 in float32 and casts back: float64 values lose precision,
    int64 values above 2**24 come back wrong."""
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
        got = []
        for _ in range(rounds):
            b = torch.empty_like(tensor)
            dist.recv(b, 0)
            got.append(b)
            dist.send((b.float() + 1).to(b.dtype), 0)
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


def pp_sends_start_every_round(tensor, rounds):
    """WRONG: rank 0 sends `tensor` every round instead of the last reply."""
    rank = dist.get_rank()
    if rank == 0:
        replies, secs = [], []
        for _ in range(rounds):
            r = torch.empty_like(tensor)
            t0 = time.perf_counter()
            dist.send(tensor, 1)
            dist.recv(r, 1)
            secs.append(time.perf_counter() - t0)
            replies.append(r)
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


def pp_cumulative_seconds(tensor, rounds):
    """WRONG: seconds since the start, not per round."""
    rank = dist.get_rank()
    if rank == 0:
        cur, replies, secs = tensor, [], []
        t0 = time.perf_counter()
        for _ in range(rounds):
            r = torch.empty_like(tensor)
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


def pp_rank1_inplace_reply(tensor, rounds):
    """WRONG: rank 1 adds 1 in place to the buffer it keeps in its list."""
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
        got = []
        for _ in range(rounds):
            b = torch.empty_like(tensor)
            dist.recv(b, 0)
            got.append(b)
            b += 1
            dist.send(b, 0)
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


def pt_counter_clockwise(token):
    """WRONG: the token goes 0 -> n-1 -> ... -> 1 -> 0."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    if ws == 1:
        return token.clone()
    nxt, prev = (rank - 1) % ws, (rank + 1) % ws
    held = torch.empty_like(token)
    if rank == 0:
        dist.send(token, nxt)
        dist.recv(held, prev)
        return held
    dist.recv(held, prev)
    held += rank
    dist.send(held, nxt)
    return held


def pt_rank0_adds_zero_inplace(token):
    """WRONG: rank 0 receives the token back into `token` itself and returns a copy."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    if ws == 1:
        return token.clone()
    nxt, prev = (rank + 1) % ws, (rank - 1) % ws
    if rank == 0:
        dist.send(token, nxt)
        dist.recv(token, prev)
        return token.clone()
    held = torch.empty_like(token)
    dist.recv(held, prev)
    held += rank
    dist.send(held, nxt)
    return held


# ---------------------------------------------------------------- RIGHT
def pp_single_op_batches(tensor, rounds):
    """RIGHT: every message through its own one-op batch_isend_irecv."""
    rank = dist.get_rank()
    if rank > 1:
        return None
    peer = 1 - rank
    cur, out, secs = tensor, [], []
    for _ in range(rounds):
        buf = tensor.new_empty(tensor.shape)
        if rank == 0:
            t0 = time.perf_counter()
            for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, cur, peer)]):
                w.wait()
            for w in dist.batch_isend_irecv([dist.P2POp(dist.irecv, buf, peer)]):
                w.wait()
            secs.append(time.perf_counter() - t0)
            cur = buf
        else:
            for w in dist.batch_isend_irecv([dist.P2POp(dist.irecv, buf, peer)]):
                w.wait()
            for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, buf.add(1), peer)]):
                w.wait()
        out.append(buf)
    return (out, secs) if rank == 0 else out


def pp_recursive(tensor, rounds):
    """RIGHT: recursion instead of a loop; receive buffer via torch.empty(shape, dtype)."""
    rank = dist.get_rank()
    if rank > 1:
        return None

    def zero(cur, n):
        if n == 0:
            return [], []
        buf = torch.empty(tensor.shape, dtype=tensor.dtype)
        t0 = time.perf_counter()
        dist.send(cur, dst=1)
        dist.recv(buf, src=1)
        dt = time.perf_counter() - t0
        rest, secs = zero(buf, n - 1)
        return [buf] + rest, [dt] + secs

    if rank == 0:
        return zero(tensor, rounds)
    got = []
    for _ in range(rounds):
        buf = torch.empty(tensor.shape, dtype=tensor.dtype)
        dist.recv(buf, src=0)
        got.append(buf)
        dist.send(torch.add(buf, 1), dst=0)
    return got


def pt_any_source_ring(token):
    """RIGHT?: the ring, receives with src=None (only the previous rank ever sends to us)."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    if ws == 1:
        return token.clone()
    held = torch.empty_like(token)
    if rank == 0:
        dist.send(token, 1)
        dist.recv(held)
        return held
    dist.recv(held)
    held += rank
    dist.send(held, (rank + 1) % ws)
    return held


def pt_isend_then_recv(token):
    """RIGHT: rank 0 isends, receives (blocking), then waits for the send; the others
    use irecv().wait() and a functional add."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    if ws == 1:
        return torch.clone(token)
    if rank == 0:
        w = dist.isend(token, dst=1)
        back = torch.zeros_like(token)
        dist.recv(back, src=ws - 1)
        w.wait()
        return back
    got = torch.zeros_like(token)
    dist.irecv(got, src=rank - 1).wait()
    out = got + rank
    dist.send(out, dst=(rank + 1) % ws)
    return out


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


def pp_rank1_first_reply_only(tensor, rounds):
    """WRONG: rank 1 replies from what arrived, but returns [first arrival] + replies it
    sent minus 1 computed... i.e. its list is built from its OWN replies, not arrivals."""
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
        sent = []
        for _ in range(rounds):
            b = torch.empty_like(tensor)
            dist.recv(b, 0)
            reply = b + 1
            sent.append(reply)
            dist.send(reply, 0)
        return [s - 1 for s in sent]
    return None
