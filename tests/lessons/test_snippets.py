"""Lesson 08 (labs/snippets.py): the three snippets fail the way the notebook says; the
fixes are right."""
import pytest

import labs.snippets as lab
from labs import HangError, WorkerError, launch


# -- snippet 1 ---------------------------------------------------------------------------

def test_example1_as_written_fails_on_both_ranks_with_self_send():
    with pytest.raises(WorkerError) as info:
        launch(lab.example1_as_written, 2, timeout=10, quiet=True)
    err = info.value
    assert err.ranks == [0, 1]
    for rank in (0, 1):
        assert "Pair is not connected" in err.causes[rank], err.causes
    assert "rank 0: RuntimeError" in err.brief() and "rank 1: RuntimeError" in err.brief()


def test_example1_fixed_exchanges():
    got = launch(lab.example1_fixed, 2, quiet=True)
    assert got[0].tolist() == [10.0, 11.0, 12.0, 13.0]
    assert got[1].tolist() == [0.0, 1.0, 2.0, 3.0]


# -- snippet 2 ---------------------------------------------------------------------------

def test_ring_as_written_is_not_the_sum_and_requests_are_incomplete_after_barrier():
    results = launch(lab.ring_as_written_worker, 4, quiet=True)
    for rank, (value, expected, completed) in enumerate(results):
        assert expected == 10.0
        assert value != expected, f"rank {rank} got the sum"
        assert value in (1.0, 2.0, 3.0, 4.0)    # one shift only moves values around
        assert completed == [False, False], f"rank {rank}: {completed}"


def test_ring_snippet_unchanged_never_sums():
    values = launch(lab.ring_snippet_outcome, 4, quiet=True)
    assert all(v in (1.0, 2.0, 3.0, 4.0) for v in values), values


def test_same_buffer_slow_motion_loses_rank1_value():
    assert launch(lab.same_buffer_slow_motion, 3, quiet=True) == [None, 1.0, 1.0]


def test_fixed_ring_integers_and_demo():
    assert launch(lab.fixed_ring_integers, 4, quiet=True) == [10, 10, 10, 10]
    assert launch(lab.demo, 2, quiet=True) == [3, 3]
    fallback = launch(lab.demo, 2, quiet=True, env={"P2P_COURSE_SOLUTIONS": "0"})
    assert fallback[0].endswith("received [10.0, 11.0, 12.0, 13.0]"), fallback


# -- snippet 3 ---------------------------------------------------------------------------

def test_all_to_all_as_written_gives_wrong_averages_with_mismatched_pairs():
    results = launch(lab.all_to_all_as_written_worker, 3, quiet=True)
    for rank, r in enumerate(results):
        assert r["equals_true_mean"] == [False, False], f"rank {rank}: {r}"
    sends = sum(e.op == "isend" for e in results.trace)
    recvs = sum(e.op == "irecv" for e in results.trace)
    # 3 ranks x 2 parameters x 2 sends, but 3 x 2 x 4 receives: 12 can never match.
    assert (sends, recvs) == (12, 24)
    assert not any(e.op == "wait" for e in results.trace)


@pytest.mark.parametrize("world_size", [2, 4])
def test_all_to_all_fixed_matches_ddp(world_size):
    results = launch(lab.all_to_all_fixed_vs_ddp, world_size, quiet=True)
    assert all(close for _, close in results), results


def test_all_to_all_as_written_breaks_the_next_collective():
    with pytest.raises(HangError) as info:
        launch(lab.all_to_all_then_barrier, 3, timeout=4, quiet=True)
    for rank in range(3):
        assert info.value.statuses[rank].blocked_in.describe() == "barrier()"


def test_all_to_all_waiting_hangs_on_the_extra_receives():
    with pytest.raises(HangError) as info:
        launch(lab.all_to_all_waiting_worker, 3, timeout=4, quiet=True)
    for rank, status in info.value.statuses.items():
        assert status.blocked_in.describe().startswith("wait(")
        # the request it waits for (the first one not completed) is a receive
        assert status.outstanding[0].describe().startswith("irecv(")


def test_dropped_request_is_abandoned_and_breaks_the_pair():
    assert launch(lab.dropped_request, 2, args=(True, True), quiet=True)[0] == [1.0] * 3
    assert launch(lab.dropped_request, 2, args=(False, False), quiet=True)[0] == [0.0] * 3
    with pytest.raises(HangError) as info:
        launch(lab.dropped_request, 2, args=(False, True), timeout=4, quiet=True)
    assert info.value.statuses[0].blocked_in.describe() == "barrier()"
    assert info.value.statuses[1].blocked_in.describe() == "barrier()"


def test_barrier_is_not_wait():
    assert launch(lab.barrier_is_not_wait, 2, quiet=True) == [(False, True), [0.0, 1.0, 2.0]]
