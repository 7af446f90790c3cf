"""The test side of a grader, part 1: checks on the values and on what became of the
arguments. Each raises GradeFailure naming the case (`what`), the rank, expected vs got.
Checks on the method (the trace) are in method.py."""
from __future__ import annotations

import torch
import torch.distributed as dist

from labs.harness.grading.buffers import same_bytes
from labs.harness.grading.calls import Call, in_case
from labs.harness.grading.inputs import seeded
from labs.harness.grading.run import GradeFailure
from labs.harness.ranks.data import rounding_unit  # noqa: F401 - the graders' name for it


# float64 keeps 53 bits: sums in any order stay within ~1e-15 of each other, and a body
# that adds through float32 (24 bits) is off by ~1e-7. Other floats: float32's tolerance.
FLOAT64_TOL = 1e-12



WORDS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def compared_in(dtype: torch.dtype) -> torch.dtype:
    """The dtype two floating tensors of `dtype` are compared in, without rounding that
    matters: float32 (complex64) for float32 and narrower (it holds every float16 and bfloat16
    value, and |got - expected| <= atol + rtol * |expected| then rounds by 2**-24 of itself,
    far below any tolerance here, 1e-5 at least), float64 (complex128) otherwise. float64 for
    all was twice the memory traffic, on 1M-element cases."""
    if dtype in (torch.float64, torch.complex128):
        return dtype
    return torch.complex64 if dtype.is_complex else torch.float32


def _widened(got, expected):
    wide = compared_in(expected.dtype) if expected.is_floating_point() or \
        expected.is_complex() else torch.float64
    return got.to(wide), expected.to(wide)


def check_close(got, expected, *, rank, what, atol=None, rtol=None):
    """`got` has `expected`'s shape and dtype, and its values (exactly, for integers; within
    float64's own precision for float64, whatever the tolerance asked; float32's, or the
    tolerance asked, for the other floating types)."""
    if getattr(expected, "dtype", None) == torch.float64:    # a float32 tolerance never
        atol, rtol = (min(FLOAT64_TOL, t) if t is not None else FLOAT64_TOL  # hides float32
                      for t in (atol, rtol))                                 # arithmetic
    atol, rtol = (1e-5 if atol is None else atol), (1e-5 if rtol is None else rtol)
    if not isinstance(got, torch.Tensor):
        raise GradeFailure(f"{what}: rank {rank} returned {type(got).__name__}, expected a tensor")
    if got.shape != expected.shape or got.dtype != expected.dtype:
        raise GradeFailure(f"{what}: rank {rank} returned shape {tuple(got.shape)} {got.dtype}, "
                           f"expected shape {tuple(expected.shape)} {expected.dtype}")
    exact = not (expected.is_floating_point() or expected.is_complex())
    bits = exact or atol == rtol == 0        # moved data: the same bits (NaN, -0.0 included)
    if bits:
        ok = same_bytes(got, expected)
    else:
        ok = torch.allclose(*_widened(got, expected), atol=atol, rtol=rtol, equal_nan=True)
    if not ok:
        g, e = got.double().flatten(), expected.double().flatten()
        if exact:          # in the dtype itself: int64 beyond 2**53 has no double of its own
            same = got.flatten() == expected.flatten()
        elif bits:         # bit for bit: a NaN's sign and payload too
            word = WORDS[got.element_size()]
            same = got.reshape(-1).contiguous().view(word) == \
                expected.reshape(-1).contiguous().view(word)
        else:
            same = torch.isclose(g, e, atol=atol, rtol=rtol) | (g.isnan() & e.isnan())
        wrong = (~same).nonzero()
        i = int(wrong[0]) if len(wrong) else 0
        diff = (g - e).abs().nan_to_num(nan=float("inf"))
        rule = ("exact match required for integers" if exact else "the same bits required: "
                "the data is moved, not computed" if bits else f"atol={atol}, rtol={rtol}")
        raise GradeFailure(
            f"{what}: rank {rank} is wrong at flat index {i}: got "
            f"{got.flatten()[i].item()!r}, expected {expected.flatten()[i].item()!r} "
            f"(max abs error {diff.max().item():.3g}; "
            f"{rule})")


def check_same_on_every_rank(results, *, what):
    """An all-reduce leaves the same bits on every rank: each element is summed once, by one
    rank or pair in the same order, then copied. Replicas that differ drift apart in
    training, however close each is to the exact sum."""
    first = results[0]
    for rank, got in enumerate(results[1:], 1):
        if got.shape == first.shape and not torch.equal(got, first):
            j = int((got != first).flatten().nonzero()[0])
            raise GradeFailure(
                f"{what}: rank {rank} holds {got.flatten()[j].item()!r} at flat index {j}, rank "
                f"0 holds {first.flatten()[j].item()!r}: every rank must end with the same "
                f"bits (add in the tensor's own dtype, each sum once, then send the result)")


def check_untouched(call: Call, *, rank, what, writes=(), hint="it must only read them"):
    """The call left its tensor arguments as they were, except those at the positions in
    `writes` (the buffers the exercise fills)."""
    changed = [f"`{call.names[i]}`" for i in call.changed if i not in writes]
    if changed:
        raise GradeFailure(f"{what}: rank {rank} changed {' and '.join(changed)}; {hint}")


def check_fresh(call: Call, *, rank, what, hint="return a new tensor"):
    """The call returned new tensors, not its arguments (or views of them): also with one
    rank, or when nothing has to move, where returning the input is tempting."""
    if call.aliased:
        raise GradeFailure(f"{what}: rank {rank} returned a tensor it was given (or a view "
                           f"of one); {hint}: the caller may change its own tensor next")


def check_returned_input(call: Call, *, rank, what, hint):
    """The call returned its first argument itself (an in-place contract)."""
    if not call.returned_first:
        first = call.names[0] if call.names else "its first argument"
        raise GradeFailure(f"{what}: rank {rank} must return `{first}` itself, the object it "
                           f"was given ({hint})")


def check_filled(call: Call, position, *, rank, what):
    """The list argument at `position` still holds the caller's tensors: the call filled
    them in place instead of putting other tensors in the list."""
    replaced = call.replaced.get(position, [])
    if replaced:
        name = call.names[position]
        raise GradeFailure(f"{what}: rank {rank} replaced {name}[{replaced[0]}] with another "
                           f"tensor; fill the caller's tensors in place ({name}[i].copy_(...) "
                           f"or receive straight into {name}[i]): the caller holds them, "
                           f"not your list")


def non_contiguous_case(fn, rank, *, what, seed=999):
    """Worker side: `fn` (an in-place all-reduce) on a tensor that is not contiguous (a
    transposed view). Either it sums it in place, or every rank refuses it with an error
    that says it must be contiguous. Returns this rank's failures, as messages."""
    data = seeded(rank, (5, 3), "float32", seed).t()
    expected = data.contiguous()
    dist.all_reduce(expected)
    with in_case("float32, shape (3, 5), not contiguous (a transposed view)"):
        try:
            fn(data)
        except Exception as exc:  # noqa: BLE001 - the contract may refuse it: how?
            if "contiguous" in str(exc):
                return []
            said = (str(exc).splitlines() or ["(no message)"])[0][:120]
            return [f"{what}, a tensor that is not contiguous: rank {rank} raised "
                    f"{type(exc).__name__}: {said}; sum it through "
                    f"a contiguous copy written back, or refuse it with an error that says "
                    f"it must be contiguous"]
    try:
        check_close(data, expected, rank=rank, what=f"{what}, a tensor that is not contiguous "
                    f"(sum it in place, or refuse it with an error naming 'contiguous')")
    except GradeFailure as exc:
        return [str(exc)]
    return []
