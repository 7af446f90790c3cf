"""Launch errors read like a good compiler's: each cause once, the reader's frame first,
no harness frames; an interrupt says where each rank was; an unsolved exercise in a
notebook cell shows the reference result, marked as such."""
import os
import signal
import threading

import pytest
import torch
import torch.distributed as dist

from labs import HangError, Interrupted, WorkerError, launch, launch_exercise
from labs.ring import run_variant


def everyone_fails(rank, world_size):
    raise ValueError("the same mistake everywhere")


def two_causes(rank, world_size):
    if rank % 2:
        raise KeyError("odd")
    raise ValueError("even")


def blocked_sends(rank, world_size):
    dist.send(torch.ones(10), dst=1 - rank)


def test_one_cause_is_written_once_with_the_ranks_that_share_it(no_leftover_workers):
    with pytest.raises(WorkerError) as info:
        launch(everyone_fails, 4, timeout=20, quiet=True)
    text = str(info.value)
    assert text.startswith("ranks 0, 1, 2, 3 raised ValueError: the same mistake everywhere")
    assert text.count("raised") == 1
    # the reader's frame first, with its line; no harness frame anywhere
    assert text.splitlines()[1].startswith("  tests/harness/test_errors.py:")
    assert "in everyone_fails" in text.splitlines()[1]
    assert "labs/harness" not in text and "Traceback" not in text
    assert sorted(info.value.tracebacks) == [0, 1, 2, 3]       # details one attribute away
    assert "labs/harness/worker.py" in info.value.tracebacks[0]


def test_distinct_causes_are_listed_separately(no_leftover_workers):
    with pytest.raises(WorkerError) as info:
        launch(two_causes, 4, timeout=20, quiet=True)
    text = str(info.value)
    assert "ranks 0, 2 raised ValueError: even" in text
    assert "ranks 1, 3 raised KeyError: 'odd'" in text


def test_ipython_shows_the_message_not_the_launcher(no_leftover_workers):
    with pytest.raises(WorkerError) as info:
        launch(everyone_fails, 2, timeout=20, quiet=True)
    shown = "\n".join(info.value._render_traceback_())
    assert "WorkerError" in shown and "the same mistake everywhere" in shown
    assert "launcher.py" not in shown and "supervise.py" not in shown


def test_an_interrupt_says_where_each_rank_was_and_stops_them(no_leftover_workers):
    timer = threading.Timer(3.0, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(Interrupted) as info:
            launch(blocked_sends, 2, timeout=60, quiet=True)
    finally:
        timer.cancel()
    assert isinstance(info.value, KeyboardInterrupt)
    text = str(info.value)
    assert text.startswith("interrupted: stopped 2 worker(s)")
    assert "rank 0: blocked" in text and "in send(to 1, tag 0, 10 x float32)" in text


def test_unsolved_exercise_shows_the_reference_result_marked(capsys, no_leftover_workers):
    reference = launch(run_variant, 2, args=("ring", (6,)), quiet=True,
                       env={"P2P_COURSE_SOLUTIONS": "1"})
    got = launch_exercise(run_variant, 2, args=("ring", (6,)),
                          env={"P2P_COURSE_SOLUTIONS": "0"})
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("Exercise `ring_all_reduce` (labs/ring.py) is not solved yet")
    assert "REFERENCE" in out[0] and "make check" in out[1]
    assert all(torch.equal(a, b) for a, b in zip(got, reference))


def test_a_hang_is_still_a_hang_error(no_leftover_workers):
    with pytest.raises(HangError, match=r"rank 0: blocked [\d.]+ s in send\(to 1"):
        launch(blocked_sends, 2, timeout=3, pg_timeout=1.5, quiet=True)


def test_a_stand_in_is_per_exercise(monkeypatch):
    """launch_exercise swaps in the reference of the unsolved exercise only: P2P_COURSE_SOLUTIONS
    names it, and every other exercise keeps running the learner's body."""
    from labs.harness.exercises import solution_wanted
    monkeypatch.setenv("P2P_COURSE_SOLUTIONS", "ring_reduce_scatter")
    assert solution_wanted("ring_reduce_scatter") and not solution_wanted("ring_all_reduce")
    monkeypatch.setenv("P2P_COURSE_SOLUTIONS", "1")
    assert solution_wanted("ring_all_reduce")
    monkeypatch.setenv("P2P_COURSE_SOLUTIONS", "0")
    assert not solution_wanted("ring_reduce_scatter")
