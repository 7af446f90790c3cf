"""Lesson 03 (labs/waiting.py, labs/views/waiting.py): what the notebook teaches holds on
real workers (barrier vs wait, buffer ownership, the race, overlap), and the notebook's
cells that need an exercise run in the learner's state too."""
import matplotlib
import pytest
import torch

import labs.views.waiting as view
import labs.waiting as lab
from labs import launch, launch_exercise
from labs.harness.notebook.timing import compare
from labs.harness.ranks.tracing import Event

matplotlib.use("Agg")


def test_barrier_does_not_complete_point_to_point_work():
    results = launch(lab.barrier_is_not_wait, 3, quiet=True)
    assert results == [(False, True, 2.0), (False, True, 0.0), (False, True, 1.0)]
    # The evidence: every first barrier returned before the matching receive was posted.
    assert view.barriers_returned_first(results.trace)


def test_barriers_returned_first_reads_the_timestamps():
    # Rank 1 posts the receive for rank 0's isend at t=2; rank 0's barrier returns at t=1
    # (before: the barrier did not wait for the send) or at t=3 (after: no evidence).
    def trace(barrier_done):
        return [Event(0, "isend", peer=1, t_post=0.0), Event(1, "isend", peer=0, t_post=0.0),
                Event(0, "barrier", t_post=0.5, t_done=barrier_done),
                Event(1, "barrier", t_post=0.5, t_done=1.0),
                Event(1, "irecv", peer=0, t_post=2.0), Event(0, "irecv", peer=1, t_post=2.0)]
    assert view.barriers_returned_first(trace(1.0))
    assert not view.barriers_returned_first(trace(3.0))


def test_waiting_for_the_recv_does_not_cover_the_send():
    assert launch(lab.reuse_after_recv_wait, 2, quiet=True) == [[2.0] * 4, [-7.0] * 4]


def test_second_wait_on_a_work_times_out():
    results = launch(lab.wait_twice, 2, quiet=True)
    assert results[1][:2] == ["first wait returned", "is_completed(): True"]
    assert results[1][2].startswith("second wait: Timed out waiting 1000ms for recv operation")
    assert results[0] == "Connection closed by peer"


def test_racy_shift_is_reproducibly_wrong():
    # Rank 2 receives rank 0's value: rank 1's send left after its receive overwrote t.
    # Rank 0 gets 3.0 or 1.0: rank 2's own send and receive race too (not made reproducible).
    got = launch(lab.racy_ring_shift, 3, args=(2,), quiet=True)
    assert got[1:] == [1.0, 1.0] and got[0] in (1.0, 3.0)


def test_overlap_timing_computes_the_same_in_both_modes():
    results = launch(lab.overlap_timing, 3, args=(200_000, 64, 1), quiet=True)
    assert results[2] is None                      # only ranks 0 and 1 take part
    for r in results[:2]:
        assert r["same product"] and r["received ok"]
        assert all(len(r["seconds"][mode]) == 1 and r["seconds"][mode][0] > 0
                   for mode in lab.MODES)
    spans = [e for e in results.trace if e.op == "compute" and e.label == "matmul"]
    assert len(spans) == 2 * 3                     # matmul only, serial, overlapped; 2 ranks
    # The notebook's timeline marks where each mode starts, in the order they ran.
    ax = view.overlap_timeline(results.trace, title="modes")
    assert [t.get_text().strip() for t in ax.texts if t.get_text().strip() in lab.MODES] == \
        list(lab.MODES)
    # ... and names the untimed warm-up before the first mode.
    assert "warm-up (untimed)" in [t.get_text().strip() for t in ax.texts]


def test_overlap_timing_gives_interleaved_samples_per_mode():
    results = launch(lab.overlap_timing, 2, args=(100_000, 64, 5), quiet=True)
    samples = view.step_seconds(results)
    assert list(samples) == list(lab.MODES)
    for mode, seconds in samples.items():
        # A step lasts as long as its slower rank.
        assert seconds == [max(a, b) for a, b in zip(results[0]["seconds"][mode],
                                                     results[1]["seconds"][mode])]
    table = compare(samples)
    assert all(s.reps == 5 for s in table.spreads.values())
    assert "overlapped vs serial: " in table.verdict("overlapped", "serial")
    assert isinstance(view.hidden_fraction(table), float)


def test_exercise_runners_use_the_solution(monkeypatch):
    monkeypatch.setenv("P2P_COURSE_SOLUTIONS", "1")
    assert launch(lab.safe_shift_run, 3, args=(2,), quiet=True) == [(3.0, 1.0), (1.0, 2.0),
                                                                    (2.0, 3.0)]
    results = launch(lab.ring_matmul, 3, args=(64, 32), quiet=True)
    for products, reference in results:
        assert products.shape == (3, 64, 32) and torch.allclose(products, reference)
    # Each rank computes one product per block, each marked as a compute span.
    assert sum(e.op == "compute" for e in results.trace) == 3 * 3


def test_exercise_cells_run_in_the_learners_state(monkeypatch, capsys):
    # Solved or not, the notebook's cells get a correct run: the learner's, or the
    # reference solution's, marked as such.
    monkeypatch.setenv("P2P_COURSE_SOLUTIONS", "0")
    assert launch_exercise(lab.safe_shift_run, 3, args=(2,), quiet=True) == [
        (3.0, 1.0), (1.0, 2.0), (2.0, 3.0)]
    results = launch_exercise(lab.ring_matmul, 2, args=(64, 32), quiet=True)
    assert all(torch.allclose(products, reference) for products, reference in results)
    assert sum(e.op == "compute" for e in results.trace) == 2 * 2     # a fresh 2-rank trace


@pytest.mark.parametrize("world_size", [2, 3])
def test_demo(world_size):
    results = launch(lab.demo, world_size, quiet=True)
    assert results == [f"completed after barrier: False, after wait: True, "
                       f"received {(r - 1) % world_size}" for r in range(world_size)]
