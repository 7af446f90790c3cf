"""Lesson 05 (labs/ring.py): graders for ring_reduce_scatter, ring_all_reduce and
pipelined_ring_all_reduce.

Every case (4 dtypes x many shapes, numel 0 and numel < world size included) runs inside
ONE launch per world size; the workers compare with dist.all_reduce on the same data and
report every wrong case at once, naming the rank, the case, and expected vs got. Each call's
trace must show the ring: point-to-point only, in the tensor's own dtype, chunk-sized
messages (segment-sized for the pipelined ring), 2(n-1)/n of the tensor per rank; and every
rank must end with the same bits.
"""
from dataclasses import dataclass

import pytest
import torch
import torch.distributed as dist

from labs.harness.grading import (GradeFailure, call, check_close, check_messages, check_p2p_only,
                                  check_same_on_every_rank,
                                  fail_if_any, grade, implementation, in_case,
                                  non_contiguous_case, recording, seeded)
from labs.harness.grading.evidence import grouped, outcome
from labs.ring import DTYPES, chunk_bounds
from tests.graders import bf16_sum_tolerance

SHAPES = [(), (0,), (1,), (2,), (3,), (7,), (3, 5), (2, 3, 4), (1, 1, 13), (257,), (4099,)]
# A large tensor too (4 MiB of float32): a body may keep the ring for small ones only.
LARGE = ((1 << 20) + 3,)
CASES = [(dtype, shape) for dtype in DTYPES for shape in SHAPES] + [
    ("float32", LARGE), ("bfloat16", LARGE)]
# The pipelined ring also gets small segments: many per chunk, down to one element each.
PIPELINE_CASES = [(d, s, None) for d, s in CASES] + [
    (d, s, 12) for d, s in CASES if 0 < torch.Size(s).numel() <= 64] + [
    ("float32", (37,), 1), ("int64", (3, 7), 8), ("float32", (4099,), 4096),
    ("bfloat16", (4099,), 1000), ("float64", (257,), 100),
    # The default segment (4 MiB) in use: at 2 ranks each chunk holds 5 MiB of float32.
    ("float32", (5 << 19,), None)]
WORLD_SIZES = [1, 2, 3, 4, 5, 6, 7, 8]
# From 5 ranks on, every dtype with fewer shapes: empty, fewer elements than ranks, uneven.
LARGE_WORLD_SHAPES = [(0,), (3,), (2, 3, 4), (257,), LARGE]


def for_world(cases, world_size):
    """All the cases up to 4 ranks; the LARGE_WORLD_SHAPES ones (every dtype) beyond."""
    if world_size <= 4:
        return cases
    return [c for c in cases if tuple(c[1]) in LARGE_WORLD_SHAPES]

# bfloat16 keeps 8 significant bits: every addition rounds with a relative error of at
# most u = 2**-8. A sum over n ranks in any order (the ring's, gloo's, or once in float32)
# is then within n * u * sum_i |x_i| of the exact sum, element by element.


@pytest.mark.parametrize("world_size", WORLD_SIZES)
def test_ring_reduce_scatter(impl, world_size):
    ranks = grade(reduce_scatter_grader, world_size, args=(impl,), timeout=60,
                  what="ring_reduce_scatter")
    fail_if_any(grouped([f for r in ranks for f in r.failures],
                        [o for r in ranks for o in r.outcomes], "ring_reduce_scatter"),
                "ring_reduce_scatter")


@pytest.mark.parametrize("world_size", WORLD_SIZES)
def test_ring_all_reduce(impl, world_size):
    grade_all_reduce(impl, "ring_all_reduce", for_world(CASES, world_size), world_size)


@pytest.mark.parametrize("world_size", WORLD_SIZES)
def test_pipelined_ring_all_reduce(impl, world_size):
    grade_all_reduce(impl, "pipelined_ring_all_reduce", for_world(PIPELINE_CASES, world_size),
                     world_size)


@dataclass
class RankGrade:
    """One rank's verdict on every case, and the tensor it ended with in each."""

    failures: list[str]
    sums: list[torch.Tensor]
    outcomes: list = ()        # each case's CaseOutcome: the evidence for a shared cause


def grade_all_reduce(impl, name, cases, world_size):
    ranks = grade(all_reduce_grader, world_size, args=(impl, name, cases), timeout=60,
                  what=name)
    failures = [f for r in ranks for f in r.failures]
    outcomes = [o for r in ranks for o in r.outcomes]
    failed = {o.case for o in outcomes if o.message}
    for i, (dtype, shape, *_) in enumerate(cases):
        if outcomes[i].case in failed:      # wrong values: ranks that differ say no more
            continue
        try:
            check_same_on_every_rank([r.sums[i] for r in ranks], what=f"case {i} ({dtype}, "
                                     f"shape {tuple(shape)}, world_size {world_size})")
        except GradeFailure as exc:
            failures.append(str(exc))
    fail_if_any(grouped(failures, outcomes, name), name)


# -- the workers: each returns this rank's failures, as messages ----------------------------

def all_reduce_grader(rank, world_size, impl, name, cases):
    fn = implementation(impl, "ring", name)
    failures, method_failed = [], False     # a method failure is reported once, not per case
    sums, outcomes = [], []
    for i, (dtype, shape, *extra) in enumerate(cases):
        segment = extra[0] if extra else None
        kwargs = {"segment_bytes": segment} if segment else {}
        case = f"{dtype}, shape {tuple(shape)}{f', segment_bytes={segment}' if segment else ''}"
        what = f"case {i} ({case}, world_size {world_size})"
        data, expected, exact, magnitude = _reference(rank, dtype, shape, seed=100 + i)
        tensor = data.clone()
        done = call(fn, tensor, case=case, **kwargs)
        sums.append(tensor.clone())
        message = ""
        try:
            if not done.returned_first:
                raise GradeFailure(f"{what}: rank {rank} must return the tensor it was given "
                                   f"(summed in place), got {type(done.result).__name__}")
            check_sum(tensor, expected, exact, magnitude, rank=rank, world_size=world_size,
                      what=what)
        except GradeFailure as exc:
            message = str(exc)
            failures.append(message)
        outcomes.append(outcome(
            case, dtype=dtype, world_size=world_size, data=data, got=tensor, message=message,
            expected=expected if exact is None else exact, ops=getattr(fn, "last_ops", ()),
            allowed=None if exact is None else bf16_sum_tolerance(world_size, magnitude), body=fn))
        if not method_failed:
            default = 4 << 20 if name == "pipelined_ring_all_reduce" else None
            method_failed = _failed(failures, check_ring_traffic, done.events, what, rank=rank,
                                    numel=data.numel(), dtype=dtype, world_size=world_size,
                                    steps=2 * (world_size - 1), segment_bytes=segment or default)
        if not method_failed and name == "pipelined_ring_all_reduce":
            method_failed = _failed(failures, check_pipelined, done.events, what, rank=rank)
    return RankGrade(failures + non_contiguous_case(fn, rank, what=name), sums, outcomes)


def reduce_scatter_grader(rank, world_size, impl):
    fn = implementation(impl, "ring", "ring_reduce_scatter")
    failures, method_failed, outcomes = [], False, []
    for i, (dtype, shape) in enumerate(for_world(CASES, world_size)):
        what = f"case {i} ({dtype}, shape {tuple(shape)}, world_size {world_size})"
        data, expected, exact, magnitude = _reference(rank, dtype, shape, seed=300 + i)
        start, stop = chunk_bounds(data.numel(), world_size)[rank]
        tensor = data.clone()
        mine = tensor.view(-1)[start:stop]
        with in_case(f"{dtype}, shape {tuple(shape)}"), recording() as events:
            out = fn(tensor)
        told = len(failures)
        try:
            if not isinstance(out, torch.Tensor) or out.shape != mine.shape or (
                    mine.numel() and out.data_ptr() != mine.data_ptr()):
                raise GradeFailure(
                    f"{what}: rank {rank} must return the view tensor.view(-1)[{start}:{stop}] "
                    f"(its own chunk), got {type(out).__name__} "
                    f"{tuple(out.shape) if isinstance(out, torch.Tensor) else ''}")
            def part(t, start=start, stop=stop):
                return None if t is None else t.reshape(-1)[start:stop]
            check_sum(mine, part(expected), part(exact), part(magnitude), rank=rank,
                      world_size=world_size,
                      what=what + f", chunk {rank} = elements [{start}:{stop}]")
        except GradeFailure as exc:
            failures.append(str(exc))
        outcomes.append(_chunk_outcome(dtype, shape, fn, data, mine,
                                       expected if exact is None else exact,
                                       (start, stop), failures[told:], world_size,
                                       allowed=None if exact is None else
                                       bf16_sum_tolerance(world_size, magnitude)))
        if not method_failed:
            method_failed = _failed(failures, check_ring_traffic, events, what, rank=rank,
                                    numel=data.numel(), dtype=dtype, world_size=world_size,
                                    steps=world_size - 1)
    return RankGrade(failures, [], outcomes)


def _chunk_outcome(dtype, shape, fn, data, mine, expected, bounds, told, world_size, allowed):
    """The case's evidence in the whole tensor's flat indices: the rank's own chunk as the
    body left it, every other element as expected (a reduce-scatter owes only its chunk)."""
    start, stop = bounds
    got = expected.clone().to(data.dtype)
    if got.view(-1)[start:stop].shape == mine.shape:
        got.view(-1)[start:stop] = mine
    return outcome(f"{dtype}, shape {tuple(shape)}", dtype=dtype, world_size=world_size,
                   data=data, got=got, expected=expected, message=told[0] if told else "",
                   ops=getattr(fn, "last_ops", ()), body=fn, allowed=allowed)


def _failed(failures, check, *args, **kwargs) -> bool:
    """Run `check`; if it fails, add its message to `failures` and say so."""
    try:
        check(*args, **kwargs)
        return False
    except GradeFailure as exc:
        failures.append(str(exc))
        return True


def check_ring_traffic(events, what, *, rank, numel, dtype, world_size, steps,
                       segment_bytes=None):
    """Point-to-point only, and the ring's traffic: `steps` messages of at most one chunk,
    ceil(N/n) elements (one segment, if smaller), in the tensor's own dtype."""
    check_p2p_only(events, what, builds="the ring")
    chunk = -(-numel // world_size)
    why = (f"the ring sends {steps} messages per rank, each at most one chunk (ceil(N/n) = "
           f"{chunk} elements): {steps}/{world_size} of the tensor, never whole tensors")
    largest = chunk
    if segment_bytes and max(1, segment_bytes // getattr(torch, dtype).itemsize) < chunk:
        largest = max(1, segment_bytes // getattr(torch, dtype).itemsize)
        why = (f"each message is one segment of at most segment_bytes={segment_bytes} BYTES "
               f"= {largest} {dtype} element(s), not one chunk")
    check_messages(events, what, rank=rank, dtype=dtype, largest=largest,
                   total=steps * chunk, why=why)


def check_pipelined(events, what, *, rank):
    """The pipeline: while this rank adds one segment, the next is already on the wire. From
    the record: some moment with two receives posted and not yet waited (every receive
    posted first, as the hint says, has them all in flight)."""
    receives = [e for e in events if e.rank == rank and e.op in ("recv", "irecv")]
    if len(receives) < 2:
        return
    in_flight, most = set(), 0
    for e in sorted((e for e in events if e.rank == rank), key=lambda e: e.seq):
        if e.op == "irecv":
            in_flight.add(e.seq)
        elif e.op == "wait":
            in_flight.discard(e.waits_for)
        most = max(most, len(in_flight))
    if most < 2:
        raise GradeFailure(
            f"{what}: rank {rank} never had two receives in flight at once ({len(receives)} "
            f"received one at a time): a pipeline keeps the next segment on the wire while it "
            f"adds this one. Post the receives first (the hint: all of them, in step order), "
            f"then wait for each in turn")
    _check_forwards_with_next_on_the_wire(events, what, rank=rank, receives=len(receives))


def _check_forwards_with_next_on_the_wire(events, what, *, rank, receives):
    """Not only once: whenever this rank forwards a segment (a send after its first wait)
    while receives are still to come, the next one is already posted."""
    in_flight, posted, waited_once = set(), 0, False
    for e in sorted((e for e in events if e.rank == rank), key=lambda e: e.seq):
        if e.op in ("recv", "irecv"):
            posted += 1
            if e.op == "irecv":
                in_flight.add(e.seq)
        elif e.op == "wait":
            waited_once = waited_once or e.waits_for in in_flight
            in_flight.discard(e.waits_for)
        elif e.op in ("send", "isend") and waited_once and posted < receives and not in_flight:
            raise GradeFailure(
                f"{what}: rank {rank} forwarded a segment ({e.describe()}) with no receive "
                f"posted for the next one ({posted} of its {receives} posted): the pipeline "
                f"keeps the next segment on the wire while it adds and forwards this one. "
                f"Post the receives first (the hint: all of them, in step order)")


def _reference(rank, dtype, shape, seed):
    """This rank's data, dist.all_reduce of it, the exact float64 sum and sum of |x|."""
    data = seeded(rank, shape, dtype, seed)
    expected = data.clone()
    dist.all_reduce(expected)
    exact = magnitude = None
    if dtype == "bfloat16":   # one more all_reduce, for the exact sum and sum of |x|
        both = torch.stack([data.double(), data.double().abs()])
        dist.all_reduce(both)
        exact, magnitude = both[0], both[1]
    return data, expected, exact, magnitude


def check_sum(got, expected, exact, magnitude, *, rank, world_size, what):
    """Raise GradeFailure if `got` is wrong; `expected` is dist.all_reduce's result."""
    if got.dtype != torch.bfloat16:
        check_close(got, expected, rank=rank, what=what)
        return
    check_close(got, expected, rank=rank, what=what, atol=float("inf"))  # shape and dtype
    err = (got.double() - exact).abs()
    allowed = bf16_sum_tolerance(world_size, magnitude)
    if got.numel() and bool((err > allowed).any()):
        i = int((err - allowed).flatten().argmax())
        raise GradeFailure(
            f"{what}: rank {rank} is wrong at flat index {i}: got "
            f"{got.flatten()[i].item()!r}, dist.all_reduce gives "
            f"{expected.flatten()[i].item()!r}, exact sum {exact.flatten()[i].item():.6g}; "
            f"bfloat16 allows an error of n * 2**-8 * sum|x| = {allowed.flatten()[i].item():.3g}")
