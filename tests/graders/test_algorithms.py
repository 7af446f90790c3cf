"""Lesson 10 (labs/algorithms.py): graders for tree_broadcast,
recursive_doubling_all_reduce and halving_doubling_all_reduce.

Each grader checks the values on every rank and the method from each call's trace:
point-to-point only, who talks to whom, how many messages and how many bytes per rank.
tests/lessons/test_algorithms.py proves they reject the wrong bodies in bodies/algorithms/__init__.py.
"""
import math
from dataclasses import dataclass

import pytest
import torch

from labs.harness.grading import (GradeFailure, call, check_close, check_p2p_only,
                                  check_same_on_every_rank,
                                  fail_if_any, grade, implementation, non_contiguous_case,
                                  p2p_ops, seeded)
from labs.harness.grading.evidence import body_line, grouped, outcome
from labs.harness.grading.inputs import every_dtype
from tests.graders import bf16_sum_tolerance

DTYPES = ["float32", "float64", "bfloat16", "int64"]
# The broadcast moves any dtype: the others once each (a tree that widens float16 shows).
OTHER_DTYPES = [str(d).removeprefix("torch.") for _, d in every_dtype([])
                if str(d).removeprefix("torch.") not in DTYPES]
SHAPES = [(), (0,), (1,), (3,), (2, 5), (257,)]
CASES = [(dtype, shape) for dtype in DTYPES for shape in SHAPES]
WORLD_SIZES = [1, 2, 3, 4, 5, 6, 7, 8]


# A large tensor too (4 MiB of float32): a body may keep the method for small ones only.
LARGE_CASE = ("float32", ((1 << 20) + 3,))


def method_case(world_size):
    """The case whose trace is checked: more elements than ranks, an odd count."""
    return ("float32", (1000 * world_size + 3,))


# ----------------------------------------------------------------------------------------
# Workers
# ----------------------------------------------------------------------------------------

def broadcast_worker(rank, world_size, impl, cases):
    fn = implementation(impl, "algorithms", "tree_broadcast")
    return [call(fn, seeded(src, shape, dtype, i, special=True) if rank == src
                 else torch.zeros(shape, dtype=getattr(torch, dtype)), src, must_complete=True)
            for i, (dtype, shape, src) in enumerate(cases)]


@dataclass
class RankCalls:
    """One rank's calls, one per case, and the body's line that posted each one's last
    receive (where a wrong value came in: evidence.py)."""

    calls: list
    lines: list[str]


def all_reduce_worker(rank, world_size, impl, name, cases):
    fn = implementation(impl, "algorithms", name)
    calls, lines = [], []
    for i, (dtype, shape) in enumerate(cases):
        calls.append(call(fn, seeded(rank, shape, dtype, i), must_complete=True))
        lines.append(body_line(getattr(fn, "last_ops", ()), fn))
    failures = non_contiguous_case(fn, rank, what=name)
    if failures:
        raise GradeFailure(failures[0])
    return RankCalls(calls, lines)


# ----------------------------------------------------------------------------------------
# Checks
# ----------------------------------------------------------------------------------------

def _in_place(c, rank, what):
    if not c.returned_first:
        raise GradeFailure(f"{what}: rank {rank} must work in place and return the tensor it "
                           f"was given, got {type(c.result).__name__}")


def _exact(i, dtype, shape, world_size):
    """(the exact sum, the error each element may have: None for check_close's default)."""
    inputs = [seeded(r, shape, dtype, i) for r in range(world_size)]
    if dtype == "int64" or not inputs[0].numel():      # int64: summed as integers, exactly
        return (torch.stack(inputs).sum(0) if inputs[0].numel() else inputs[0]), None
    wide = torch.stack([t.double() for t in inputs])
    allowed = bf16_sum_tolerance(world_size, wide.abs().sum(0)) if dtype == "bfloat16" else None
    return wide.sum(0), allowed


def _outcome(results, i, rank, dtype, shape, message):
    """Case i on `rank` as evidence for a shared cause (evidence.py)."""
    got = results[rank].calls[i].result
    expected, allowed = _exact(i, dtype, shape, len(results))
    return outcome(f"{dtype}, shape {shape}", dtype=dtype, world_size=len(results),
                   data=seeded(rank, shape, dtype, i), message=message,
                   got=got if isinstance(got, torch.Tensor) else torch.empty(0),
                   expected=expected.to(got.dtype) if allowed is None and
                   isinstance(got, torch.Tensor) else expected,
                   allowed=allowed, line=results[rank].lines[i])


def _check_sum(got, i, dtype, shape, world_size, rank, what):
    if dtype == "int64":      # values beyond 2**53: summed as integers, exactly
        ints = [seeded(r, shape, dtype, i) for r in range(world_size)]
        check_close(got, torch.stack(ints).sum(0) if ints[0].numel() else ints[0],
                    rank=rank, what=what)
        return
    inputs = [seeded(r, shape, dtype, i).double() for r in range(world_size)]
    exact = torch.stack(inputs).sum(0) if inputs[0].numel() else inputs[0]
    if dtype != "bfloat16":
        check_close(got, exact.to(getattr(torch, dtype)), rank=rank, what=what)
        return
    check_close(got, exact.to(torch.bfloat16), rank=rank, what=what, atol=float("inf"))
    allowed = bf16_sum_tolerance(world_size, torch.stack(inputs).abs().sum(0)) if got.numel() \
        else exact
    err = (got.double() - exact).abs()
    if got.numel() and bool((err > allowed).any()):
        j = int((err - allowed).flatten().argmax())
        got_j, exact_j, allowed_j = (t.flatten()[j].item() for t in (got, exact, allowed))
        raise GradeFailure(f"{what}: rank {rank} is wrong at flat index {j}: got {got_j!r}, "
                           f"exact sum {exact_j:.6g}; bfloat16 allows n * 2**-8 * sum|x| = "
                           f"{allowed_j:.3g}")


def tree_rounds_from_trace(calls, src, world_size, what):
    """The rounds a broadcast took, from who sent to whom in which order (one port per rank:
    a rank's k-th send goes out k rounds after the data reached it)."""
    reached, frontier = {src: 0}, [src]
    while frontier:
        rank = frontier.pop()
        sends = p2p_ops(calls[rank].events, ops=("send", "isend"))
        for k, e in enumerate(sorted(sends, key=lambda e: e.seq), 1):
            if e.peer in reached:
                raise GradeFailure(f"{what}: rank {rank} sent to rank {e.peer}, which already "
                                   f"had the data; every rank receives exactly once")
            reached[e.peer] = reached[rank] + k
            frontier.append(e.peer)
    missing = sorted(set(range(world_size)) - set(reached))
    if missing:
        raise GradeFailure(f"{what}: no rank sent the data to rank(s) {missing}")
    return max(reached.values())


def check_tree(calls, src, numel, world_size, what):
    """Point-to-point only; one whole-tensor receive per rank (none on src) from the rank
    that sends to it; and ceil(log2 p) rounds: a binomial tree, not a star or a chain."""
    for rank, c in enumerate(calls):
        check_p2p_only(c.events, what)
        recvs = p2p_ops(c.events, ops=("recv", "irecv"))
        wanted = 0 if rank == src else 1
        if len(recvs) != wanted or any(e.numel != numel for e in recvs):
            raise GradeFailure(f"{what}: rank {rank} received {len(recvs)} message(s) "
                               f"({[e.numel for e in recvs]} elements); expected {wanted} of "
                               f"{numel} elements: each rank receives the tensor once")
    rounds = tree_rounds_from_trace(calls, src, world_size, what)
    best = math.ceil(math.log2(world_size)) if world_size > 1 else 0
    if rounds > best:
        raise GradeFailure(f"{what}: the data reached the last rank after {rounds} rounds "
                           f"(a rank sends one message per round); a binomial tree needs "
                           f"ceil(log2 {world_size}) = {best}: every rank that has the data "
                           f"must forward it, so the number of holders doubles each round")


def _sends(c):
    return sorted(p2p_ops(c.events, ops=("send", "isend")), key=lambda e: e.seq)


def check_doubling(calls, numel, world_size, what, halving):
    """The message pattern of recursive doubling (halving=False) or halving-doubling:
    the partners rank ^ mask, how many messages, how many elements per rank."""
    q = 1 << (world_size.bit_length() - 1)
    steps = q.bit_length() - 1
    core = 2 * steps if halving else steps
    ideal = 2 * numel * (q - 1) // q if halving else steps * numel
    for rank, c in enumerate(calls):
        check_p2p_only(c.events, what)
        sends = _sends(c)
        if rank >= q:          # an extra rank: folds its tensor in, gets the sum back
            if [(e.peer, e.numel) for e in sends] != [(rank - q, numel)]:
                raise GradeFailure(f"{what}: rank {rank} is one of the {world_size - q} extra "
                                   f"rank(s) beyond the power of two {q}: it must send its "
                                   f"whole tensor to rank {rank - q} once (fold_in) and "
                                   f"nothing else; it sent {_describe(sends)}")
            continue
        folds = [e for e in sends if e.peer == rank + q and e.numel == numel] \
            if rank + q < world_size else []
        inner = [e for e in sends if e not in folds]
        partners = sorted(rank ^ (1 << k) for k in range(steps) for _ in range(1 + halving))
        sent = sum(e.numel for e in inner)
        slack = 2 * steps if halving else 0      # other ways of halving may round differently
        if len(folds) != (rank + q < world_size) or sorted(e.peer for e in inner) != partners \
                or abs(sent - ideal) > slack:
            kind = "halving-doubling" if halving else "recursive doubling"
            raise GradeFailure(
                f"{what}: rank {rank} sent {_describe(sends)}; {kind} on {q} ranks sends "
                f"{core} messages, {'2 to each' if halving else 'one to each'} of ranks "
                f"{sorted(set(partners))}, {ideal} elements in all"
                + (f", plus the sum to extra rank {rank + q} (fold_out)"
                   if rank + q < world_size else ""))


def _describe(sends):
    return f"{len(sends)} message(s): " + ", ".join(f"{e.numel} to {e.peer}" for e in sends)


# ----------------------------------------------------------------------------------------
# The graders
# ----------------------------------------------------------------------------------------

def grade_tree_broadcast(impl, world_size):
    roots = sorted({0, world_size - 1, world_size // 2})
    cases = [(dtype, shape, src) for src in roots for dtype, shape in CASES] + \
        [(*method_case(world_size), src) for src in roots] + [(*LARGE_CASE, roots[-1])] + \
        [(dtype, (5,), roots[-1]) for dtype in OTHER_DTYPES]      # "any dtype": moved as is
    results = grade(broadcast_worker, world_size, args=(impl, cases),
                    what="tree_broadcast")
    failures = []
    for i, (dtype, shape, src) in enumerate(cases):
        what = (f"case {i} (tree_broadcast from {src}, {dtype}, shape {shape}, "
                f"world_size {world_size})")
        try:
            for rank in range(world_size):
                _in_place(results[rank][i], rank, what)
                check_close(results[rank][i].result, seeded(src, shape, dtype, i, special=True),
                            rank=rank, what=what)
            if torch.Size(shape).numel():      # the tree on every case that moves data
                check_tree([r[i] for r in results], src, torch.Size(shape).numel(),
                           world_size, what)
        except GradeFailure as exc:
            failures.append(str(exc))
    fail_if_any(failures, "tree_broadcast")


def grade_all_reduce(impl, name, world_size):
    cases = CASES + [LARGE_CASE, method_case(world_size)]
    results = grade(all_reduce_worker, world_size, args=(impl, name, cases),
                    what=name)
    failures, outcomes = [], []
    for i, (dtype, shape) in enumerate(cases):
        what = f"case {i} ({name}, {dtype}, shape {shape}, world_size {world_size})"
        wrong = {}        # rank -> its wrong value: the evidence for a shared cause
        for rank in range(world_size):
            try:
                _in_place(results[rank].calls[i], rank, what)
                _check_sum(results[rank].calls[i].result, i, dtype, shape, world_size, rank,
                           what)
            except GradeFailure as exc:
                wrong[rank] = str(exc)
                break
        outcomes += [_outcome(results, i, rank, dtype, shape, wrong.get(rank, ""))
                     for rank in range(world_size)]
        try:
            if wrong:
                raise GradeFailure(*wrong.values())
            check_same_on_every_rank([r.calls[i].result for r in results], what=what)
            if i == len(cases) - 1:
                check_doubling([r.calls[i] for r in results], torch.Size(shape).numel(),
                               world_size, what, halving=name == "halving_doubling_all_reduce")
        except GradeFailure as exc:
            failures.append(str(exc))
    fail_if_any(grouped(failures, outcomes, name), name)


@pytest.mark.parametrize("world_size", WORLD_SIZES)
def test_tree_broadcast(impl, world_size):
    grade_tree_broadcast(impl, world_size)


@pytest.mark.parametrize("world_size", WORLD_SIZES)
def test_recursive_doubling_all_reduce(impl, world_size):
    grade_all_reduce(impl, "recursive_doubling_all_reduce", world_size)


@pytest.mark.parametrize("world_size", WORLD_SIZES)
def test_halving_doubling_all_reduce(impl, world_size):
    grade_all_reduce(impl, "halving_doubling_all_reduce", world_size)
