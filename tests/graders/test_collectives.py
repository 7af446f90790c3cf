"""Lesson 07 (labs/collectives.py): graders for p2p_broadcast, p2p_gather, p2p_all_gather
and p2p_all_to_all.

Each grader launches real workers (1-8 ranks); every rank runs the implementation under
test and the torch.distributed collective of the same name on the same data, for several
dtypes, shapes and roots (first, middle, last); the test compares them rank by rank (bitwise:
moving data must not change it); broadcast and gather post every transfer in one batch.
"""
import pytest
import torch

from labs.collectives import run_builtin, split_rows
from labs.harness.grading import (GradeFailure, call, check_batched, check_close, check_filled,
                                  check_fresh, check_one_batch, check_p2p_only, check_peers,
                                  check_returned_input, check_untouched, grade, implementation,
                                  p2p_ops, seeded)
from labs.harness.grading.inputs import every_dtype

DTYPES = ("float32", "bfloat16", "int64")
# "Any dtype": every other on one small shape (`tensor * 1` makes a bool an int64), so a body
# that widens or narrows some dtypes on the wire (float64 as float32, int8 as int64) meets it.
SMALL_DTYPES = (((6, 2), "float16"),) + tuple(
    (shape, str(dtype).removeprefix("torch.")) for shape, dtype in every_dtype([], shape=(5,))
    if str(dtype).removeprefix("torch.") not in DTYPES + ("float16",))
SHAPES = ((1,), (5,), (6, 2), (1000,), (1 << 18,))   # even and uneven splits; a large one
WORLD_SIZES = [1, 2, 3, 4, 5, 6, 7, 8]
# From 5 ranks on, every dtype and root, with fewer shapes: one tiny, one large.
LARGE_WORLD_SHAPES = ((5,), (1 << 18,))


@pytest.mark.parametrize("world_size", WORLD_SIZES)
def test_p2p_broadcast(impl, world_size):
    results = grade(collective_worker, world_size, args=(impl, "p2p_broadcast"),
                    what="p2p_broadcast")
    for rank, what, got, expected in every_case(results):
        check_method(got, what, "broadcast")
        if p2p_ops(got.events):         # src posts every send, then waits: not one at a time
            check_one_batch(got.events, what, rank=rank, expected="every send (or the receive)")
        check_returned_input(got, rank=rank, what=what, hint="broadcast is in place")
        check_close(got.result, expected, rank=rank, what=what, atol=0, rtol=0)


@pytest.mark.parametrize("world_size", WORLD_SIZES)
def test_p2p_gather(impl, world_size):
    results = grade(collective_worker, world_size, args=(impl, "p2p_gather"), what="p2p_gather")
    for rank, what, got, expected in every_case(results):
        check_method(got, what, "gather")
        if p2p_ops(got.events):         # dst posts every receive, then waits
            check_one_batch(got.events, what, rank=rank, expected="every receive (or the send)")
        if expected is not None:
            check_list(got.result, expected, rank=rank, what=what)
            check_fresh(got, rank=rank, what=what, hint="element dst of the list is a copy "
                        "of `tensor` (also with one rank)")
        elif got.result is not None:          # a rank that is not dst
            raise GradeFailure(f"{what}: rank {rank} returned {type(got.result).__name__} on "
                               f"a rank that is not dst; expected None")
        check_untouched(got, rank=rank, what=what)


@pytest.mark.parametrize("world_size", WORLD_SIZES)
def test_p2p_all_gather(impl, world_size):
    results = grade(collective_worker, world_size, args=(impl, "p2p_all_gather"),
                    what="p2p_all_gather")
    for rank, what, got, expected in every_case(results):
        check_method(got, what, "all_gather")
        check_list(got.result, expected, rank=rank, what=what)
        check_untouched(got, rank=rank, what=what)
        check_fresh(got, rank=rank, what=what, hint="return new tensors: your own slot is a "
                    "copy of `tensor` (also with one rank)")
        check_ring(got, what, rank=rank, world_size=len(expected))


@pytest.mark.parametrize("world_size", WORLD_SIZES)
def test_p2p_all_to_all(impl, world_size):
    results = grade(collective_worker, world_size, args=(impl, "p2p_all_to_all"),
                    what="p2p_all_to_all")
    for rank, what, got, expected in every_case(results):
        check_method(got, what, "all_to_all")
        check_returned_input(got, rank=rank, what=what, hint="it fills the list in place")
        check_filled(got, 0, rank=rank, what=what)
        check_untouched(got, rank=rank, what=what, writes=(0,))   # it fills outputs
        check_close(torch.cat(got.result), expected, rank=rank, what=what, atol=0, rtol=0)
        if p2p_ops(got.events):
            check_one_batch(got.events, what, rank=rank, expected="every send and receive")


def every_case(results):
    """(rank, what, Call, the built-in's result) for every case on every rank."""
    return [(rank, *record) for rank, records in enumerate(results) for record in records]


def check_method(got, what, builds):
    """P2POp + batch_isend_irecv only: the lesson builds `builds` itself."""
    check_p2p_only(got.events, what, builds=builds)
    check_batched(got.events, what, hint="the lesson posts P2POps with batch_isend_irecv")


def check_ring(got, what, *, rank, world_size):
    """W-1 steps, each one batch: one send to rank+1 and one receive from rank-1."""
    if world_size == 1:
        return
    nxt, prv = (rank + 1) % world_size, (rank - 1) % world_size
    check_peers(got.events, what, rank=rank, to=nxt, frm=prv,
                why="the lesson's all_gather is a ring, not a star")
    ops = p2p_ops(got.events)
    steps = sorted({e.batch for e in ops})
    if len(steps) != world_size - 1 or len(ops) != 2 * (world_size - 1):
        raise GradeFailure(f"{what}: rank {rank} posted {len(ops)} ops in {len(steps)} "
                           f"batch(es); the ring takes {world_size - 1} steps, each ONE batch "
                           f"of one send to rank {nxt} and one receive from rank {prv}")


def check_list(got, expected, *, rank, what):
    """`got` is a list of world-size tensors, `expected` (stacked) bitwise."""
    if not isinstance(got, list) or len(got) != len(expected):
        raise GradeFailure(f"{what}: rank {rank} returned {type(got).__name__}; expected a "
                           f"list of {len(expected)} tensors")
    for src, (t, e) in enumerate(zip(got, expected)):
        check_close(t, e, rank=rank, what=f"{what}, entry {src} (rank {src}'s tensor)",
                    atol=0, rtol=0)


# -- the worker: every case of one exercise, with the built-in's result beside it ----------

ROOT_NAME = {"p2p_broadcast": "src", "p2p_gather": "dst"}


def collective_worker(rank, world_size, impl, name):
    """[(what, Call, the built-in collective's result)] for every case of `name`."""
    fn = implementation(impl, "collectives", name)
    # roots at both ends and in the middle (an index that is right only at the ends)
    roots = sorted({0, world_size // 2, world_size - 1}) if name in ROOT_NAME else [None]
    shapes = SHAPES if world_size <= 4 else LARGE_WORLD_SHAPES
    cases = [(shape, dtype, root) for shape in shapes for dtype in DTYPES for root in roots] + \
        [(shape, dtype, root) for shape, dtype in SMALL_DTYPES for root in roots]
    records = []
    for salt, (shape, dtype, root) in enumerate(cases, start=1):
        x = seeded(rank, shape, dtype, salt, special=True)
        where = f", {ROOT_NAME[name]}={root}" if root is not None else ""
        what = f"{name}(shape {tuple(shape)}, {dtype}{where}) with world_size={world_size}"
        expected = builtin_bytes(name, x, root)
        if name == "p2p_all_to_all":
            inputs = split_rows(x, world_size)
            outputs = [torch.full_like(inputs[rank], 7) for _ in range(world_size)]
            records.append((what, call(fn, outputs, inputs, must_complete=True, case=what),
                            expected))
        else:
            args = (x,) if root is None else (x, root)
            records.append((what, call(fn, *args, must_complete=True, case=what), expected))
    if name == "p2p_all_to_all":
        records += uneven_all_to_all(fn, rank, world_size)
    return records


def builtin_bytes(name, x, root):
    """The built-in collective's result, moved as bytes (gloo's collectives refuse some
    dtypes, int16 among them; moving data does not depend on the dtype)."""
    moved = run_builtin(name.removeprefix("p2p_"), x.unsqueeze(-1).view(torch.uint8),
                        0 if root is None else root)         # each element: a row of bytes
    return None if moved is None else moved.view(x.dtype).squeeze(-1)


def uneven_all_to_all(fn, rank, world_size):
    """Sizes that differ per sender as well as per receiver (some empty): `outputs[j]` is
    shaped like what rank j sends here, which need not be shaped like anything of ours."""
    def rows(src, dst):
        return (src + 2 * dst) % 4

    records = []
    for salt, dtype in enumerate(("float32", "int64"), start=500):
        def piece(src, dst):
            return seeded(src, (rows(src, dst), 3), dtype, salt + 100 * dst, special=True)
        inputs = [piece(rank, peer) for peer in range(world_size)]
        outputs = [torch.full((rows(peer, rank), 3), 7, dtype=inputs[0].dtype)
                   for peer in range(world_size)]
        what = (f"p2p_all_to_all({dtype}, rank j sends rank i ((j + 2i) % 4) rows of 3) with "
                f"world_size={world_size}")
        expected = torch.cat([piece(peer, rank) for peer in range(world_size)])
        records.append((what, call(fn, outputs, inputs, must_complete=True, case=what),
                        expected))
    return records
