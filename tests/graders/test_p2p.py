"""Lesson 01 (labs/p2p.py): graders for ping_pong and pass_token.

Besides the values and the method, partners that behave differently (probes), in the same
launch, at every world size and on every case, prove that each side's results come from what
arrived, not from a local computation: they add another number than the lesson's partner
would, or send values of their own, and take their time before replying (a different time
each round), so that each round-trip time must be that round's, reply included.
"""
import time

import pytest
import torch
import torch.distributed as dist

from labs.harness.grading.alone import alone
from labs.harness.ranks import tracing
from labs.harness.grading.inputs import every_dtype
from labs.harness.grading import (GradeFailure, call, check_close, check_fresh, check_p2p_only,
                                  check_untouched, grade, implementation, p2p_ops, seeded)

# (shape, dtype) cases every grader launch runs one after the other in the same workers.
CASES = every_dtype([((16,), torch.float32), ((2, 3), torch.int64), ((5,), torch.float64),
                     ((), torch.float32)], numeric=True)
# pass_token also on a large token (the method on every size).
TOKEN_CASES = CASES + [(((1 << 20) + 1,), torch.float32)]


def _case(shape, dtype):
    return f"shape {tuple(shape)}, {str(dtype).removeprefix('torch.')}"


class Tags:
    """The tags this rank used with `peer` in a graded call, op by op: a probe standing in
    for this rank talks to the body with the body's own tags (a tag per round included)."""

    def __init__(self, done, peer):
        def tags(ops):
            return [e.tag for e in p2p_ops(done.events, ops=ops) if e.peer in (peer, None)] or [0]
        self.sends, self.recvs = tags(("send", "isend")), tags(("recv", "irecv"))

    def send(self, r):
        return self.sends[min(r, len(self.sends) - 1)]

    def recv(self, r):
        return self.recvs[min(r, len(self.recvs) - 1)]


# ping_pong: per case, a number of rounds: a body that ignores `rounds` is wrong somewhere,
# and one that bounces once, or leaves a receive posted, when there are none too.
# No zero-size tensor here: the lesson allows a receive from any source, and gloo refuses
# one into an empty buffer ("enforce fail ... offset < this->size. 0 vs 0", torch 2.13).
PING_CASES = CASES + [((3,), torch.float32)]
ROUNDS = [3, 1, 9, 2, 0]     # 9: more rounds than a small pool of reused buffers
PROBE_ROUNDS = 3
PROBE_SLEEP = 0.04      # the probe's pause before reply r is (r + 1) * PROBE_SLEEP: a round
# trip lasts longer, and each round's time differs from the next by one pause ...
# ... and before it posts each receive: gloo's send returns once the receive is posted, so a
# clock around the send and the receive sees both pauses; around only one of them, one.
PROBE_LATE_RECV = 0.05


def ping_pong_worker(rank, world_size, impl):
    """Every case on every rank; then, in the same launch, the probes: for every case a
    partner that adds 2 (not 1) facing rank 0's body, and one that sends values of its own
    facing rank 1's body; last, a partner that takes its time, for the clock."""
    ping_pong = implementation(impl, "p2p", "ping_pong")
    body = getattr(ping_pong, "body", ping_pong)
    # Only rank 0's values matter; the others pass a tensor of the same shape and dtype.
    calls = [call(ping_pong, seeded(0, shape, dtype, i) if rank == 0
                  else torch.zeros(shape, dtype=dtype), rounds, case=_case(shape, dtype))
             for i, ((shape, dtype), rounds) in enumerate(zip(PING_CASES, ROUNDS))]
    probes, echoes = [], []     # echoes: rank 1's replies to values of the probe's own
    for i, ((shape, dtype), rounds) in enumerate(zip(PING_CASES, ROUNDS)):
        tags = Tags(calls[i], 1 - rank) if rank < 2 else None
        _probe_case(rank, body, tags, i, (shape, dtype, rounds), probes, echoes)
    dist.barrier()
    return calls, probes, _clock_probe(rank, body, calls[0]), echoes


def _probe_case(rank, body, tags, i, case, probes: list, echoes: list) -> None:
    """Case i's two probes: rank 0's body facing a partner that adds 2, then rank 1's body
    facing a partner with values of its own (rank 0 keeps its replies in `echoes`)."""
    shape, dtype, rounds = case
    start = seeded(0, shape, dtype, i)
    dist.barrier()
    if rank == 0:                       # the body, facing a partner that adds 2
        with alone():
            replies, _ = body(start, rounds)
        probes.append([r.clone() for r in replies])
    elif rank == 1:
        for r in range(rounds):
            buf = torch.empty_like(start)
            dist.recv(buf, src=0, tag=tags.recv(r))
            dist.send(buf + 2, dst=0, tag=tags.send(r))
    dist.barrier()
    sent = [seeded(0, shape, dtype, 50 + 10 * i + r) for r in range(rounds)]
    if rank == 1:                       # the body, facing a partner with its own values
        with alone():
            probes.append([t.clone() for t in body(torch.zeros_like(start), rounds)])
    elif rank == 0:                     # ... whose replies are what arrived + 1
        replies = []
        for r, value in enumerate(sent):
            dist.send(value, dst=1, tag=tags.send(r))
            replies.append(torch.empty_like(value))
            dist.recv(replies[-1], src=1, tag=tags.recv(r))
        echoes.append(replies)


def _clock_probe(rank, body, first_call):
    """Rank 0's body facing a partner that takes its time: (the seconds it returned, its
    own wall time, each round's span in the record) on rank 0, None elsewhere."""
    tensor = seeded(0, (6,), torch.float32, 7)
    if rank == 0:
        first, started = len(tracing.TRACER.events), time.perf_counter()
        with alone():
            _, seconds = body(tensor, PROBE_ROUNDS)
        return (list(seconds), time.perf_counter() - started,
                _round_spans(tracing.TRACER.events[first:]))
    if rank == 1:
        tags = Tags(first_call, 0)
        for r in range(PROBE_ROUNDS):
            buf = torch.empty_like(tensor)
            time.sleep(PROBE_LATE_RECV)
            dist.recv(buf, src=0, tag=tags.recv(r))
            time.sleep((r + 1) * PROBE_SLEEP)
            dist.send(buf + 1, dst=0, tag=tags.send(r))
    return None


def pass_token_worker(rank, world_size, impl):
    """Every case on every rank; then the probe: rank 0's body, facing partners that add
    10 x rank (not rank), for every case."""
    pass_token = implementation(impl, "p2p", "pass_token")
    body = getattr(pass_token, "body", pass_token)
    calls = [call(pass_token, seeded(0, shape, dtype, i) if rank == 0
                  else torch.zeros(shape, dtype=dtype), case=_case(shape, dtype))
             for i, (shape, dtype) in enumerate(TOKEN_CASES)]
    probes = []
    for i, (shape, dtype) in enumerate(TOKEN_CASES if world_size > 1 else []):
        dist.barrier()
        if rank == 0:
            with alone():
                probes.append(body(seeded(0, shape, dtype, i)).clone())
        else:
            recv_tag = Tags(calls[i], rank - 1).recv(0)
            send_tag = Tags(calls[i], (rank + 1) % world_size).send(0)
            held = torch.empty(shape, dtype=dtype)
            dist.recv(held, src=rank - 1, tag=recv_tag)
            dist.send(held + 10 * rank, dst=(rank + 1) % world_size, tag=send_tag)
    return calls, probes


@pytest.mark.parametrize("world_size", [2, 3, 4, 5, 6, 7, 8])
def test_ping_pong(impl, world_size):
    results = grade(ping_pong_worker, world_size, args=(impl,), what="ping_pong")
    for i, ((shape, dtype), rounds) in enumerate(zip(PING_CASES, ROUNDS)):
        what = f"ping_pong({_case(shape, dtype)}, rounds={rounds})"
        start = seeded(0, shape, dtype, i)
        check_untouched(results[0][0][i], rank=0, what=what, hint="send copies or new tensors instead")
        _check_rank_0(results[0][0][i].result, start, rounds, what)
        got1 = results[1][0][i].result
        if not isinstance(got1, list) or len(got1) != rounds:
            raise GradeFailure(f"{what}: rank 1 must return the list of the {rounds} tensors "
                               f"it received, got {got1!r:.80}")
        for r, t in enumerate(got1):
            check_close(t, _added(start, [1] * r), rank=1, what=f"{what}, tensor received in round {r}")
        for other in range(2, world_size):
            if results[other][0][i].result is not None:
                raise GradeFailure(f"{what}: rank {other} takes no part and must return None")
        # The probes: what each side returns is what arrived from the other.
        for r, reply in enumerate(results[0][1][i]):
            check_close(reply, _added(start, [2] * (r + 1)), rank=0, what=(
                f"{what} with a partner that adds 2 per round (round {r}): rank 0's replies "
                f"must be what arrived, not computed locally"))
        for r, got in enumerate(results[1][1][i]):
            check_close(got, seeded(0, shape, dtype, 50 + 10 * i + r), rank=1, what=(
                f"{what} with a partner that sends values of its own (round {r}): rank 1 "
                f"returns what it received each round"))
        for r, reply in enumerate(results[0][3][i]):
            check_close(reply, seeded(0, shape, dtype, 50 + 10 * i + r) + 1, rank=1, what=(
                f"{what} with a partner that sends values of its own (round {r}): rank 1 "
                f"replies with what arrived + 1, whatever arrived"))
    _check_clock(*results[0][2])
    check_p2p_only(results.trace, "ping_pong", builds="the exchange")
    _check_every_round_travels(results.trace)


def _check_every_round_travels(trace) -> None:
    """Really point to point: each round is one send from 0 to 1 and one from 1 to 0."""
    for src, dst in ((0, 1), (1, 0)):
        sends = [e for e in p2p_ops(trace, src, ("send", "isend")) if e.peer == dst]
        recvs = [e for e in p2p_ops(trace, dst, ("recv", "irecv")) if e.peer in (src, None)]
        expected = sum(ROUNDS)
        if len(sends) < expected or len(recvs) < expected:
            raise GradeFailure(f"ping_pong: expected {expected} messages from rank {src} to "
                               f"rank {dst} over all cases; the trace shows {len(sends)} sends "
                               f"and {len(recvs)} receives. Each reply must travel over the "
                               f"network, not be computed locally.")


def _round_spans(events) -> list:
    """Per round, from rank 0's send call to its reply's arrival, as the record saw them
    (the same clock as the body's: perf_counter is the machine's monotonic clock)."""
    sends = [e for e in events if e.op in ("send", "isend") and e.peer == 1]
    recvs = [e for e in events if e.op in ("recv", "irecv") and e.peer in (1, None)]
    return [recv.t_done - send.t_post for send, recv in zip(sends, recvs)
            if recv.t_done is not None]


def _check_clock(seconds, elapsed, spans):
    """Round r holds the partner's pause of (r + 1) pauses after the ping arrived (less half
    a pause), and the whole span from the send call to the reply's arrival as the record saw
    it (which also holds the partner's late receive unless a loaded machine started rank 0
    late): so a clock around the send only or the receive only, an average or a made-up
    number fails, and a load that delays either rank cannot fail a right clock."""
    if len(seconds) != PROBE_ROUNDS or sum(seconds) > elapsed or \
            any(s < (r + 1) * PROBE_SLEEP - PROBE_SLEEP / 2 for r, s in enumerate(seconds)) or \
            any(s < span - 0.001 for s, span in zip(seconds, spans)):
        raise GradeFailure(
            f"ping_pong: the partner posted each receive {PROBE_LATE_RECV * 1000:g} ms late and "
            f"paused {', '.join(f'{(r + 1) * PROBE_SLEEP * 1000:g}' for r in range(PROBE_ROUNDS))} "
            f"ms before its replies, and the whole call took {elapsed * 1000:.1f} ms; from each "
            f"send to its reply's arrival took {', '.join(f'{s * 1000:.2f}' for s in spans)} ms, "
            f"but rank 0 measured round trips of {', '.join(f'{s * 1000:.2f}' for s in seconds)} "
            f"ms: time each round on its own, from before the send to after the reply has arrived")


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
        check_close(reply, _added(start, [1] * (r + 1)), rank=0, what=f"{what}, reply of round {r}")
    if not all(isinstance(s, float) and s > 0 for s in seconds):
        raise GradeFailure(f"{what}: round-trip times must be positive floats (seconds), "
                           f"got {seconds!r}")


def _added(tensor, steps):
    """`tensor` after adding each of `steps` in turn, in its own dtype (as the ranks do: in
    float16, x + 1 + 1 can differ from x + 2)."""
    for step in steps:
        tensor = tensor + step
    return tensor


@pytest.mark.parametrize("world_size", [1, 2, 3, 4, 5, 6, 7, 8])
def test_pass_token(impl, world_size):
    results = grade(pass_token_worker, world_size, args=(impl,), what="pass_token")
    check_p2p_only(results.trace, "pass_token", builds="the token ring")
    for i, (shape, dtype) in enumerate(TOKEN_CASES):
        what = f"pass_token({_case(shape, dtype)}, world_size={world_size})"
        for rank in range(world_size):
            done = results[rank][0][i]
            check_untouched(done, rank=rank, what=what, hint="return a new tensor")
            check_fresh(done, rank=rank, what=what,
                        hint="return a new tensor (with one rank: a copy of the token)")
            added = range(1, world_size if rank == 0 else rank + 1)
            check_close(done.result, _added(seeded(0, shape, dtype, i), added), rank=rank,
                        what=what)
        if world_size > 1:
            check_close(results[0][1][i], _added(seeded(0, shape, dtype, i),
                                                 [10 * r for r in range(1, world_size)]),
                        rank=0, what=f"{what} with partners that add 10 x rank: rank 0 must "
                                     f"return the token that came back to it, not compute it")
    for rank in range(world_size if world_size > 1 else 0):
        prev = (rank - 1) % world_size
        recvs = p2p_ops(results.trace, rank, ("recv", "irecv"))
        if not [e for e in recvs if e.peer in (prev, None)]:
            raise GradeFailure(f"pass_token: rank {rank} never received from rank {prev}; "
                               f"the token must travel 0 -> 1 -> ... -> {world_size - 1} -> 0")
