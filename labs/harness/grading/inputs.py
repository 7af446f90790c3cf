"""The graders' inputs: seeded like the lessons' data, from seeds no body can guess.

The lessons draw their data from labs.harness.ranks.data.seeded, with small seeds, so that a
notebook shows the same numbers every run. A body that knows that could rebuild another
rank's input from its own (case number, rank) and return the right answer without taking it
from what arrived. The graders draw theirs from the same generator far away from those seeds,
and only a grader may ask for them: a call from any other code fails the grade.
"""
from __future__ import annotations

import math
import os
import sys

import torch

from labs.harness.grading.run import GradeFailure
from labs.harness.ranks import data

FAR = 0x2F_5EED_C0DE          # seeds the lessons never use: 1000 * seed stays below 2**63
_GRADERS = (os.sep + os.path.join("tests", "graders") + os.sep,
            os.path.dirname(os.path.abspath(__file__)) + os.sep)
# Every dtype family a tensor can have, for a contract that says "any dtype": a grader runs
# one small case of each it does not run already (every_dtype), so a body that widens,
# narrows or refuses some of them (int8 sent as int64, float16 as float32) meets them.
EVERY_DTYPE = (torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int8,
               torch.uint8, torch.int16, torch.int32, torch.int64, torch.bool)


def every_dtype(cases, shape=(5,), numeric=False) -> list:
    """`cases` ((shape, dtype) pairs) plus one case of `shape` for each dtype they lack
    (bool left out if `numeric`)."""
    have = {dtype for _, dtype in cases}
    return list(cases) + [(shape, d) for d in EVERY_DTYPE
                          if d not in have and not (numeric and d == torch.bool)]


# What a data move must keep bit for bit, planted in a floating tensor's first elements
# (special=True): a body that "cleans" data on the way (nan_to_num, a clamp to the finite
# range, a sign of zero lost through arithmetic) changes them.
SPECIAL = (float("nan"), float("inf"), float("-inf"), -0.0)


def _graders_only(caller):
    if not any(part in caller for part in _GRADERS) or \
            os.sep + "bodies" + os.sep in caller:
        raise GradeFailure(
            f"{os.path.basename(caller)} asked the graders for their inputs: an answer must be "
            f"made of what arrived from the other ranks, not rebuilt from the grader's data")


def seeded(rank, shape, dtype, seed=0, special=False):
    """Rank `rank`'s input for case `seed`, the same on every run: for graders only.
    `special`: a floating tensor of more than 4 elements starts with NaN, inf, -inf, -0.0
    after its first (for exercises that move data, never add it)."""
    _graders_only(sys._getframe(1).f_code.co_filename)
    drawn = data.seeded(rank, shape, dtype, seed + FAR)
    if drawn.dtype == torch.int64:       # beyond 2**53: a sum through any float is wrong
        wide = torch.Generator().manual_seed(1000 * (seed + FAR) + rank + 1)
        drawn = drawn * (1 << 49) + torch.randint(0, 1 << 49, drawn.shape, generator=wide)
    if drawn.dtype == torch.int32:       # beyond 2**24: a sum through float32 is wrong
        wide = torch.Generator().manual_seed(1000 * (seed + FAR) + rank + 1)
        drawn = drawn * (1 << 16) + torch.randint(0, 1 << 16, drawn.shape, generator=wide,
                                                  dtype=torch.int32)
    if special and drawn.is_floating_point() and drawn.numel() > len(SPECIAL):
        drawn.view(-1)[1:1 + len(SPECIAL)] = torch.tensor(SPECIAL, dtype=drawn.dtype)
    return drawn


def significant_bits(dtype) -> int:
    """11 for float16, 8 for bfloat16, 24 for float32, 53 for float64."""
    return 1 - int(math.log2(torch.finfo(dtype).eps))


def exactly_summed(rank, world_size, shape, dtype, seed=0):
    """Rank `rank`'s values for an average that every right order computes EXACTLY in
    `dtype`: multiples of W's odd factor, on a grid where every partial sum over the W ranks
    fits the dtype's significant bits. So (a + b + ...) / W, a/W + b/W + ..., a float32
    accumulator or a tree of sums all give the same bits, and a sum through a narrower type
    (float16 through bfloat16, float64 through float32) is off by several ulps."""
    _graders_only(sys._getframe(1).f_code.co_filename)
    bits = significant_bits(dtype)
    odd = world_size // (world_size & -world_size)
    top = (2 ** bits - 1) // (world_size * odd)
    draw = torch.Generator().manual_seed(1000 * (seed + FAR) + 17 * world_size + rank)
    k = torch.randint(1, top + 1, shape, generator=draw, dtype=torch.int64)
    return (k * odd).to(torch.float64).mul_(2.0 ** -bits).to(dtype)


def exact_mean(world_size, shape, dtype, seed=0):
    """The mean of exactly_summed over the W ranks, exact in `dtype` by construction."""
    total = sum(exactly_summed(r, world_size, shape, dtype, seed).double()
                for r in range(world_size))
    return (total / world_size).to(dtype)
