"""Shared by the graders in tests/: run an exercise on real workers, explain failures.

`make check` grades your code in labs/ (`--impl=labs`); CI grades solutions/.
Grader worker functions call `implementation(impl, "ring", "ring_all_reduce")` to get the
function under test: `solutions.ring.ring_all_reduce`, or the body you wrote in
`labs.ring.ring_all_reduce` (never silently replaced by the solution: `grade` forces
P2P_COURSE_SOLUTIONS=0 in the workers).
"""
from __future__ import annotations

import importlib

import torch

from labs.harness.exercises import SOLUTIONS_ENV
from labs.harness.launcher import HangError, WorkerError, launch


class GradeFailure(AssertionError):
    """An exercise produced a wrong result or failed; the message says what and where."""


def implementation(impl: str, module: str, name: str):
    if impl not in ("labs", "solutions"):
        raise ValueError(f"impl must be 'labs' or 'solutions', got {impl!r}")
    fn = getattr(importlib.import_module(f"{impl}.{module}"), name)
    return getattr(fn, "stub", fn) if impl == "labs" else fn


def grade(worker, world_size, args=(), timeout=30.0, what="the exercise", **kwargs):
    """launch() for graders: quiet, stubs never replaced, failures turned into advice."""
    try:
        return launch(worker, world_size, args=args, timeout=timeout, quiet=True,
                      env={SOLUTIONS_ENV: "0"}, **kwargs)
    except WorkerError as exc:
        if any("NotImplementedError" in c for c in exc.causes.values()):
            raise GradeFailure(f"{what} is not implemented yet: "
                               f"{next(iter(exc.causes.values()))}") from None
        raise GradeFailure(f"{what} failed on real workers (world_size={world_size}):\n"
                           f"{exc}") from None
    except HangError as exc:
        raise GradeFailure(f"{what} hung with world_size={world_size} (a deadlock or an "
                           f"unmatched send/recv):\n{exc}") from None


def check_close(got, expected, *, rank, what, atol=1e-5, rtol=1e-5):
    """Raise GradeFailure saying which rank was wrong and by how much."""
    if not isinstance(got, torch.Tensor):
        raise GradeFailure(f"{what}: rank {rank} returned {type(got).__name__}, expected a tensor")
    if got.shape != expected.shape or got.dtype != expected.dtype:
        raise GradeFailure(f"{what}: rank {rank} returned shape {tuple(got.shape)} {got.dtype}, "
                           f"expected shape {tuple(expected.shape)} {expected.dtype}")
    exact = not (expected.is_floating_point() or expected.is_complex())
    ok = torch.equal(got, expected) if exact else torch.allclose(
        got.double(), expected.double(), atol=atol, rtol=rtol)
    if not ok:
        diff = (got.double() - expected.double()).abs()
        i = int(diff.flatten().argmax()) if diff.numel() else 0
        raise GradeFailure(
            f"{what}: rank {rank} is wrong at flat index {i}: got "
            f"{got.flatten()[i].item()!r}, expected {expected.flatten()[i].item()!r} "
            f"(max abs error {diff.max().item():.3g}; "
            f"{'exact match required for integers' if exact else f'atol={atol}, rtol={rtol}'})")
