"""The graders themselves: they catch wrong bodies, and say where and why.

Worker-level tests run a grader's worker against known wrong bodies
(tests/harness/wrong_bodies.py); unit tests feed the checks made-up results.
"""
import pytest
import torch

from labs import launch
from labs.harness.grading import (Call, GradeFailure, call, check_batched, check_one_batch,
                                  check_p2p_only, check_untouched, grade, seeded)
from labs.harness.tracing import Event
from tests.graders import (test_batching, test_collectives, test_deadlocks, test_gradients,
                           test_p2p, test_ring, test_waiting)

WRONG = "tests.harness.wrong_bodies"


# -- known wrong bodies fail, with the reason ------------------------------------------------

@pytest.mark.parametrize("test, world_size, reason", [
    (test_waiting.test_safe_ring_shift, 2,
     r"rank 0: safe_ring_shift returned with 2 op\(s\) still in flight \(isend\(to 1"),
    (test_batching.test_exchange_with_neighbours, 3,
     r"rank \d called isend\(to \d, tag 0, 4 x float32\) outside batch_isend_irecv"),
    (test_p2p.test_pass_token, 2, r"point-to-point sends and receives only; .* broadcast"),
    (test_deadlocks.test_exchange_batched, 4, r"rank 0 changed `tensor`; it must only read"),
], ids=["not waited", "not batched", "a collective", "received into its input"])
def test_a_wrong_body_fails_with_its_reason(test, world_size, reason):
    with pytest.raises(GradeFailure, match=reason):
        test(WRONG, world_size)


def test_the_ring_grader_rejects_a_wrong_all_reduce():
    """The lab's pass-along ring passes the grader; an all-reduce wrong on rank 0 does not."""
    results = launch(test_ring.all_reduce_grader, 2,
                     args=("labs", "pass_along_all_reduce", test_ring.CASES), timeout=60,
                     quiet=True)
    assert results == [[], []]
    cases = [("int64", (5,)), ("float32", (3, 4)), ("bfloat16", (7,))]
    results = launch(test_ring.all_reduce_grader, 2, args=(WRONG, "ring_all_reduce", cases),
                     timeout=60, quiet=True)
    assert results[1] == [] and len(results[0]) == 3
    assert results[0][0].startswith("case 0 (int64, shape (5,), world_size 2): rank 0 is "
                                    "wrong at flat index 4: got ")
    assert "dist.all_reduce gives" in results[0][2]


@pytest.mark.parametrize("worker, args", [
    (test_waiting.safe_ring_shift_worker, ("labs",)),
    (test_waiting.overlapped_step_worker, ("labs",)),
    (test_deadlocks.exchange_worker, ("labs", "exchange_batched")),
    (test_deadlocks.exchange_worker, ("labs", "exchange_parity_ordered")),
    (test_deadlocks.checked_worker, ("labs",)),
])
def test_graders_fail_on_stubs(worker, args):
    with pytest.raises(GradeFailure, match="not implemented yet"):
        grade(worker, 2, args=args, what=worker.__name__)


# -- the checks name the case, the rank, expected vs got -------------------------------------

def test_bfloat16_sum_names_rank_and_values():
    got = torch.tensor([1.0, 2.0], dtype=torch.bfloat16)
    with pytest.raises(GradeFailure, match=r"rank 3 is wrong at flat index 1: got 2.0, "
                                           r"dist.all_reduce gives 3.0"):
        test_ring.check_sum(got, torch.tensor([1.0, 3.0], dtype=torch.bfloat16),
                            torch.tensor([1.0, 3.0], dtype=torch.float64),
                            torch.tensor([1.0, 3.0], dtype=torch.float64),
                            rank=3, world_size=4, what="case 0")
    # within n * u * sum|x|: accepted
    test_ring.check_sum(torch.tensor([1.0, 3.0], dtype=torch.bfloat16), got,
                        torch.tensor([1.0, 3.01], dtype=torch.float64),
                        torch.tensor([1.0, 3.0], dtype=torch.float64),
                        rank=0, world_size=2, what="case 0")


def test_gradient_means_name_parameter_and_rank():
    g = {"a.weight": torch.ones(2)}
    done = Call(result=None)
    with pytest.raises(GradeFailure, match=r"parameter 'a.weight'.*rank 1 is wrong"):
        test_gradients.check_means(
            [[("f", done, g, g)], [("f", done, {"a.weight": torch.zeros(2)}, g)]], 2)
    with pytest.raises(GradeFailure, match="must stay None"):
        test_gradients.check_means([[("f", done, {"u": torch.ones(1)}, {"u": None})]], 1)
    near = {"a.weight": torch.ones(2) + 1e-7}
    with pytest.raises(GradeFailure, match="same bits"):
        test_gradients.check_means([[("f", done, g, g)], [("f", done, near, g)]], 2)
    with pytest.raises(GradeFailure, match="rank 0 returned int; it should return None"):
        test_gradients.check_means([[("f", Call(result=3), g, g)]], 1)


def test_gathered_lists_name_the_rank_and_the_entry():
    x = torch.arange(4.)
    with pytest.raises(GradeFailure, match=r"rank 2 is wrong"):
        test_collectives.check_list([x + 1, x], torch.stack([x, x]), rank=2, what="p2p_gather(...)")
    with pytest.raises(GradeFailure, match=r"rank 0 returned Tensor; expected a list of 2"):
        test_collectives.check_list(x, torch.stack([x, x]), rank=0, what="p2p_all_gather(...)")


def _fill(out, inputs):
    out.fill_(1.0)
    inputs[0] += 1
    return out.view(-1)


def test_a_call_records_what_became_of_its_arguments():
    x = torch.zeros(2, 2)
    assert call(lambda t: t, x).returned_first and call(lambda t: t, x).aliased
    assert call(lambda t: t.clone(), x).aliased is False
    done = call(_fill, x, [torch.ones(3), torch.ones(2)])
    assert (done.changed, done.names, done.aliased, done.returned_first) == \
        ([0, 1], ["out", "inputs"], True, False)
    assert torch.equal(done.result, torch.ones(4))
    x.zero_()
    assert torch.equal(done.result, torch.ones(4)), "the result is a copy taken on return"


def test_untouched_allows_only_the_buffers_an_exercise_fills():
    done = Call(result=None, changed=[0, 2], names=["block", "weight", "recv_buf"])
    check_untouched(Call(result=None, changed=[2], names=done.names), rank=0, what="x", writes=(2,))
    with pytest.raises(GradeFailure, match=r"x: rank 1 changed `block`; it must only read"):
        check_untouched(done, rank=1, what="x", writes=(2,))


def _event(rank, op, batch=None, peer=1):
    return Event(rank=rank, op=op, peer=peer, numel=4, dtype="float32", batch=batch)


def test_trace_checks_name_the_rank_and_the_op():
    batched = [_event(0, "isend", 0), _event(0, "irecv", 0), _event(1, "wait")]
    check_batched(batched, "x")
    check_one_batch(batched, "x", rank=0, expected="both ops", n_ops=2)
    check_p2p_only(batched, "x")
    with pytest.raises(GradeFailure, match=r"rank 1 called send\(to 0, .*\) outside batch"):
        check_batched(batched + [_event(1, "send", peer=0)], "x")
    with pytest.raises(GradeFailure, match=r"posted 3 point-to-point op\(s\) in 2 batch"):
        check_one_batch(batched + [_event(0, "isend", 1)], "x", rank=0, expected="both ops")
    with pytest.raises(GradeFailure, match="expected the 4 ops"):
        check_one_batch(batched, "x", rank=0, expected="the 4 ops", n_ops=4)
    with pytest.raises(GradeFailure, match="the trace shows all_reduce, barrier"):
        check_p2p_only(batched + [_event(0, "barrier"), _event(1, "all_reduce")], "x")


def test_seeded_inputs_are_reproducible_and_differ_per_rank_and_case():
    for dtype in ("float32", "bfloat16", "float64", torch.int64, torch.int32, torch.float16):
        a = seeded(1, (3, 4), dtype, 7)
        assert torch.equal(a, seeded(1, (3, 4), dtype, 7)) and a.shape == (3, 4)
        assert not torch.equal(a, seeded(2, (3, 4), dtype, 7))
        assert not torch.equal(a, seeded(1, (3, 4), dtype, 8))
