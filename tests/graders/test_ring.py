"""Lesson 05 (labs/ring.py): graders for ring_reduce_scatter, ring_all_reduce and
pipelined_ring_all_reduce.

Every case (4 dtypes x many shapes, numel 0 and numel < world size included) runs inside
ONE launch per world size; the workers compare with dist.all_reduce on the same data and
report every wrong case at once, naming the rank, the case, and expected vs got.
"""
import pytest
import torch
import torch.distributed as dist

from labs.harness.grading import (GradeFailure, check_close, fail_if_any, grade, implementation,
                                  seeded)
from labs.ring import DTYPES, chunk_bounds

SHAPES = [(), (0,), (1,), (2,), (3,), (7,), (3, 5), (2, 3, 4), (1, 1, 13), (257,), (4099,)]
CASES = [(dtype, shape) for dtype in DTYPES for shape in SHAPES]
# The pipelined ring also gets small segments: many per chunk, down to one element each.
PIPELINE_CASES = [(d, s, None) for d, s in CASES] + [
    (d, s, 12) for d, s in CASES if 0 < torch.Size(s).numel() <= 64] + [
    ("float32", (37,), 1), ("int64", (3, 7), 8), ("float32", (4099,), 4096),
    ("bfloat16", (4099,), 1000), ("float64", (257,), 100)]
WORLD_SIZES = [1, 2, 3, 4]

# bfloat16 keeps 8 significant bits: every addition rounds with a relative error of at
# most u = 2**-8. A sum over n ranks in any order (the ring's, gloo's, or once in float32)
# is then within n * u * sum_i |x_i| of the exact sum, element by element.
BF16_U = 2.0 ** -8


@pytest.mark.parametrize("world_size", WORLD_SIZES)
def test_ring_reduce_scatter(impl, world_size):
    results = grade(reduce_scatter_grader, world_size, args=(impl,), timeout=60,
                    what="ring_reduce_scatter")
    fail_if_any(results, "ring_reduce_scatter")


@pytest.mark.parametrize("world_size", WORLD_SIZES)
def test_ring_all_reduce(impl, world_size):
    results = grade(all_reduce_grader, world_size, args=(impl, "ring_all_reduce", CASES),
                    timeout=60, what="ring_all_reduce")
    fail_if_any(results, "ring_all_reduce")


@pytest.mark.parametrize("world_size", WORLD_SIZES)
def test_pipelined_ring_all_reduce(impl, world_size):
    results = grade(all_reduce_grader, world_size,
                    args=(impl, "pipelined_ring_all_reduce", PIPELINE_CASES),
                    timeout=60, what="pipelined_ring_all_reduce")
    fail_if_any(results, "pipelined_ring_all_reduce")


# -- the workers: each returns this rank's failures, as messages ----------------------------

def all_reduce_grader(rank, world_size, impl, name, cases):
    fn = implementation(impl, "ring", name)
    failures = []
    for i, (dtype, shape, *extra) in enumerate(cases):
        kwargs = {"segment_bytes": extra[0]} if extra and extra[0] else {}
        what = f"case {i} ({dtype}, shape {tuple(shape)}{', ' if kwargs else ''}" \
               f"{', '.join(f'{k}={v}' for k, v in kwargs.items())}, world_size {world_size})"
        data, expected, exact, magnitude = _reference(rank, dtype, shape, seed=100 + i)
        tensor = data.clone()
        out = fn(tensor, **kwargs)
        try:
            if not _same_tensor(out, tensor):
                raise GradeFailure(f"{what}: rank {rank} must return the tensor it was given "
                                   f"(summed in place), got {type(out).__name__} "
                                   f"{tuple(out.shape) if isinstance(out, torch.Tensor) else ''}")
            check_sum(tensor, expected, exact, magnitude, rank=rank, world_size=world_size,
                      what=what)
        except GradeFailure as exc:
            failures.append(str(exc))
    return failures


def reduce_scatter_grader(rank, world_size, impl):
    fn = implementation(impl, "ring", "ring_reduce_scatter")
    failures = []
    for i, (dtype, shape) in enumerate(CASES):
        what = f"case {i} ({dtype}, shape {tuple(shape)}, world_size {world_size})"
        data, expected, exact, magnitude = _reference(rank, dtype, shape, seed=300 + i)
        start, stop = chunk_bounds(data.numel(), world_size)[rank]
        tensor = data.clone()
        out = fn(tensor)
        mine = tensor.view(-1)[start:stop]
        try:
            if not isinstance(out, torch.Tensor) or out.shape != mine.shape or (
                    mine.numel() and out.data_ptr() != mine.data_ptr()):
                raise GradeFailure(
                    f"{what}: rank {rank} must return the view tensor.view(-1)[{start}:{stop}] "
                    f"(its own chunk), got {type(out).__name__} "
                    f"{tuple(out.shape) if isinstance(out, torch.Tensor) else ''}")
            part = (lambda t: None if t is None else t.reshape(-1)[start:stop])
            check_sum(mine, part(expected), part(exact), part(magnitude), rank=rank,
                      world_size=world_size,
                      what=what + f", chunk {rank} = elements [{start}:{stop}]")
        except GradeFailure as exc:
            failures.append(str(exc))
    return failures


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


def _same_tensor(out, tensor):
    return (isinstance(out, torch.Tensor) and out.shape == tensor.shape
            and out.data_ptr() == tensor.data_ptr())


def check_sum(got, expected, exact, magnitude, *, rank, world_size, what):
    """Raise GradeFailure if `got` is wrong; `expected` is dist.all_reduce's result."""
    if got.dtype != torch.bfloat16:
        check_close(got, expected, rank=rank, what=what)
        return
    check_close(got, expected, rank=rank, what=what, atol=float("inf"))  # shape and dtype
    err = (got.double() - exact).abs()
    allowed = world_size * BF16_U * magnitude
    if got.numel() and bool((err > allowed).any()):
        i = int((err - allowed).flatten().argmax())
        raise GradeFailure(
            f"{what}: rank {rank} is wrong at flat index {i}: got "
            f"{got.flatten()[i].item()!r}, dist.all_reduce gives "
            f"{expected.flatten()[i].item()!r}, exact sum {exact.flatten()[i].item():.6g}; "
            f"bfloat16 allows an error of n * 2**-8 * sum|x| = {allowed.flatten()[i].item():.3g}")
