"""The graders' inputs: seeded like the lessons' data, from seeds no body can guess.

The lessons draw their data from labs.harness.ranks.data.seeded, with small seeds, so that a
notebook shows the same numbers every run. A body that knows that could rebuild another
rank's input from its own (case number, rank) and return the right answer without taking it
from what arrived. The graders draw theirs from the same generator far away from those seeds,
and only a grader may ask for them: a call from any other code fails the grade.
"""
from __future__ import annotations

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


def seeded(rank, shape, dtype, seed=0):
    """Rank `rank`'s input for case `seed`, the same on every run: for graders only."""
    caller = sys._getframe(1).f_code.co_filename
    if not any(part in caller for part in _GRADERS) or \
            os.sep + "bodies" + os.sep in caller:
        raise GradeFailure(
            f"{os.path.basename(caller)} asked the graders for their inputs: an answer must be "
            f"made of what arrived from the other ranks, not rebuilt from the grader's data")
    drawn = data.seeded(rank, shape, dtype, seed + FAR)
    if drawn.dtype == torch.int64:       # beyond 2**53: a sum through any float is wrong
        wide = torch.Generator().manual_seed(1000 * (seed + FAR) + rank + 1)
        drawn = drawn * (1 << 49) + torch.randint(0, 1 << 49, drawn.shape, generator=wide)
    return drawn
