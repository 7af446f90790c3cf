"""Lesson 02 (labs/batching.py): graders for exchange_with_neighbours, ring_shift and
all_pairs_exchange."""
import pytest
import torch

from labs.batching import DATA_TAG, SIZE_TAG
from labs.harness.grading.inputs import every_dtype
from labs.harness.grading import (GradeFailure, call, check_batched, check_close, check_fresh,
                                  check_one_batch, check_p2p_only, check_peers, check_untouched,
                                  grade, implementation, p2p_ops, seeded)

# (shape, dtype) cases every grader launch runs one after the other in the same workers.
CASES = every_dtype([((4,), torch.float32), ((2, 3), torch.int64), ((5,), torch.float64),
                     ((3,), torch.float16), ((0,), torch.float32), ((6,), torch.bool),
                     ((2, 2), torch.bfloat16)]) + \
    [(((1 << 20) + 1,), torch.float32)]    # large: the method on every size
ALL_PAIRS_DTYPES = (torch.float32, torch.int64, torch.float64, torch.float32, torch.float16,
                    torch.bfloat16, torch.int8, torch.uint8, torch.int16, torch.int32, torch.bool)
LARGE_CHUNKS = 3                # the case whose chunks are large (the method on every size)
STRIDED_CHUNKS = 2              # the case whose chunks are views with stride 2
# Any world size: a body may branch on it, so every one up to 8 is graded.
WORLD_SIZES = [1, 2, 3, 4, 5, 6, 7, 8]


def _case(shape, dtype):
    return f"shape {tuple(shape)}, {str(dtype).removeprefix('torch.')}"


def neighbours_worker(rank, world_size, impl):
    exchange = implementation(impl, "batching", "exchange_with_neighbours")
    return [call(exchange, seeded(rank, shape, dtype, i, special=True), must_complete=True,
                 case=_case(shape, dtype))
            for i, (shape, dtype) in enumerate(CASES)]


def ring_shift_worker(rank, world_size, impl, ks):
    ring_shift = implementation(impl, "batching", "ring_shift")
    return [call(ring_shift, seeded(rank, *CASES[i % len(CASES)], i, special=True), k, must_complete=True,
                 case=f"{_case(*CASES[i % len(CASES)])}, k={k}") for i, k in enumerate(ks)]


def _chunk_len(src, dst, case):
    """0 .. 3 elements, different per pair, some empty; 2^18 more in the large case."""
    return (3 * src + 5 * dst + case) % 4 + ((1 << 18) if case == LARGE_CHUNKS else 0)


def _chunk(src, dst, case, dtype):
    """What rank `src` sends rank `dst`: its length says from whom, for whom; its values are
    seeded per (src, dst, case), so that no rank can rebuild what it did not receive."""
    return seeded(src, (_chunk_len(src, dst, case),), dtype, 10_000 + 100 * dst + case, special=True)


def _every_other(chunk):
    """The same values as a view with stride 2: the contract says 1-D, not contiguous."""
    spread = torch.zeros(2 * chunk.numel(), dtype=chunk.dtype)
    spread[::2] = chunk
    return spread[::2]


def all_pairs_worker(rank, world_size, impl):
    all_pairs = implementation(impl, "batching", "all_pairs_exchange")
    return [call(all_pairs, [(_every_other if case == STRIDED_CHUNKS else torch.clone)(
                 _chunk(rank, dst, case, dtype)) for dst in range(world_size)],
                 must_complete=True, case=str(dtype).removeprefix("torch."))
            for case, dtype in enumerate(ALL_PAIRS_DTYPES)]


@pytest.mark.parametrize("world_size", WORLD_SIZES)
def test_exchange_with_neighbours(impl, world_size):
    what = "exchange_with_neighbours"
    results = grade(neighbours_worker, world_size, args=(impl,), what=what)
    for i, (shape, dtype) in enumerate(CASES):
        case = f"{what}({_case(shape, dtype)}, world_size={world_size})"
        for rank in range(world_size):
            done = results[rank][i]
            check_untouched(done, rank=rank, what=case)
            got = done.result
            if not (isinstance(got, tuple) and len(got) == 2):
                raise GradeFailure(f"{case}: rank {rank} must return (from_left, from_right), "
                                   f"got {type(got).__name__}")
            check_fresh(done, rank=rank, what=case, hint="return new tensors (with one rank: "
                        "two copies of your own tensor)")
            left, right = (rank - 1) % world_size, (rank + 1) % world_size
            check_close(got[0], seeded(left, shape, dtype, i, special=True), rank=rank,
                        what=f"{case}, from_left (rank {left}'s tensor)")
            check_close(got[1], seeded(right, shape, dtype, i, special=True), rank=rank,
                        what=f"{case}, from_right (rank {right}'s tensor)")
            if world_size > 1:
                check_one_batch(done.events, case, rank=rank, n_ops=4,
                                expected="its 2 sends and 2 receives")
    check_batched(results.trace, what)


@pytest.mark.parametrize("world_size", WORLD_SIZES)
def test_ring_shift(impl, world_size):
    ks = [1, 0, -1, 2, world_size, world_size + 1, -(world_size + 1), 3 * world_size - 1, 7, -6]
    ks += [k for k in range(world_size) if k not in {j % world_size for j in ks}]  # every shift
    ks += [-world_size] * len(CASES)     # and every case once with a whole turn (a copy)
    results = grade(ring_shift_worker, world_size, args=(impl, ks), what="ring_shift")
    check_p2p_only(results.trace, "ring_shift", builds="the shift")
    for i, k in enumerate(ks):
        shape, dtype = CASES[i % len(CASES)]
        case = f"ring_shift({_case(shape, dtype)}, k={k}) with world_size={world_size}"
        for rank in range(world_size):
            done = results[rank][i]
            check_untouched(done, rank=rank, what=case)
            check_fresh(done, rank=rank, what=case, hint="return a new tensor (a copy when "
                        "k % world_size == 0)")
            src = (rank - k) % world_size
            check_close(done.result, seeded(src, shape, dtype, i, special=True), rank=rank,
                        what=f"{case}: expected the tensor of rank {src}")
            _check_one_hop(done.events, case, rank, k, world_size)


def _check_one_hop(events, what, rank, k, world_size):
    """One message out to rank + k and one in from rank - k; none when k % n == 0."""
    ops = p2p_ops(events)
    if k % world_size == 0:
        if ops:
            raise GradeFailure(f"{what}: rank {rank} called {ops[0].describe()}; when "
                               f"k % world_size == 0 every rank keeps its own tensor: "
                               f"communicate nothing, return a copy")
        return
    dst, src = (rank + k) % world_size, (rank - k) % world_size
    check_peers(events, what, rank=rank, to=dst, frm=src,
                why="the tensor goes straight to its destination in one hop, not relayed "
                    "through the ranks in between")
    sends = [e for e in ops if e.op in ("send", "isend")]
    if len(sends) != 1 or len(ops) != 2:
        raise GradeFailure(f"{what}: rank {rank} posted {len(sends)} send(s) and "
                           f"{len(ops) - len(sends)} receive(s); expected one of each: the "
                           f"tensor goes straight to rank {dst} in one hop")


@pytest.mark.parametrize("world_size", WORLD_SIZES)
def test_all_pairs_exchange(impl, world_size):
    what = "all_pairs_exchange"
    results = grade(all_pairs_worker, world_size, args=(impl,), what=what)
    for case, dtype in enumerate(ALL_PAIRS_DTYPES):
        label = f"{what} ({dtype}, world_size={world_size})"
        for rank in range(world_size):
            done = results[rank][case]
            check_untouched(done, rank=rank, what=label)
            got = done.result
            if not isinstance(got, list) or len(got) != world_size:
                raise GradeFailure(f"{label}: rank {rank} must return a list of {world_size} "
                                   f"tensors, got {got!r:.100}")
            for src in range(world_size):
                check_close(got[src], _chunk(src, rank, case, dtype), rank=rank,
                            what=f"{label}, received[{src}] (rank {src}'s chunk for rank "
                                 f"{rank}, {_chunk_len(src, rank, case)} elements)")
            check_fresh(done, rank=rank, what=label,
                        hint="received[rank] is a copy of chunks[rank]")
            _check_two_phases(done.events, label, rank, world_size)
    _check_size_protocol(p2p_ops(results.trace), world_size, what)
    check_batched(results.trace, what)


def _check_two_phases(events, what, rank, world_size):
    """All the lengths in one batch, then all the chunks in another: no data in the first."""
    if world_size == 1:
        return
    ops = p2p_ops(events)
    size_batches = {e.batch for e in ops if e.tag == SIZE_TAG}
    data_in_size_batch = [e for e in ops if e.tag == DATA_TAG and e.batch in size_batches]
    if data_in_size_batch:
        raise GradeFailure(f"{what}: rank {rank} posted {data_in_size_batch[0].describe()} in "
                           f"the batch of lengths; the chunks go in a second batch, once "
                           f"every length has arrived and the receive buffers exist")
    if len(size_batches) != 1 or len({e.batch for e in ops if e.tag == DATA_TAG}) > 1:
        raise GradeFailure(f"{what}: rank {rank} used {len(size_batches)} batch(es) for the "
                           f"lengths and {len({e.batch for e in ops} - size_batches)} for the "
                           f"chunks; expected one batch_isend_irecv per phase")


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
