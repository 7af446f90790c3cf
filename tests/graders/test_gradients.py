"""Lesson 06 (labs/gradients.py): graders for average_gradients_all_to_all,
average_gradients_ring and average_gradients_bucketed.

Each grader launches real workers (1-8 ranks) with a model that has float32 and float64
parameters, bfloat16 and float16 ones, a channels_last one (its gradient not contiguous), a
3-d parameter, a frozen one and an unused one (grad None on every rank),
then a large one (2^20 weights), with gradients that differ per rank. Expected:
`dist.all_reduce(grad); grad /= W`, for every parameter of every case on every rank; failing
ones that share a cause (a dtype) are told once, as that cause (labs/harness/grading/evidence.py).
The method: point-to-point only; the ring versions call lesson 05's ring_all_reduce once
per flat buffer, in its own dtype (the ring's calls are recorded), the bucketed one once
per bucket of DDP's plan (`plan_buckets`), in the plan's order.
"""
import contextlib
import importlib
import inspect
import sys
from dataclasses import dataclass

import pytest
import torch
import torch.distributed as dist
from torch import nn

from labs.gradients import plan_buckets
from labs.harness.grading.graded import GradedBody
from labs.harness.grading import (Call, GradeFailure, call, check_close, check_one_batch,
                                  check_p2p_only, fail_if_any, grade, implementation, seeded,
                                  rounding_unit)
from labs.harness.grading.evidence import body_line, grouped, outcome
from tests.graders.spy import spying

# On Mixed: a bucket per parameter; 25 bytes, where a plan that counts the frozen or unused
# parameter (grad None) closes a bucket early; 60, which two float32 parameters fill exactly
# (a bucket closes at >= bucket_bytes); one per dtype. Large: 4 MiB (DDP's default cap).
BUCKETS = (1, 25, 60, 10**9)
# Any world size: a body may branch on it, so every one up to 8 is graded.
WORLD_SIZES = [1, 2, 3, 4, 5, 6, 7, 8]
# As the ring graders: the 2^20-weight model on 5-8 ranks on 2 cores keeps a rank computing
# (its probes) for over 20 s while the others wait in gloo, under load. A deadlock is found
# in seconds by the stuck watch; 60 s without any sign of progress is any other hang.
DEADLINE = 60


@pytest.mark.parametrize("world_size", WORLD_SIZES)
def test_average_gradients_all_to_all(impl, world_size):
    name = "average_gradients_all_to_all"
    results = grade(averaging_worker, world_size, args=(impl, name), what=name,
                    timeout=DEADLINE)
    check_means(results, world_size, name)
    if world_size > 1:
        for rank, records in enumerate(results):
            for record in records:
                check_one_batch(record.done.events, f"{record.what} with world_size="
                                f"{world_size}", rank=rank, expected="the whole exchange")


@pytest.mark.parametrize("world_size", WORLD_SIZES)
def test_average_gradients_ring(impl, world_size):
    name = "average_gradients_ring"
    results = grade(averaging_worker, world_size, args=(impl, name), what=name,
                    timeout=DEADLINE)
    check_means(results, world_size, name, on_your_ring=impl == "labs")
    check_ring_calls(results, world_size, by_dtype=True)


@pytest.mark.parametrize("world_size", WORLD_SIZES)
def test_average_gradients_bucketed(impl, world_size):
    name = "average_gradients_bucketed"
    results = grade(averaging_worker, world_size, args=(impl, name), what=name,
                    timeout=DEADLINE)
    check_means(results, world_size, name, on_your_ring=impl == "labs")
    check_ring_calls(results, world_size, by_dtype=False)


def check_ring_calls(results, world_size, by_dtype):
    """One ring_all_reduce per dtype (in any order), or per bucket of the plan (in order)."""
    if world_size == 1:
        return              # nothing to reduce: skipping the ring is fine
    for rank, records in enumerate(results):
        for record in records:
            rings, plan = record.rings, record.plan
            label = f"{record.what} with world_size={world_size}: rank {rank}"
            seen = sorted(rings) if by_dtype else rings
            wanted = sorted(plan) if by_dtype else plan
            if seen == wanted:
                continue
            shown = ", ".join(f"{n} x {d}" for n, d in rings)
            expected = ", ".join(f"{n} x {d}" for n, d in wanted)
            called = f"called ring_all_reduce on [{shown}]" if rings else \
                "never called ring_all_reduce (from labs.ring: your lesson-05 ring)"
            raise GradeFailure(
                f"{label} {called}; expected [{expected}]: " + (
                    "one flat buffer per dtype, each reduced in its own dtype (promoting "
                    "float32 gradients to float64 doubles their bytes and changes their "
                    "rounding)" if by_dtype else
                    "one buffer per bucket of plan_buckets(params, bucket_bytes), in the "
                    "plan's order: reverse parameter order, one dtype per bucket, a bucket "
                    "closed once it holds >= bucket_bytes"))


class Mixed(nn.Module):
    """The same parameters on every rank (seed 0); mixed dtypes; two grads stay None; two
    parameters of one shape and dtype (cube, twin); a weight shared by two layers (tied);
    a gradient that is all zeros on odd ranks only (gate), as a branch one rank skips."""

    def __init__(self, rank=0, other_branch=False):
        super().__init__()
        torch.manual_seed(0)
        self.other_branch = other_branch    # `unused` used, `gate` not: other grads are None
        self.a = nn.Linear(5, 4)
        self.b = nn.Linear(4, 3).double()
        self.cube = nn.Parameter(torch.randn(2, 3, 2))
        self.twin = nn.Parameter(torch.randn(2, 3, 2))
        self.frozen = nn.Parameter(torch.randn(3), requires_grad=False)
        self.unused = nn.Parameter(torch.randn(4))
        self.tied = nn.Linear(5, 4, bias=False)
        self.tied.weight = self.a.weight
        self.gate = nn.Parameter(torch.randn(3))
        self.gate_open = float(rank % 2 == 0)
        # Half precisions, each in its own dtype on the wire. bfloat16: gradients
        # (1 + rank) * 2^i, exact, and so is their mean. float16: (257 + 4 * rank) * 2^i,
        # 9 significant bits, which float16 holds (11) and bfloat16 does not (8, each one
        # rounds down by 1): every sum of them is exact in float16, and so is their mean
        # (257 + 2 * (world_size - 1)) * 2^i; added up in bfloat16 it is 1/260 too small.
        # And a channels_last weight: a gradient that is not contiguous (gloo refuses to
        # send it as it is).
        self.bf16 = nn.Parameter(torch.ones(4, dtype=torch.bfloat16))
        self.fp16 = nn.Parameter(torch.ones(3, dtype=torch.float16))
        self.conv = nn.Parameter(torch.randn(2, 3, 2, 2).to(memory_format=torch.channels_last))
        self.rank_factor = 1.0 + rank
        self.fp16_factor = 257.0 + 4 * rank

    def loss(self, x):
        h = torch.tanh(self.a(x) + 0.5 * self.tied(x) + self.frozen.sum())
        out = self.b(h.double())
        return out.pow(2).mean() + (self.cube.double() ** 2).sum() * x.double().mean() + \
            (self.twin * self.cube).sum() * x.mean() + self._branch() + \
            sum((p.float() * 2.0 ** torch.arange(p.numel())).sum() * factor
                for p, factor in ((self.bf16, self.rank_factor),
                                  (self.fp16, self.fp16_factor))) + \
            (self.conv ** 2).sum() * x.mean()


    def _branch(self):
        if self.other_branch:
            return (self.unused ** 2).sum() * self.rank_factor
        return (self.gate ** 2).sum() * self.gate_open


class Large(nn.Module):
    """One float32 layer of 2^20 weights (the method on every size), a float32 layer of just
    over 1 MiB after it (the first of the bucket plan, which runs backwards: a plan with
    DDP's smaller first bucket closes it alone) and one float64 bias."""

    def __init__(self, rank=0):
        super().__init__()
        torch.manual_seed(1)
        self.layer = nn.Linear(1024, 1024, bias=False)
        self.tail = nn.Linear(512, 513, bias=False)
        self.bias = nn.Parameter(torch.randn(7, dtype=torch.float64))

    def loss(self, x):
        return self.layer(x[:, :1].expand(-1, 1024)).pow(2).mean() + \
            self.tail.weight.pow(2).sum() * x.mean() + (self.bias ** 2).sum() * x.double().mean()


def OtherBranch(rank):   # noqa: N802 - a constructor, as Mixed and Large
    return Mixed(rank, other_branch=True)


def _grads(model):
    return {name: None if p.grad is None else p.grad.clone()
            for name, p in model.named_parameters()}


@dataclass
class Averaged:
    """One case on one rank: what it was, the call, each parameter's grad after it, the mean
    expected, the rank's own grad before it, the ring's calls ((numel, dtype) each), the calls
    DDP's plan makes, and the body's line where its data came in (evidence.body_line)."""

    what: str
    done: Call
    got: dict
    expected: dict
    own: dict
    rings: list
    plan: list
    line: str


def averaging_worker(rank, world_size, impl, name):
    """Returns [Averaged] per model and bucket size."""
    fn = implementation(impl, "gradients", name)
    records = []
    bucketed = name == "average_gradients_bucketed"
    # Then the same class again, taking its other branch (other gradients are None): a
    # plan or buffer kept from the first model does not fit it.
    cases = [(Mixed, b) for b in (BUCKETS if bucketed else (None,))] + \
        [(OtherBranch, 25 if bucketed else None), (Large, 4 << 20 if bucketed else None)]
    for make, bucket_bytes in cases:
        model = make(rank)
        model.zero_grad(set_to_none=True)
        x = seeded(rank, (6, 5), "float32", 100)       # this rank's batch
        model.loss(x).backward()
        own, expected = _grads(model), _grads(model)
        for g in (g for g in expected.values() if g is not None):
            total = g.double().contiguous()       # exact for the half precisions' (1 + rank)
            dist.all_reduce(total)
            g.copy_(total / world_size)
        what = name + ("" if bucket_bytes is None else f"(bucket_bytes={bucket_bytes})") + \
            (" on a model of 2^20 weights" if make is Large else "") + \
            (" on the model's other branch" if make is OtherBranch else "")
        args = (model,) if bucket_bytes is None else (model, bucket_bytes)
        with ring_calls(fn) as rings:
            done = call(fn, *args, case=what)
        records.append(Averaged(what, done, _grads(model), expected, own, rings,
                                _plan(model, bucket_bytes),
                                body_line(getattr(fn, "last_ops", ()), fn)))
    return records


def _plan(model, bucket_bytes):
    """The ring calls DDP's plan makes: per bucket (or per dtype), (numel, dtype)."""
    params = [p for p in model.parameters() if p.grad is not None]
    buckets = plan_buckets(params, bucket_bytes or float("inf"))
    return [(sum(p.numel() for p in b), str(b[0].dtype).removeprefix("torch.")) for b in buckets]


@contextlib.contextmanager
def ring_calls(fn):
    """Record (numel, dtype) of every call of lesson 05's ring_all_reduce that the body under
    test makes, however it reaches it (any name, a default argument, an object holding it:
    tests/graders/spy.py). Outermost calls only (the lab's ring calls its solution when
    solutions are on), and not the reference averaging's, the repeat call's or the sums
    probe's: they run beside the body, their calls are not the body's."""
    rings = (importlib.import_module("labs.ring").ring_all_reduce.stub,
             importlib.import_module("solutions.ring").ring_all_reduce)
    body, reference = getattr(fn, "body", fn), getattr(fn, "reference", None)
    beside = {id(GradedBody._call_again.__code__), id(GradedBody._sums_probe.__code__)}
    if reference not in (None, body):
        beside.add(id(inspect.unwrap(reference).__code__))
    calls, inside = [], []

    def note(ring, *args, **kwargs):
        if not inside and not _called_from(beside):
            tensor = args[0] if args else kwargs.get("tensor")
            if isinstance(tensor, torch.Tensor):
                calls.append((tensor.numel(), str(tensor.dtype).removeprefix("torch.")))
        inside.append(ring)
        try:
            return ring(*args, **kwargs)
        finally:
            inside.pop()

    with spying(rings, note):
        yield calls


def _called_from(code_ids) -> bool:
    frame = sys._getframe(2)
    while frame is not None:
        if id(frame.f_code) in code_ids:
            return True
        frame = frame.f_back
    return False


def check_means(results, world_size, name, on_your_ring=False):
    """Every rank returned None and holds the mean gradient, with the same bits as rank 0.
    on_your_ring: the averaging ran the learner's lesson-05 ring; a wrong mean may be its."""
    try:
        _check_means(results, world_size, name)
    except GradeFailure as exc:
        if not on_your_ring:
            raise
        why = (" (this runs your ring_all_reduce from labs/ring.py: if "
               "tests/graders/test_ring.py fails too, fix the ring first)")
        problems = [*exc.problems[:-1], exc.problems[-1] + why] if exc.problems else ()
        raise GradeFailure(f"{exc}{why}", problems=problems) from None


def _check_means(results, world_size, name):
    """Every parameter of every case on every rank: wrong means are kept per (case,
    parameter) and rank (evidence.py), so failing ones that share a cause (a dtype, the
    remainder of a split) are told once, as that cause, at the body's line."""
    failures, outcomes = [], []
    for rank, records in enumerate(results):
        for i, record in enumerate(records):
            what = f"{record.what} with world_size={world_size}"
            try:
                check_p2p_only(record.done.events, what, builds="the averaging")
                if record.done.result is not None:
                    raise GradeFailure(f"{what}: rank {rank} returned "
                                       f"{type(record.done.result).__name__}; it should return "
                                       f"None (it edits param.grad)")
                for pname in record.expected:
                    outcomes += _check_grad(record, pname, results[0][i].got[pname],
                                            rank=rank, world_size=world_size, failures=failures)
            except GradeFailure as exc:
                failures.append(str(exc))
    fail_if_any(grouped(failures, outcomes, name), name)


def _check_grad(record, pname, rank0, *, rank, world_size, failures):
    """[its CaseOutcome] (none if the grad stays None); a wrong mean's message goes to
    `failures`; a grad None where it must not be (or not None where it must) raises."""
    exp, got = record.expected[pname], record.got[pname]
    label = f"{record.what} with world_size={world_size}, parameter '{pname}'"
    if exp is None:
        if got is not None:
            raise GradeFailure(f"{label}: rank {rank} gave it a gradient; its grad was None "
                               f"on every rank and must stay None")
        return []
    if got is None:
        raise GradeFailure(f"{label}: rank {rank} set its grad to None; expected the mean "
                           f"over ranks")
    # Half precisions: a sum in another order, or divided first, rounds on the way
    low = rounding_unit(exp.dtype) if exp.dtype in (torch.bfloat16, torch.float16) else None
    message = ""
    try:
        check_close(got, exp, rank=rank, what=label,
                    **({"atol": 0, "rtol": (world_size + 2) * low} if low else {}))
        if rank > 0 and not torch.equal(got, rank0):
            diff = (got.double() - rank0.double()).abs().max().item()
            failures.append(f"{label}: rank {rank}'s mean differs from rank 0's by {diff:.3g}. "
                            f"Every rank must end with the same bits (add the gradients in "
                            f"rank order on every rank), or the replicas drift apart")
    except GradeFailure as exc:
        message = str(exc)
        failures.append(message)
    return [outcome(f"{record.what}, parameter '{pname}'", world_size=world_size,
                    dtype=str(exp.dtype).removeprefix("torch."), data=record.own[pname],
                    got=got, expected=exp, message=message, line=record.line,
                    allowed=(world_size + 2) * low * exp.abs() if low else None)]
