"""The test side of a grader: checks on values, on inputs, and on the method (the trace).

Each check raises GradeFailure naming the case (`what`), the rank, and expected vs got.
The trace checks take a list of `labs.harness.tracing.Event`: a launch's whole trace
(`results.trace`) or the calls one `Call` made (`call.events`).
"""
from __future__ import annotations

import torch

from labs.harness.grading.calls import Call
from labs.harness.grading.run import GradeFailure
from labs.harness.tracing import P2P_OPS

# What a rank may do besides point-to-point ops while it runs a point-to-point exercise.
NOT_COLLECTIVES = (*P2P_OPS, "wait", "compute")


def check_close(got, expected, *, rank, what, atol=1e-5, rtol=1e-5):
    """`got` has `expected`'s shape and dtype, and its values (exactly, for integers)."""
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


def check_untouched(call: Call, *, rank, what, writes=(), hint="it must only read them"):
    """The call left its tensor arguments as they were, except those at the positions in
    `writes` (the buffers the exercise fills)."""
    changed = [f"`{call.names[i]}`" for i in call.changed if i not in writes]
    if changed:
        raise GradeFailure(f"{what}: rank {rank} changed {' and '.join(changed)}; {hint}")


def check_fresh(call: Call, *, rank, what, hint="return a new tensor"):
    """The call returned new tensors, not its arguments (or views of them)."""
    if call.aliased:
        raise GradeFailure(f"{what}: rank {rank} returned a tensor it was given (or a view "
                           f"of one); {hint}")


def check_returned_input(call: Call, *, rank, what, hint):
    """The call returned its first argument itself (an in-place contract)."""
    if not call.returned_first:
        first = call.names[0] if call.names else "its first argument"
        raise GradeFailure(f"{what}: rank {rank} must return `{first}` itself, the object it "
                           f"was given ({hint})")


def p2p_ops(events, rank=None, ops=P2P_OPS) -> list:
    """The point-to-point ops among `events` (of one rank, if given)."""
    return [e for e in events if e.op in ops and (rank is None or e.rank == rank)]


def check_batched(events, what, hint="post the operations with one batch_isend_irecv"):
    """Every point-to-point op went through dist.batch_isend_irecv."""
    loose = [e for e in p2p_ops(events) if e.batch is None]
    if loose:
        raise GradeFailure(f"{what}: rank {loose[0].rank} called {loose[0].describe()} "
                           f"outside batch_isend_irecv; {hint}")


def check_one_batch(events, what, *, rank, expected, n_ops=None):
    """All the point-to-point ops of one call (`n_ops` of them, if given) were posted in
    one batch_isend_irecv call. `expected` says what that batch holds, for the message."""
    ops = p2p_ops(events)
    batches = {e.batch for e in ops}
    if len(batches) != 1 or None in batches or n_ops not in (None, len(ops)):
        loose = " and point-to-point ops outside a batch" if None in batches else ""
        raise GradeFailure(f"{what}: rank {rank} posted {len(ops)} point-to-point op(s) in "
                           f"{len(batches - {None})} batch_isend_irecv call(s){loose}; "
                           f"expected {expected} in ONE batch_isend_irecv call")


def check_p2p_only(events, what):
    """No collective (all_reduce, broadcast, barrier, ...): point-to-point ops only."""
    found = sorted({e.op for e in events if e.op not in NOT_COLLECTIVES})
    if found:
        raise GradeFailure(f"{what}: use point-to-point sends and receives only; the trace "
                           f"shows {', '.join(found)}")
