"""Lesson 03 (labs/waiting.py): what the notebook teaches holds on real workers (barrier
vs wait, buffer ownership, the race, overlap)."""
import pytest
import torch

import labs.waiting as lab
from labs import launch


def test_barrier_does_not_complete_point_to_point_work():
    results = launch(lab.barrier_is_not_wait, 3, quiet=True)
    assert results == [(False, True, 2.0), (False, True, 0.0), (False, True, 1.0)]


def test_waiting_for_the_recv_does_not_cover_the_send():
    assert launch(lab.reuse_after_recv_wait, 2, quiet=True) == [[2.0] * 4, [-7.0] * 4]


def test_second_wait_on_a_work_times_out():
    results = launch(lab.wait_twice, 2, quiet=True)
    assert results[1][:2] == ["first wait returned", "is_completed(): True"]
    assert results[1][2].startswith("second wait: Timed out waiting 1000ms for recv operation")
    assert results[0] == "Connection closed by peer"


def test_racy_shift_is_reproducibly_wrong():
    # Rank 2 receives rank 0's value: rank 1's send left after its receive overwrote t.
    assert launch(lab.racy_ring_shift, 3, args=(2,), quiet=True) == [3.0, 1.0, 1.0]


def test_overlap_timing_computes_the_same_in_both_modes():
    results = launch(lab.overlap_timing, 3, args=(200_000, 64, 1), quiet=True)
    assert results[2] is None                      # only ranks 0 and 1 take part
    for r in results[:2]:
        assert r["same product"] and r["received ok"]
        assert all(r[mode] > 0 for mode in lab.MODES)
    spans = [e for e in results.trace if e.op == "compute" and e.label == "matmul"]
    assert len(spans) == 2 * 3                     # matmul only, serial, overlapped; 2 ranks


def test_exercise_runners_use_the_solution(monkeypatch):
    monkeypatch.setenv("P2P_COURSE_SOLUTIONS", "1")
    assert launch(lab.safe_shift_run, 3, args=(2,), quiet=True) == [(3.0, 1.0), (1.0, 2.0),
                                                                    (2.0, 3.0)]
    results = launch(lab.ring_matmul, 3, args=(64, 32), quiet=True)
    for products, reference in results:
        assert products.shape == (3, 64, 32) and torch.allclose(products, reference)
    # Each rank computes one product per block, each marked as a compute span.
    assert sum(e.op == "compute" for e in results.trace) == 3 * 3


@pytest.mark.parametrize("world_size", [2, 3])
def test_demo(world_size):
    results = launch(lab.demo, world_size, quiet=True)
    assert results == [f"completed after barrier: False, after wait: True, "
                       f"received {(r - 1) % world_size}" for r in range(world_size)]
