"""Lesson 06 (labs/gradients.py): graders for average_gradients_all_to_all,
average_gradients_ring and average_gradients_bucketed.

Each grader launches real workers (1-4 ranks) with a model that has float32 and float64
parameters, a 3-d parameter, a frozen one and an unused one (grad None on every rank),
and gradients that differ per rank. Expected: `dist.all_reduce(grad); grad /= W`.
"""
import pytest
import torch
import torch.distributed as dist
from torch import nn

from labs.harness.grading import (GradeFailure, call, check_close, check_one_batch, grade,
                                  implementation)

BUCKETS = (1, 100, 10**9)   # a bucket per parameter, a few per bucket, one per dtype


@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
def test_average_gradients_all_to_all(impl, world_size):
    name = "average_gradients_all_to_all"
    results = grade(averaging_worker, world_size, args=(impl, name), what=name)
    if world_size > 1:
        for rank, records in enumerate(results):
            for what, done, _, _ in records:
                check_one_batch(done.events, f"{what} with world_size={world_size}", rank=rank,
                                expected="the whole exchange")
    check_means(results, world_size)


@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
def test_average_gradients_ring(impl, world_size):
    name = "average_gradients_ring"
    check_means(grade(averaging_worker, world_size, args=(impl, name), what=name), world_size)


@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
def test_average_gradients_bucketed(impl, world_size):
    name = "average_gradients_bucketed"
    check_means(grade(averaging_worker, world_size, args=(impl, name), what=name), world_size)


class Mixed(nn.Module):
    """The same parameters on every rank (seed 0); mixed dtypes; two grads stay None."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.a = nn.Linear(5, 4)
        self.b = nn.Linear(4, 3).double()
        self.cube = nn.Parameter(torch.randn(2, 3, 2))
        self.frozen = nn.Parameter(torch.randn(3), requires_grad=False)
        self.unused = nn.Parameter(torch.randn(4))

    def loss(self, x):
        h = torch.tanh(self.a(x) + self.frozen.sum())
        out = self.b(h.double())
        return out.pow(2).mean() + (self.cube.double() ** 2).sum() * x.double().mean()


def _grads(model):
    return {name: None if p.grad is None else p.grad.clone()
            for name, p in model.named_parameters()}


def averaging_worker(rank, world_size, impl, name):
    """Returns [(what, Call, {param: grad after}, {param: expected mean})], per bucket size."""
    fn = implementation(impl, "gradients", name)
    model = Mixed()
    records = []
    for bucket_bytes in BUCKETS if name == "average_gradients_bucketed" else (None,):
        model.zero_grad(set_to_none=True)
        x = torch.randn(6, 5, generator=torch.Generator().manual_seed(100 + rank))
        model.loss(x).backward()
        expected = _grads(model)
        for g in (g for g in expected.values() if g is not None):
            dist.all_reduce(g)
            g /= world_size
        done = call(fn, model) if bucket_bytes is None else call(fn, model, bucket_bytes)
        what = name + ("" if bucket_bytes is None else f"(bucket_bytes={bucket_bytes})")
        records.append((what, done, _grads(model), expected))
    return records


def check_means(results, world_size):
    """Every rank returned None and holds the mean gradient, with the same bits as rank 0."""
    for rank, records in enumerate(results):
        for i, (what, done, got, expected) in enumerate(records):
            if done.result is not None:
                raise GradeFailure(f"{what} with world_size={world_size}: rank {rank} returned "
                                   f"{type(done.result).__name__}; it should return None "
                                   f"(it edits param.grad)")
            for pname, exp in expected.items():
                label = f"{what} with world_size={world_size}, parameter '{pname}'"
                if exp is None:
                    if got[pname] is not None:
                        raise GradeFailure(f"{label}: rank {rank} gave it a gradient; its grad "
                                           f"was None on every rank and must stay None")
                    continue
                if got[pname] is None:
                    raise GradeFailure(f"{label}: rank {rank} set its grad to None; "
                                       f"expected the mean over ranks")
                check_close(got[pname], exp, rank=rank, what=label)
                reference = results[0][i][2][pname]
                if rank > 0 and not torch.equal(got[pname], reference):
                    diff = (got[pname].double() - reference.double()).abs().max().item()
                    raise GradeFailure(
                        f"{label}: rank {rank}'s mean differs from rank 0's by {diff:.3g}. "
                        f"Every rank must end with the same bits (add the gradients in rank "
                        f"order on every rank), or the replicas drift apart")
