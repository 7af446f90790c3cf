"""Lesson 02 (labs/batching.py): graders for exchange_with_neighbours, ring_shift and
all_pairs_exchange."""
import pytest
import torch

from labs.batching import DATA_TAG, SIZE_TAG
from labs.harness.grading import (GradeFailure, call, check_batched, check_close,
                                  check_untouched, grade, implementation, p2p_ops, seeded)

# (shape, dtype) cases every grader launch runs one after the other in the same workers.
CASES = [((4,), torch.float32), ((2, 3), torch.int64), ((5,), torch.float64),
         ((3,), torch.float16), ((0,), torch.float32)]


def neighbours_worker(rank, world_size, impl):
    exchange = implementation(impl, "batching", "exchange_with_neighbours")
    return [call(exchange, seeded(rank, shape, dtype, i)) for i, (shape, dtype) in enumerate(CASES)]


def ring_shift_worker(rank, world_size, impl, ks):
    ring_shift = implementation(impl, "batching", "ring_shift")
    return [call(ring_shift, seeded(rank, *CASES[i % len(CASES)], i), k) for i, k in enumerate(ks)]


def _chunk_len(src, dst, case):
    return (3 * src + 5 * dst + case) % 4          # 0 .. 3, different per pair, some empty


def _chunk(src, dst, case, dtype):
    """What rank `src` sends rank `dst`: its length and values say from whom, for whom."""
    n = _chunk_len(src, dst, case)
    return (torch.arange(n) + 1000 * src + 100 * dst + 10 * case).to(dtype)


def all_pairs_worker(rank, world_size, impl):
    all_pairs = implementation(impl, "batching", "all_pairs_exchange")
    return [call(all_pairs, [_chunk(rank, dst, case, dtype) for dst in range(world_size)])
            for case, dtype in enumerate((torch.float32, torch.int64, torch.float64))]


@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
def test_exchange_with_neighbours(impl, world_size):
    what = "exchange_with_neighbours"
    results = grade(neighbours_worker, world_size, args=(impl,), timeout=20, what=what)
    for i, (shape, dtype) in enumerate(CASES):
        case = f"{what}(shape {shape}, {dtype}, world_size={world_size})"
        for rank in range(world_size):
            check_untouched(results[rank][i], rank=rank, what=case)
            got = results[rank][i].result
            if not (isinstance(got, tuple) and len(got) == 2):
                raise GradeFailure(f"{case}: rank {rank} must return (from_left, from_right), "
                                   f"got {type(got).__name__}")
            left, right = (rank - 1) % world_size, (rank + 1) % world_size
            check_close(got[0], seeded(left, shape, dtype, i), rank=rank,
                        what=f"{case}, from_left (rank {left}'s tensor)")
            check_close(got[1], seeded(right, shape, dtype, i), rank=rank,
                        what=f"{case}, from_right (rank {right}'s tensor)")
    check_batched(results.trace, what)


@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
def test_ring_shift(impl, world_size):
    ks = [1, 0, -1, 2, world_size, world_size + 1, -(world_size + 1), 3 * world_size - 1, 7, -6]
    results = grade(ring_shift_worker, world_size, args=(impl, ks), timeout=20,
                    what="ring_shift")
    for i, k in enumerate(ks):
        shape, dtype = CASES[i % len(CASES)]
        case = f"ring_shift(tensor of shape {shape} {dtype}, k={k}) with world_size={world_size}"
        for rank in range(world_size):
            check_untouched(results[rank][i], rank=rank, what=case)
            src = (rank - k) % world_size
            check_close(results[rank][i].result, seeded(src, shape, dtype, i), rank=rank,
                        what=f"{case}: expected the tensor of rank {src}")
    check_batched(results.trace, "ring_shift")


@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
def test_all_pairs_exchange(impl, world_size):
    what = "all_pairs_exchange"
    results = grade(all_pairs_worker, world_size, args=(impl,), timeout=20, what=what)
    for case, dtype in enumerate((torch.float32, torch.int64, torch.float64)):
        label = f"{what} ({dtype}, world_size={world_size})"
        for rank in range(world_size):
            check_untouched(results[rank][case], rank=rank, what=label)
            got = results[rank][case].result
            if not isinstance(got, list) or len(got) != world_size:
                raise GradeFailure(f"{label}: rank {rank} must return a list of {world_size} "
                                   f"tensors, got {got!r:.100}")
            for src in range(world_size):
                check_close(got[src], _chunk(src, rank, case, dtype), rank=rank,
                            what=f"{label}, received[{src}] (rank {src}'s chunk for rank "
                                 f"{rank}, {_chunk_len(src, rank, case)} elements)")
    _check_size_protocol(p2p_ops(results.trace), world_size, what)
    check_batched(results.trace, what)


def _check_size_protocol(events, world_size, what):
    """Lengths travel as one int64 element with SIZE_TAG, chunks with DATA_TAG."""
    odd = [e for e in events if e.tag not in (SIZE_TAG, DATA_TAG)]
    if odd:
        raise GradeFailure(f"{what}: rank {odd[0].rank} used {odd[0].describe()}; use tag "
                           f"SIZE_TAG={SIZE_TAG} for lengths and DATA_TAG={DATA_TAG} for chunks")
    bad_size = [e for e in events if e.tag == SIZE_TAG and (e.numel != 1 or e.dtype != "int64")]
    if bad_size:
        raise GradeFailure(f"{what}: rank {bad_size[0].rank} used {bad_size[0].describe()}; "
                           f"a length is one int64 element sent with SIZE_TAG")
    for rank in range(world_size):
        for peer in range(world_size):
            if peer != rank and not [e for e in events if e.rank == rank and e.peer == peer
                                     and e.op in ("send", "isend") and e.tag == SIZE_TAG]:
                raise GradeFailure(f"{what}: rank {rank} never sent rank {peer} a length with "
                                   f"SIZE_TAG; the receiver cannot know how much to expect")
