"""Lesson 01 (labs/p2p.py): graders for ping_pong and pass_token.

Besides the values and the method, a partner that behaves differently (a probe) proves that
rank 0's results come from what arrived, not from a local computation: it adds another
number than the lesson's partner would, and takes its time before replying, so that a
round-trip time must include the reply.
"""
import time

import pytest
import torch
import torch.distributed as dist

from labs.harness.grading import (GradeFailure, call, check_close, check_fresh, check_p2p_only,
                                  check_untouched, grade, implementation, p2p_ops, seeded)

# (shape, dtype) cases every grader launch runs one after the other in the same workers.
CASES = [((16,), torch.float32), ((2, 3), torch.int64), ((5,), torch.float64), ((), torch.float32)]
# pass_token also on a large token (the method on every size).
TOKEN_CASES = CASES + [(((1 << 20) + 1,), torch.float32)]


def _case(shape, dtype):
    return f"shape {tuple(shape)}, {str(dtype).removeprefix('torch.')}"


def ping_pong_worker(rank, world_size, impl, rounds):
    ping_pong = implementation(impl, "p2p", "ping_pong")
    # Only rank 0's values matter; the others pass a tensor of the same shape and dtype.
    return [call(ping_pong, seeded(0, shape, dtype, i) if rank == 0
                 else torch.zeros(shape, dtype=dtype), rounds, case=_case(shape, dtype))
            for i, (shape, dtype) in enumerate(CASES)]


def pass_token_worker(rank, world_size, impl):
    pass_token = implementation(impl, "p2p", "pass_token")
    return [call(pass_token, seeded(0, shape, dtype, i) if rank == 0
                 else torch.zeros(shape, dtype=dtype), case=_case(shape, dtype))
            for i, (shape, dtype) in enumerate(TOKEN_CASES)]


@pytest.mark.parametrize("world_size", [2, 3, 4, 5, 6, 7, 8])
def test_ping_pong(impl, world_size):
    rounds = 3
    results = grade(ping_pong_worker, world_size, args=(impl, rounds), what="ping_pong")
    for i, (shape, dtype) in enumerate(CASES):
        what = f"ping_pong({_case(shape, dtype)}, rounds={rounds})"
        start = seeded(0, shape, dtype, i)
        check_untouched(results[0][i], rank=0, what=what, hint="send copies or new tensors instead")
        _check_rank_0(results[0][i].result, start, rounds, what)
        got1 = results[1][i].result
        if not isinstance(got1, list) or len(got1) != rounds:
            raise GradeFailure(f"{what}: rank 1 must return the list of the {rounds} tensors "
                               f"it received, got {got1!r:.80}")
        for r, t in enumerate(got1):
            check_close(t, start + r, rank=1, what=f"{what}, tensor received in round {r}")
        for other in range(2, world_size):
            if results[other][i].result is not None:
                raise GradeFailure(f"{what}: rank {other} takes no part and must return None")
    check_p2p_only(results.trace, "ping_pong", builds="the exchange")
    # Really point to point: each round is one send from 0 to 1 and one from 1 to 0.
    for src, dst in ((0, 1), (1, 0)):
        sends = [e for e in p2p_ops(results.trace, src, ("send", "isend")) if e.peer == dst]
        recvs = [e for e in p2p_ops(results.trace, dst, ("recv", "irecv")) if e.peer in (src, None)]
        expected = rounds * len(CASES)
        if len(sends) < expected or len(recvs) < expected:
            raise GradeFailure(f"ping_pong: expected {expected} messages from rank {src} to "
                               f"rank {dst} over all cases; the trace shows {len(sends)} sends "
                               f"and {len(recvs)} receives. Each reply must travel over the "
                               f"network, not be computed locally.")


PROBE_SLEEP = 0.05      # the probe's pause before each reply: a round trip lasts longer
# ... and before it posts each receive: gloo's send returns once the receive is posted, so a
# clock around the send and the receive sees both pauses; around only one of them, one.
PROBE_LATE_RECV = 0.05


def ping_pong_probe_worker(rank, world_size, impl, rounds):
    """Rank 0: the body under test. Rank 1: a probe that adds 2 (not 1), posts each receive
    late and replies after a pause."""
    body = getattr(implementation(impl, "p2p", "ping_pong"), "body", None)
    tensor = seeded(0, (6,), torch.float32, 7)
    dist.barrier()             # the probe's first pause starts when rank 0 starts
    if rank == 0:
        started = time.perf_counter()
        replies, seconds = (body or implementation(impl, "p2p", "ping_pong"))(tensor, rounds)
        return [r.clone() for r in replies], list(seconds), time.perf_counter() - started
    for _ in range(rounds):
        buf = torch.empty_like(tensor)
        time.sleep(PROBE_LATE_RECV)
        dist.recv(buf, src=0)
        time.sleep(PROBE_SLEEP)
        dist.send(buf + 2, dst=0)
    return None


def pass_token_probe_worker(rank, world_size, impl):
    """Rank 0: the body under test. The others: a probe that adds 10 * rank, not rank."""
    fn = implementation(impl, "p2p", "pass_token")
    body = getattr(fn, "body", fn)
    token = seeded(0, (3,), torch.float32, 5)
    if rank == 0:
        return body(token).clone()
    held = torch.empty_like(token)
    dist.recv(held, src=rank - 1)
    dist.send(held + 10 * rank, dst=(rank + 1) % world_size)
    return None


@pytest.mark.grades("ping_pong")
@pytest.mark.parametrize("world_size", [2])
def test_ping_pong_replies_are_what_arrived(impl, world_size):
    rounds = 3
    replies, seconds, elapsed = grade(ping_pong_probe_worker, world_size, args=(impl, rounds),
                                      what="ping_pong")[0]
    start = seeded(0, (6,), torch.float32, 7)
    for r, reply in enumerate(replies):
        check_close(reply, start + 2 * (r + 1), rank=0, what=(
            f"ping_pong with a partner that adds 2 per round (round {r}): rank 0's replies "
            f"must be what arrived, not computed locally"))
    # Both pauses, or only one: the threshold lies half a pause from each.
    if min(seconds) < (PROBE_SLEEP + PROBE_LATE_RECV) * 0.75 or sum(seconds) > elapsed:
        raise GradeFailure(f"ping_pong: the partner posted each receive "
                           f"{PROBE_LATE_RECV * 1000:g} ms late and paused "
                           f"{PROBE_SLEEP * 1000:g} ms before each reply, and the whole call "
                           f"took {elapsed * 1000:.1f} ms, but "
                           f"rank 0 measured round trips of "
                           f"{', '.join(f'{s * 1000:.2f}' for s in seconds)} ms: time each "
                           f"round from before the send to after the reply has arrived")


@pytest.mark.grades("pass_token")
@pytest.mark.parametrize("world_size", [2, 3])
def test_pass_token_result_is_what_arrived(impl, world_size):
    got = grade(pass_token_probe_worker, world_size, args=(impl,), what="pass_token")[0]
    expected = seeded(0, (3,), torch.float32, 5) + 10 * sum(range(world_size))
    check_close(got, expected, rank=0, what=(
        f"pass_token with partners that add 10 x rank (world_size={world_size}): rank 0 "
        f"must return the token that came back to it, not compute it"))


def _check_rank_0(got, start, rounds, what):
    """Rank 0 returns (replies, seconds): reply r is start + r + 1, times are positive."""
    if not (isinstance(got, tuple) and len(got) == 2):
        raise GradeFailure(f"{what}: rank 0 must return (replies, seconds), "
                           f"got {type(got).__name__}")
    replies, seconds = got
    if len(replies) != rounds or len(seconds) != rounds:
        raise GradeFailure(f"{what}: rank 0 returned {len(replies)} replies and "
                           f"{len(seconds)} times, expected {rounds} of each")
    for r, reply in enumerate(replies):
        check_close(reply, start + r + 1, rank=0, what=f"{what}, reply of round {r}")
    if not all(isinstance(s, float) and s > 0 for s in seconds):
        raise GradeFailure(f"{what}: round-trip times must be positive floats (seconds), "
                           f"got {seconds!r}")


@pytest.mark.parametrize("world_size", [1, 2, 3, 4, 5, 6, 7, 8])
def test_pass_token(impl, world_size):
    results = grade(pass_token_worker, world_size, args=(impl,), what="pass_token")
    check_p2p_only(results.trace, "pass_token", builds="the token ring")
    for i, (shape, dtype) in enumerate(TOKEN_CASES):
        what = f"pass_token({_case(shape, dtype)}, world_size={world_size})"
        for rank in range(world_size):
            check_untouched(results[rank][i], rank=rank, what=what, hint="return a new tensor")
            check_fresh(results[rank][i], rank=rank, what=what,
                        hint="return a new tensor (with one rank: a copy of the token)")
            added = sum(range(world_size)) if rank == 0 else sum(range(rank + 1))
            check_close(results[rank][i].result, seeded(0, shape, dtype, i) + added,
                        rank=rank, what=what)
    for rank in range(world_size if world_size > 1 else 0):
        prev = (rank - 1) % world_size
        recvs = p2p_ops(results.trace, rank, ("recv", "irecv"))
        if not [e for e in recvs if e.peer in (prev, None)]:
            raise GradeFailure(f"pass_token: rank {rank} never received from rank {prev}; "
                               f"the token must travel 0 -> 1 -> ... -> {world_size - 1} -> 0")
