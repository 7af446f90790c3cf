"""Lesson 02 (labs/batching.py): graders for the three exercises, and the demos' behaviour."""
import re

import pytest
import torch

import labs.batching as lab
from labs import HangError, WorkerError, launch
from labs.harness.grading import GradeFailure, check_close, grade, implementation

# (shape, dtype) cases every grader launch runs one after the other in the same workers.
CASES = [((4,), torch.float32), ((2, 3), torch.int64), ((5,), torch.float64),
         ((3,), torch.float16), ((0,), torch.float32)]
P2P = ("send", "recv", "isend", "irecv")


def _value(rank, case, shape, dtype):
    """A tensor that says whose it is: rank r's values are in [100 r, 100 r + 50)."""
    g = torch.Generator().manual_seed(case)
    return (torch.randint(0, 50, shape, generator=g) + 100 * rank).to(dtype)


def _p2p(trace, rank=None):
    return [e for e in trace if e.op in P2P and (rank is None or e.rank == rank)]


def _require_batches(trace, what):
    loose = [e for e in _p2p(trace) if e.batch is None]
    if loose:
        e = loose[0]
        raise GradeFailure(f"{what}: rank {e.rank} called {e.describe()} outside "
                           f"batch_isend_irecv; post the operations with one batch_isend_irecv")


# -- grader workers (module level: workers import them by name) -----------------------------

def neighbours_worker(rank, world_size, impl):
    exchange = implementation(impl, "batching", "exchange_with_neighbours")
    out = []
    for i, (shape, dtype) in enumerate(CASES):
        mine = _value(rank, i, shape, dtype)
        before = mine.clone()
        out.append((exchange(mine), torch.equal(mine, before)))
    return out


def ring_shift_worker(rank, world_size, impl, ks):
    ring_shift = implementation(impl, "batching", "ring_shift")
    out = []
    for i, k in enumerate(ks):
        shape, dtype = CASES[i % len(CASES)]
        mine = _value(rank, i, shape, dtype)
        before = mine.clone()
        out.append((ring_shift(mine, k), torch.equal(mine, before)))
    return out


def _chunk_len(src, dst, case):
    return (3 * src + 5 * dst + case) % 4          # 0 .. 3, different per pair, some empty


def _chunk(src, dst, case, dtype):
    n = _chunk_len(src, dst, case)
    return (torch.arange(n) + 1000 * src + 100 * dst + 10 * case).to(dtype)


def all_pairs_worker(rank, world_size, impl):
    all_pairs = implementation(impl, "batching", "all_pairs_exchange")
    out = []
    for case, dtype in enumerate((torch.float32, torch.int64, torch.float64)):
        chunks = [_chunk(rank, dst, case, dtype) for dst in range(world_size)]
        before = [c.clone() for c in chunks]
        out.append((all_pairs(chunks), all(torch.equal(a, b) for a, b in zip(chunks, before))))
    return out


# -- graders -------------------------------------------------------------------------------

@pytest.mark.grader
@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
def test_exchange_with_neighbours(impl, world_size):
    what = "exchange_with_neighbours"
    results = grade(neighbours_worker, world_size, args=(impl,), timeout=20, what=what)
    for i, (shape, dtype) in enumerate(CASES):
        case = f"{what}(shape {shape}, {dtype}, world_size={world_size})"
        for rank in range(world_size):
            got, untouched = results[rank][i]
            if not untouched:
                raise GradeFailure(f"{case}: rank {rank} modified its input tensor")
            if not (isinstance(got, tuple) and len(got) == 2):
                raise GradeFailure(f"{case}: rank {rank} must return (from_left, from_right), "
                                   f"got {type(got).__name__}")
            left, right = (rank - 1) % world_size, (rank + 1) % world_size
            check_close(got[0], _value(left, i, shape, dtype), rank=rank,
                        what=f"{case}, from_left (rank {left}'s tensor)")
            check_close(got[1], _value(right, i, shape, dtype), rank=rank,
                        what=f"{case}, from_right (rank {right}'s tensor)")
    _require_batches(results.trace, what)


@pytest.mark.grader
@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
def test_ring_shift(impl, world_size):
    ks = [1, 0, -1, 2, world_size, world_size + 1, -(world_size + 1), 3 * world_size - 1, 7, -6]
    results = grade(ring_shift_worker, world_size, args=(impl, ks), timeout=20,
                    what="ring_shift")
    for i, k in enumerate(ks):
        shape, dtype = CASES[i % len(CASES)]
        case = f"ring_shift(tensor of shape {shape} {dtype}, k={k}) with world_size={world_size}"
        for rank in range(world_size):
            got, untouched = results[rank][i]
            if not untouched:
                raise GradeFailure(f"{case}: rank {rank} modified its input tensor")
            src = (rank - k) % world_size
            check_close(got, _value(src, i, shape, dtype), rank=rank,
                        what=f"{case}: expected the tensor of rank {src}")
    _require_batches(results.trace, "ring_shift")


@pytest.mark.grader
@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
def test_all_pairs_exchange(impl, world_size):
    what = "all_pairs_exchange"
    results = grade(all_pairs_worker, world_size, args=(impl,), timeout=20, what=what)
    for case, dtype in enumerate((torch.float32, torch.int64, torch.float64)):
        for rank in range(world_size):
            got, untouched = results[rank][case]
            label = f"{what} ({dtype}, world_size={world_size})"
            if not untouched:
                raise GradeFailure(f"{label}: rank {rank} modified its chunks")
            if not isinstance(got, list) or len(got) != world_size:
                raise GradeFailure(f"{label}: rank {rank} must return a list of {world_size} "
                                   f"tensors, got {got!r:.100}")
            for src in range(world_size):
                check_close(got[src], _chunk(src, rank, case, dtype), rank=rank,
                            what=f"{label}, received[{src}] (rank {src}'s chunk for rank "
                                 f"{rank}, {_chunk_len(src, rank, case)} elements)")
    # The protocol: lengths as 1-element int64 with SIZE_TAG, chunks with DATA_TAG.
    events = _p2p(results.trace)
    odd = [e for e in events if e.tag not in (lab.SIZE_TAG, lab.DATA_TAG)]
    if odd:
        raise GradeFailure(f"{what}: rank {odd[0].rank} used {odd[0].describe()}; use tag "
                           f"SIZE_TAG={lab.SIZE_TAG} for lengths and DATA_TAG={lab.DATA_TAG} "
                           f"for chunks")
    bad_size = [e for e in events if e.tag == lab.SIZE_TAG
                and (e.numel != 1 or e.dtype != "int64")]
    if bad_size:
        raise GradeFailure(f"{what}: rank {bad_size[0].rank} used {bad_size[0].describe()}; "
                           f"a length is one int64 element sent with SIZE_TAG")
    for rank in range(world_size):
        for peer in range(world_size):
            if peer != rank and not [e for e in events if e.rank == rank and e.peer == peer
                                     and e.op in ("send", "isend") and e.tag == lab.SIZE_TAG]:
                raise GradeFailure(f"{what}: rank {rank} never sent rank {peer} a length with "
                                   f"SIZE_TAG; the receiver cannot know how much to expect")
    _require_batches(results.trace, what)


# -- the lesson's demos ----------------------------------------------------------------------

def several_demos(rank, world_size):
    """Several two-rank demos, one after the other, in one launch."""
    return {"anatomy": lab.anatomy(rank, world_size),
            "errors": lab.validation_errors(rank, world_size),
            "order": [lab.order_inside_batch(rank, world_size, first)
                      for first in ((), (1,), (0, 1))],
            "fifo": lab.fifo_same_pair(rank, world_size),
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
    ops = [e.op for e in sorted(_p2p(results.trace, 0), key=lambda e: e.t_post)]
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
