"""Lesson 02 (labs/batching.py): the demos behave as the notebook says."""
import re

import pytest

import labs.batching as lab
import labs.views.batching as view
from labs import HangError, WorkerError, launch
from labs.harness.grading import p2p_ops


def several_demos(rank, world_size):
    """Several two-rank demos, one after the other, in one launch."""
    return {"anatomy": lab.anatomy(rank, world_size),
            "errors": lab.validation_errors(rank, world_size),
            "order": [lab.order_inside_batch(rank, world_size, first)
                      for first in ((), (1,), (0, 1))],
            "fifo": lab.fifo_same_pair(rank, world_size),
            "ungrouped": lab.ungrouped_exchange(rank, world_size),
            "demo": lab.demo(rank, world_size)}


def test_p2pop_fields_validation_ordering_and_fifo():
    results = launch(several_demos, 2, quiet=True)
    out0, out1 = results.outputs[0], results.outputs[1]
    assert "peer=1, group=WORLD, tag=7, group_peer=1" in out0
    assert "peer=99" in out0                           # not range-checked when built
    found = results[0]["errors"]
    assert found["op=dist.send (not isend/irecv)"].startswith("ValueError: Invalid ``op``")
    assert found["both peer and group_peer"].startswith("ValueError")
    assert found["a tuple of ops"].startswith("ValueError: Invalid ``p2p_op_list``")
    assert found["an empty list"].startswith("IndexError")
    assert found["ops on two groups"] == "ValueError: All ops need to use the same group."
    assert found["a negative tag (checked when posted)"] == "RuntimeError: Tag must be nonnegative"
    assert "no error" not in found.values()
    # Whatever order the sends and receives are listed in, the exchange completes.
    assert [t.tolist() for t in results[0]["order"]] == [[20.0] * 3] * 3
    assert [t.tolist() for t in results[1]["order"]] == [[10.0] * 3] * 3
    # Same pair, same direction: FIFO, whatever the buffers are called.
    assert "('b', 'a'): a = [2.0, 2.0, 2.0], b = [1.0, 1.0, 1.0]" in out1
    # On gloo, isend then irecv to each other without a batch completes (isend only posts).
    assert [r["ungrouped"] for r in results] == [[20.0] * 3, [10.0] * 3]
    assert [r["demo"] for r in results] == ["2 Work objects; got 1 from rank 1",
                                            "2 Work objects; got 0 from rank 0"]


def test_unchecked_peer_fails_only_when_posted():
    # Undefined behaviour in torch 2.13 + gloo: rank 0 either waits in the store for rank
    # 99's address (DistStoreError after pg_timeout) or crashes (SIGSEGV). Never a success.
    with pytest.raises((WorkerError, HangError)) as info:
        launch(lab.unchecked_peer, 2, timeout=2, quiet=True)
    if isinstance(info.value, WorkerError):
        assert info.value.ranks == [0]
        assert re.search("DistStoreError|SIGSEGV", info.value.causes[0]), info.value.causes


def test_gloo_batch_is_one_work_per_op_in_order():
    results = launch(lab.batch_on_gloo, 2, quiet=True)
    assert "4 ops -> 4 Work objects" in results.outputs[0]
    assert "supports_coalescing: False" in results.outputs[0]
    # Repeated sends between the same pair and direction match in FIFO order.
    assert results[0] == [[1.0, 1.0], [11.0, 11.0]] and results[1] == [[0.0, 0.0], [10.0, 10.0]]
    ops = [e.op for e in sorted(p2p_ops(results.trace, 0), key=lambda e: e.t_post)]
    assert ops == ["isend", "irecv", "isend", "irecv"]


def test_tags_are_received_out_of_order():
    results = launch(lab.tags_out_of_order, 2, quiet=True)
    assert results.outputs[1].count("tag 2 got [2.0, 2.0, 2.0], tag 1 got [1.0, 1.0, 1.0]") == 2
    recvs = [e for e in results.trace if e.rank == 1 and e.op == "recv"]
    assert [e.tag for e in recvs] == [2, 1] and recvs[0].t_done <= recvs[1].t_post


def test_subgroup_peer_is_global():
    results = launch(lab.subgroup_peers, 4, quiet=True)
    assert results == [2.0, 3.0, 0.0, 1.0]
    assert "peer=2, group=g)       -> peer=2, group_peer=1" in results.outputs[0]
    assert "Global rank 1 is not part of group" in results.outputs[0]
    assert "would send to ITSELF" in results.outputs[1]


def test_ring_shift_view_shows_the_reference_while_unsolved(monkeypatch, capsys):
    # The learner's state: labs/ has the stub. The notebook cell still shows where every
    # tensor lands (the reference's result), says which exercise is missing, and one launch
    # covers every k.
    monkeypatch.setenv("P2P_COURSE_SOLUTIONS", "0")
    holders = view.show_ring_shifts(4, [1, -1, 4])
    assert holders == {1: [3, 0, 1, 2], -1: [1, 2, 3, 0], 4: [0, 1, 2, 3]}
    out = capsys.readouterr().out
    assert "Exercise `ring_shift` (labs/batching.py) is not solved yet" in out
    assert out.count("not solved yet") == 1
    assert view.show_ring_shift(2, 1) is None          # interact() would print a return value
