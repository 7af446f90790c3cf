"""Lesson 07 (labs/collectives.py): graders for p2p_broadcast, p2p_gather, p2p_all_gather
and p2p_all_to_all.

Each grader launches real workers (1-8 ranks); every rank runs the implementation under
test and the torch.distributed collective of the same name on the same data, for several
dtypes, shapes and roots (first, middle, last); the test compares them rank by rank (bitwise:
moving data must not change it), every case (not up to the first wrong one), and failing
cases that share a cause are told once, as that cause (labs/harness/grading/evidence.py);
broadcast and gather post every transfer in one batch.
"""
from dataclasses import dataclass

import pytest
import torch

from labs.collectives import run_builtin, split_rows
from labs.harness.grading import (Call, GradeFailure, call, check_batched, check_close,
                                  check_filled, check_fresh, check_one_batch, check_p2p_only,
                                  check_peers, check_returned_input, check_untouched, fail_if_any,
                                  grade, implementation, p2p_ops, seeded)
from labs.harness.grading.evidence import body_line, grouped, outcome
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
    grade_collective(impl, world_size, "p2p_broadcast", broadcast_checks)


@pytest.mark.parametrize("world_size", WORLD_SIZES)
def test_p2p_gather(impl, world_size):
    grade_collective(impl, world_size, "p2p_gather", gather_checks)


@pytest.mark.parametrize("world_size", WORLD_SIZES)
def test_p2p_all_gather(impl, world_size):
    grade_collective(impl, world_size, "p2p_all_gather", all_gather_checks)


@pytest.mark.parametrize("world_size", WORLD_SIZES)
def test_p2p_all_to_all(impl, world_size):
    grade_collective(impl, world_size, "p2p_all_to_all", all_to_all_checks)


def grade_collective(impl, world_size, name, checks):
    """Every case on every rank: `checks(rank, record)` runs the checks of the method and
    the contract (raising) and returns the values to compare, [(label, got, expected)].
    Wrong values are kept per case and rank (evidence.py): failing cases that share a cause
    are told once, as that cause, at the body's line."""
    results = grade(collective_worker, world_size, args=(impl, name), what=name)
    failures, outcomes = [], []
    for rank, record in every_case(results):
        try:
            compared = checks(rank, record)
        except GradeFailure as exc:
            failures.append(str(exc))
            continue
        for label, got, expected in compared:
            message = _compared(got, expected, rank=rank, what=label)
            failures += [message] * bool(message)
            outcomes.append(outcome(
                record.what, dtype=record.dtype, world_size=world_size, data=record.data,
                got=got if isinstance(got, torch.Tensor) else expected.new_empty(0),
                expected=expected, message=message, line=record.line, bits=True))
    fail_if_any(grouped(failures, outcomes, name, moved=True), name)


def _compared(got, expected, *, rank, what) -> str:
    """check_close's message, bitwise (moving data must not change it); "" if right."""
    try:
        check_close(got, expected, rank=rank, what=what, atol=0, rtol=0)
    except GradeFailure as exc:
        return str(exc)
    return ""


def broadcast_checks(rank, record):
    got, what = record.done, record.what
    check_method(got, what, "broadcast")
    if p2p_ops(got.events):         # src posts every send, then waits: not one at a time
        check_one_batch(got.events, what, rank=rank, expected="every send (or the receive)")
    check_returned_input(got, rank=rank, what=what, hint="broadcast is in place")
    return [(what, got.result, record.expected)]


def gather_checks(rank, record):
    got, what = record.done, record.what
    check_method(got, what, "gather")
    if p2p_ops(got.events):         # dst posts every receive, then waits
        check_one_batch(got.events, what, rank=rank, expected="every receive (or the send)")
    check_untouched(got, rank=rank, what=what)
    if record.expected is None:          # a rank that is not dst
        if got.result is not None:
            raise GradeFailure(f"{what}: rank {rank} returned {type(got.result).__name__} on "
                               f"a rank that is not dst; expected None")
        return []
    check_fresh(got, rank=rank, what=what, hint="element dst of the list is a copy of "
                "`tensor` (also with one rank)")
    return list_entries(got.result, record.expected, rank=rank, what=what)


def all_gather_checks(rank, record):
    got, what = record.done, record.what
    check_method(got, what, "all_gather")
    entries = list_entries(got.result, record.expected, rank=rank, what=what)
    check_untouched(got, rank=rank, what=what)
    check_fresh(got, rank=rank, what=what, hint="return new tensors: your own slot is a "
                "copy of `tensor` (also with one rank)")
    check_ring(got, what, rank=rank, world_size=len(record.expected))
    return entries


def all_to_all_checks(rank, record):
    got, what = record.done, record.what
    check_method(got, what, "all_to_all")
    check_returned_input(got, rank=rank, what=what, hint="it fills the list in place")
    check_filled(got, 0, rank=rank, what=what)
    check_untouched(got, rank=rank, what=what, writes=(0,))   # it fills outputs
    if p2p_ops(got.events):
        check_one_batch(got.events, what, rank=rank, expected="every send and receive")
    return [(what, torch.cat(got.result), record.expected)]


def every_case(results):
    """(rank, CaseRecord) for every case on every rank."""
    return [(rank, record) for rank, records in enumerate(results) for record in records]


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


def list_entries(got, expected, *, rank, what):
    """`got` is a list of world-size tensors: [(label, entry, `expected`'s entry)]."""
    if not isinstance(got, list) or len(got) != len(expected):
        raise GradeFailure(f"{what}: rank {rank} returned {type(got).__name__}; expected a "
                           f"list of {len(expected)} tensors")
    return [(f"{what}, entry {src} (rank {src}'s tensor)", t, e)
            for src, (t, e) in enumerate(zip(got, expected))]


# -- the worker: every case of one exercise, with the built-in's result beside it ----------

ROOT_NAME = {"p2p_broadcast": "src", "p2p_gather": "dst"}


@dataclass
class CaseRecord:
    """One case on one rank: what it was, the call, the built-in's result, what the body's
    result held before the call (this rank's input, or the outputs it fills) and the body's
    line where its data came in (evidence.body_line)."""

    what: str
    dtype: str
    done: Call
    expected: object          # a tensor, a stacked list's tensors, or None (not the root)
    data: torch.Tensor
    line: str


def collective_worker(rank, world_size, impl, name):
    """[CaseRecord] for every case of `name`, the built-in collective's result beside it."""
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
            args, data = (outputs, inputs), torch.cat(outputs)
        else:
            args, data = (x,) if root is None else (x, root), x
        done = call(fn, *args, must_complete=True, case=what)
        records.append(CaseRecord(what, dtype, done, expected, data, _line(fn)))
    if name == "p2p_all_to_all":
        records += uneven_all_to_all(fn, rank, world_size)
    return records


def _line(fn) -> str:
    return body_line(getattr(fn, "last_ops", ()), fn)


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
        data = torch.cat(outputs)
        done = call(fn, outputs, inputs, must_complete=True, case=what)
        records.append(CaseRecord(what, dtype, done, expected, data, _line(fn)))
    return records
