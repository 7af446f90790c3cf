"""Seeded tensors: a rank's input that every run rebuilds the same, different on every rank.
The lessons' demos and benchmarks and the graders draw their inputs here."""
from __future__ import annotations

import torch


def seeded(rank, shape, dtype, seed=0) -> torch.Tensor:
    """Rank `rank`'s input for case `seed`: the same on every run (so a test can rebuild
    it to know the expected result) and different on every rank. Integers in [-1000, 1000),
    floating point from a normal distribution, uint8 in [0, 256), bool half True. `dtype`:
    a torch.dtype or its name ("float32"). Data every rank shares: pass rank 0."""
    g = torch.Generator().manual_seed(1000 * seed + rank)
    dtype = getattr(torch, dtype) if isinstance(dtype, str) else dtype
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if dtype == torch.uint8:
        return torch.randint(0, 256, shape, generator=g, dtype=dtype)
    if dtype.is_floating_point:
        drawn = torch.float64 if dtype == torch.float64 else torch.float32
        return torch.randn(shape, generator=g, dtype=drawn).to(dtype)
    info = torch.iinfo(dtype)       # int8: [-128, 128), the others [-1000, 1000)
    return torch.randint(max(-1000, info.min), min(1000, info.max + 1), shape, generator=g,
                         dtype=dtype)


def rounding_unit(dtype) -> float:
    """One rounding's relative error, u = eps / 2 (2**-8 for bfloat16, 2**-11 for float16):
    a sum of n terms, added in any order, stays within n * u * sum(|x|) of the exact one.
    Every bfloat16 tolerance of the course (lessons 05 and 10, their graders) is made of it."""
    dtype = getattr(torch, dtype) if isinstance(dtype, str) else dtype
    return torch.finfo(dtype).eps / 2
