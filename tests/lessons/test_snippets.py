"""Lesson 08 (labs/snippets.py): the three snippets fail the way the notebook says, each
fix does what it says, and the exercise's grader rejects the half-fixed bodies."""
import re

import pytest
import torch

import labs.claims.online as online
import labs.snippets as lab
from labs import HangError, WorkerError, launch
from labs.harness.grading import GradeFailure
from tests.graders import test_snippets as grader

HANG = dict(timeout=10, pg_timeout=1.5, quiet=True)


# -- snippet 1 ---------------------------------------------------------------------------

def test_snippet1_as_written_fails_on_both_ranks_with_self_send():
    with pytest.raises(WorkerError) as info:
        launch(lab.snippet1_as_written, 2, quiet=True)
    assert info.value.ranks == [0, 1]
    assert all("Pair is not connected" in info.value.causes[r] for r in (0, 1))
    # rank 0 had posted its isend before its irecv from itself failed
    rank0 = [e.describe() for e in info.value.trace if e.rank == 0]
    assert rank0[0].startswith("isend(to 1") and rank0[1].startswith("irecv(from 0")


def test_snippet1_with_fixed_peers_kills_both_receivers():
    with pytest.raises(WorkerError) as info:
        launch(lab.snippet1_with_fixes, 2, args=(("peers",),), quiet=True)
    assert set(info.value.causes.values()) == {"was killed by signal SIGABRT"}
    assert "op.preamble.length <= op.nbytes. 20 vs 12" in "".join(info.value.outputs.values())


def test_snippet1_with_fixed_size_drops_the_data_and_waits_for_one_request():
    results = launch(lab.snippet1_with_fixes, 2, args=(("peers", "size"),), quiet=True)
    for rank, r in enumerate(results):
        assert r["tensor2_unchanged"] and r["works"] == 2
        assert torch.equal(r["received"], results[1 - rank]["sent"])
        assert len(r["waited_for"]) == 1 and r["waited_for"][0].startswith(f"irecv(from {1 - rank}")


def test_a_dropped_send_leaves_the_receiver_waiting():
    with pytest.raises(HangError) as info:
        launch(lab.dropped_send, 2, **HANG)
    assert info.value.statuses[1].blocked_in.describe().startswith("wait() on irecv(from 0")


def test_snippet1_fixed_exchanges():
    results = launch(lab.snippet1_fixed, 2, quiet=True)
    for rank, (_, received) in enumerate(results):
        assert torch.equal(received, results[1 - rank][0])


# -- snippet 2 ---------------------------------------------------------------------------

def test_ring_snippet_unchanged_never_sums():
    values = launch(lab.ring_snippet_outcome, 4, quiet=True)
    assert all(v in (1.0, 2.0, 3.0, 4.0) for v in values), values


def test_same_buffer_slow_motion_loses_rank1_value():
    assert launch(lab.same_buffer_slow_motion, 3, quiet=True) == [None, 1.0, 1.0]


def test_snippet2_fixes_shift_then_sum():
    assert launch(lab.snippet2_fixed_shift, 4, quiet=True) == [4.0, 1.0, 2.0, 3.0]
    assert launch(lab.snippet2_fixed_sum, 4, quiet=True) == [10.0] * 4


def test_dropped_request_is_abandoned_and_breaks_the_pair():
    assert launch(lab.dropped_request, 2, args=(True, True), quiet=True)[0] == [1.0] * 3
    assert launch(lab.dropped_request, 2, args=(False, False), quiet=True)[0] == [0.0] * 3
    with pytest.raises(HangError) as info:
        launch(lab.dropped_request, 2, args=(False, True), **HANG)
    assert info.value.statuses[0].blocked_in.describe() == "barrier()"


# -- snippet 3 ---------------------------------------------------------------------------

def test_snippet3_as_written_with_as_many_parameters_as_ranks():
    results = launch(lab.snippet3_run, 2, args=("linear",), quiet=True)
    unscaled, unwritten = ("own/p + one other rank's gradient, unscaled",
                           "own/p + memory nobody wrote")
    assert results[0]["made_of"] == [unscaled, unwritten]
    assert results[1]["made_of"] == [unwritten, unscaled]
    for r in results:
        assert r["sent_changed_in_place"]
        assert sorted(r["calls"]) == ["barrier", "irecv", "isend"]     # no wait()


def test_snippet3_as_written_with_fewer_parameters_than_ranks():
    with pytest.raises(WorkerError) as info:
        launch(lab.snippet3_run, 3, args=("linear",), quiet=True)
    assert set(info.value.causes.values()) == {"IndexError: list index out of range"}


def test_snippet3_as_written_with_other_shapes_kills_rank_2():
    with pytest.raises(WorkerError) as info:
        launch(lab.snippet3_run, 3, args=("mlp",), quiet=True)
    assert info.value.causes == {2: "was killed by signal SIGABRT"}
    assert "op.preamble.length <= op.nbytes. 96 vs 32" in info.value.outputs[2]
    sent = [(e.peer, e.numel) for e in info.value.trace if e.rank == 0 and e.op == "isend"]
    assert sent == [(1, 8), (2, 24)]        # parameter j's gradient to rank j


def test_snippet3_indexed_by_parameter_posts_unmatched_receives():
    results = launch(lab.snippet3_run, 3, args=("mlp", ("index",)), quiet=True)
    ops = [e.op for e in results.trace if e.rank == 0]
    assert (ops.count("isend"), ops.count("irecv")) == (8, 16)
    assert not any(m == "the mean" for r in results for m in r["made_of"])


def test_snippet3_indexed_and_waiting_hangs_on_the_extra_receives():
    with pytest.raises(HangError) as info:
        launch(lab.snippet3_run, 3, args=("mlp", ("index", "wait")), **HANG)
    for status in info.value.statuses.values():
        assert status.blocked_in.describe().startswith("wait() on irecv(")


@pytest.mark.parametrize("world_size", [2, 3])
def test_fixed_snippet3_matches_ddp(world_size):
    assert all(launch(lab.fixed_vs_ddp, world_size, quiet=True))


def test_demo_and_its_fallback():
    assert launch(lab.demo, 2, quiet=True) == ["fixed snippet 3 equals DDP's gradients: True"] * 2
    fallback = launch(lab.demo, 2, quiet=True, env={"P2P_COURSE_SOLUTIONS": "0"})
    assert all(r.startswith("fixed_average_gradients is not written yet") for r in fallback)


# -- the online section ------------------------------------------------------------------

def test_the_2019_tutorial_ring_does_not_sum():
    assert launch(online.tutorial_ring_2019, 4, quiet=True) == [2.0, 4.0, 6.0, 8.0]


@pytest.mark.parametrize("worker", [online.batch_vs_separate_calls, online.overlap_or_not])
def test_timing_workers_return_interleaved_reps(worker):
    samples = launch(worker, 2, args=(64, 5), quiet=True)[0]
    assert len(samples) == 2 and all(len(s) == 5 for s in samples.values())


# -- the exercise's grader ---------------------------------------------------------------

@pytest.mark.all_lane          # the catalogue: make test-all
@pytest.mark.parametrize("body, world_size, message", [
    ("barrier_instead_of_wait", 3, "never waited for: wait() for every request"),
    ("all_reduce_inside", 2, "called all_reduce: the lesson builds this from point-to-point"),
    ("unscaled_add", 3, "gradient of parameter 0 (expected DDP's): rank 0 is wrong"),
    ("two_batches", 2, "in 2 batch_isend_irecv call(s)"),
])
def test_grader_rejects_half_fixed_bodies(body, world_size, message):
    with pytest.raises(GradeFailure, match=re.escape(message)):
        grader.test_fixed_average_gradients(f"tests.graders.test_snippets:{body}", world_size)


def test_grader_accepts_a_correct_body_in_another_style():
    grader.test_fixed_average_gradients("tests.graders.test_snippets:flat_buffer_average", 3)


def test_grader_fails_on_the_stub():
    with pytest.raises(GradeFailure, match="not implemented yet"):
        grader.test_fixed_average_gradients("labs", 2)
