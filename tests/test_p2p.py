"""Lesson 01 (labs/p2p.py): graders for ping_pong and pass_token, and the demos' behaviour."""
import pytest
import torch

import labs.p2p as lab
from labs import launch
from labs.harness.grading import GradeFailure, check_close, grade, implementation

# (shape, dtype) cases every grader launch runs one after the other in the same workers.
CASES = [((16,), torch.float32), ((2, 3), torch.int64), ((5,), torch.float64), ((), torch.float32)]


def _start_tensor(case_index, shape, dtype):
    g = torch.Generator().manual_seed(case_index)
    return torch.randint(-50, 50, shape, generator=g).to(dtype)


def _p2p_events(trace, rank, ops):
    return [e for e in trace if e.rank == rank and e.op in ops]


# -- grader workers (module level: workers import them by name) -----------------------------

def ping_pong_worker(rank, world_size, impl, rounds):
    ping_pong = implementation(impl, "p2p", "ping_pong")
    out = []
    for i, (shape, dtype) in enumerate(CASES):
        # Only rank 0's values matter; the others pass a tensor of the same shape and dtype.
        mine = _start_tensor(i, shape, dtype) if rank == 0 else torch.zeros(shape, dtype=dtype)
        before = mine.clone()
        result = ping_pong(mine, rounds)
        out.append((result, torch.equal(mine, before)))
    return out


def pass_token_worker(rank, world_size, impl):
    pass_token = implementation(impl, "p2p", "pass_token")
    out = []
    for i, (shape, dtype) in enumerate(CASES):
        token = _start_tensor(i, shape, dtype) if rank == 0 else torch.zeros(shape, dtype=dtype)
        before = token.clone()
        out.append((pass_token(token), torch.equal(token, before)))
    return out


# -- graders -------------------------------------------------------------------------------

@pytest.mark.grader
@pytest.mark.parametrize("world_size", [2, 3])
def test_ping_pong(impl, world_size):
    rounds = 3
    results = grade(ping_pong_worker, world_size, args=(impl, rounds), what="ping_pong")
    for i, (shape, dtype) in enumerate(CASES):
        start = _start_tensor(i, shape, dtype)
        what = f"ping_pong(shape {shape}, {dtype}, rounds={rounds})"
        got0, untouched = results[0][i]
        if not untouched:
            raise GradeFailure(f"{what}: rank 0 modified the tensor it was given; "
                               f"send copies or new tensors instead")
        if not (isinstance(got0, tuple) and len(got0) == 2):
            raise GradeFailure(f"{what}: rank 0 must return (replies, seconds), "
                               f"got {type(got0).__name__}")
        replies, seconds = got0
        if len(replies) != rounds or len(seconds) != rounds:
            raise GradeFailure(f"{what}: rank 0 returned {len(replies)} replies and "
                               f"{len(seconds)} times, expected {rounds} of each")
        for r, reply in enumerate(replies):
            check_close(reply, start + r + 1, rank=0, what=f"{what}, reply of round {r}")
        if not all(isinstance(s, float) and s > 0 for s in seconds):
            raise GradeFailure(f"{what}: round-trip times must be positive floats (seconds), "
                               f"got {seconds!r}")
        got1, _ = results[1][i]
        if not isinstance(got1, list) or len(got1) != rounds:
            raise GradeFailure(f"{what}: rank 1 must return the list of the {rounds} tensors "
                               f"it received, got {got1!r:.80}")
        for r, t in enumerate(got1):
            check_close(t, start + r, rank=1, what=f"{what}, tensor received in round {r}")
        for other in range(2, world_size):
            if results[other][i][0] is not None:
                raise GradeFailure(f"{what}: rank {other} takes no part and must return None")
    # Really point to point: each round is one send from 0 to 1 and one from 1 to 0.
    for src, dst in ((0, 1), (1, 0)):
        sends = [e for e in _p2p_events(results.trace, src, ("send", "isend")) if e.peer == dst]
        recvs = [e for e in _p2p_events(results.trace, dst, ("recv", "irecv"))
                 if e.peer in (src, None)]
        expected = rounds * len(CASES)
        if len(sends) < expected or len(recvs) < expected:
            raise GradeFailure(f"ping_pong: expected {expected} messages from rank {src} to "
                               f"rank {dst} over all cases; the trace shows {len(sends)} sends "
                               f"and {len(recvs)} receives. Each reply must travel over the "
                               f"network, not be computed locally.")


@pytest.mark.grader
@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
def test_pass_token(impl, world_size):
    results = grade(pass_token_worker, world_size, args=(impl,), what="pass_token")
    collectives = sorted({e.op for e in results.trace
                          if e.op not in ("send", "recv", "isend", "irecv", "wait", "compute")})
    if collectives:
        raise GradeFailure(f"pass_token: use point-to-point sends and receives only; the trace "
                           f"shows {', '.join(collectives)}")
    for i, (shape, dtype) in enumerate(CASES):
        start = _start_tensor(i, shape, dtype)
        what = f"pass_token(shape {shape}, {dtype}, world_size={world_size})"
        for rank in range(world_size):
            got, untouched = results[rank][i]
            if not untouched:
                raise GradeFailure(f"{what}: rank {rank} modified the token it was given; "
                                   f"return a new tensor")
            added = sum(range(world_size)) if rank == 0 else sum(range(rank + 1))
            check_close(got, start + added, rank=rank, what=what)
    if world_size > 1:
        for rank in range(world_size):
            prev = (rank - 1) % world_size
            if not [e for e in _p2p_events(results.trace, rank, ("recv", "irecv"))
                    if e.peer in (prev, None)]:
                raise GradeFailure(f"pass_token: rank {rank} never received from rank {prev}; "
                                   f"the token must travel 0 -> 1 -> ... -> {world_size - 1} -> 0")


# -- the lesson's demos ----------------------------------------------------------------------

def several_demos(rank, world_size):
    """Several demos, one after the other, in one launch (each is complete in itself)."""
    return {"first_send": lab.first_send(rank, world_size),
            "nonblocking": lab.nonblocking_pair(rank, world_size),
            "touched": lab.touch_before_wait(rank, world_size),
            "fixed": lab.touch_before_wait(rank, world_size, True),
            "read_early": lab.read_before_wait(rank, world_size),
            "demo": lab.demo(rank, world_size)}


def test_demos_send_recv_work_and_buffer_ownership():
    results = launch(several_demos, 2, quiet=True)
    assert results[1]["first_send"].tolist() == [10.0, 11.0]
    out0, out1 = results.outputs[0], results.outputs[1]
    assert "isend returned; is_completed(): False" in out0
    assert "after wait, is_completed(): True" in out0
    # The change made after isend, before wait, is what rank 1 receives.
    assert results[1]["touched"].tolist() == [100.0] * 4
    assert results[1]["fixed"].tolist() == [1.0] * 4
    assert "before wait: [0.0, 0.0, 0.0, 0.0]" in out1 and "after wait:  [7.0" in out1
    assert [r["demo"] for r in results] == ["got 1 from rank 1", "got 0 from rank 0"]


def test_gloo_send_waits_for_the_recv():
    results = launch(lab.rendezvous_send, 2, args=(0.2,), quiet=True)
    send_post, send_done, recv_post, recv_done = lab.send_timing(results.trace)
    # Causality, not speed: the blocking send cannot return before the recv exists.
    assert recv_post <= send_done


def test_any_source():
    world_size = 4
    results = launch(lab.any_source, world_size, quiet=True)
    got = results[0]
    for call in ("recv", "irecv"):
        senders = sorted(s for c, s, _ in got if c == call)
        assert senders == list(range(1, world_size)), (call, got)
    assert all(value == 10.0 * sender for _, sender, value in got)
    assert "source_rank API is being deprecated" in results.outputs[0]


def exercise_runners(rank, world_size):
    return lab.token_ring_run(rank, world_size), lab.ping_pong_run(rank, world_size, 2, 4)


def test_exercise_runners_use_the_solution(monkeypatch):
    monkeypatch.setenv("P2P_COURSE_SOLUTIONS", "1")
    results = launch(exercise_runners, 3, quiet=True)
    assert [tokens for tokens, _ in results] == [103.0, 101.0, 103.0]
    start, replies, seconds = results[0][1]
    assert len(replies) == len(seconds) == 2 and torch.equal(replies[1], start + 2)
    assert results[2][1] is None
