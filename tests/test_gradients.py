"""Lesson 06: graders for gradient averaging, and the lesson's worker functions.

Each grader launches real workers (1-4 ranks) with a model that has float32 and float64
parameters, a 3-d parameter, a frozen one and an unused one (grad None on every rank),
and gradients that differ per rank. Expected: `dist.all_reduce(grad); grad /= W`.
"""
import pytest
import torch
import torch.distributed as dist
from torch import nn

import labs.gradients as lab
from labs import launch
from labs.harness import tracing
from labs.harness.grading import GradeFailure, check_close, grade, implementation

BUCKETS = (1, 100, 10**9)   # a bucket per parameter, a few per bucket, one per dtype


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


def _fresh_grads(model, rank):
    model.zero_grad(set_to_none=True)
    x = torch.randn(6, 5, generator=torch.Generator().manual_seed(100 + rank))
    model.loss(x).backward()


def _grade_averaging(rank, world_size, impl, name):
    """Worker: returns [(what, {param: grad or None}, {param: expected or None}, problem)]."""
    fn = implementation(impl, "gradients", name)
    model = Mixed()
    records = []
    for bucket_bytes in BUCKETS if name == "average_gradients_bucketed" else (None,):
        _fresh_grads(model, rank)
        expected = {}
        for pname, p in model.named_parameters():
            if p.grad is None:
                expected[pname] = None
            else:
                g = p.grad.clone()
                dist.all_reduce(g)
                expected[pname] = g / world_size
        first_event = len(tracing.TRACER.events)
        ret = fn(model) if bucket_bytes is None else fn(model, bucket_bytes)
        events = tracing.TRACER.events[first_event:]
        got = {pname: None if p.grad is None else p.grad.clone()
               for pname, p in model.named_parameters()}
        what = name + ("" if bucket_bytes is None else f"(bucket_bytes={bucket_bytes})")
        problem = None
        if ret is not None:
            problem = f"returned {type(ret).__name__}; it should return None (it edits param.grad)"
        batches = {e.batch for e in events if e.op in ("isend", "irecv")}
        if name == "average_gradients_all_to_all" and world_size > 1 and (
                len(batches) != 1 or None in batches):
            problem = (f"used {len(batches - {None})} batch_isend_irecv call(s)"
                       f"{' and isend/irecv outside a batch' if None in batches else ''}; "
                       f"the exercise asks for exactly ONE batch for the whole exchange")
        records.append((what, got, expected, problem))
    return records


def _check(results, world_size):
    for rank, records in enumerate(results):
        for i, (what, got, expected, problem) in enumerate(records):
            if problem:
                raise GradeFailure(f"{what} with world_size={world_size}: rank {rank} {problem}")
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
                reference = results[0][i][1][pname]
                if rank > 0 and not torch.equal(got[pname], reference):
                    diff = (got[pname].double() - reference.double()).abs().max().item()
                    raise GradeFailure(
                        f"{label}: rank {rank}'s mean differs from rank 0's by {diff:.3g}. "
                        f"Every rank must end with the same bits (add the gradients in rank "
                        f"order on every rank), or the replicas drift apart")


NAMES = ["average_gradients_all_to_all", "average_gradients_ring", "average_gradients_bucketed"]


@pytest.mark.grader
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
def test_grade(impl, name, world_size):
    _check(grade(_grade_averaging, world_size, args=(impl, name), what=name), world_size)


def test_check_names_parameter_and_rank():
    g = {"a.weight": torch.ones(2)}
    with pytest.raises(GradeFailure, match=r"parameter 'a.weight'.*rank 1 is wrong"):
        _check([[("f", g, g, None)], [("f", {"a.weight": torch.zeros(2)}, g, None)]], 2)
    with pytest.raises(GradeFailure, match="must stay None"):
        _check([[("f", {"u": torch.ones(1)}, {"u": None}, None)]], 1)
    near = {"a.weight": torch.ones(2) + 1e-7}
    with pytest.raises(GradeFailure, match="same bits"):
        _check([[("f", g, g, None)], [("f", near, g, None)]], 2)


# ---------------------------------------------------------------------------------------
# The lesson's worker functions (reference solutions: conftest sets P2P_COURSE_SOLUTIONS=1)
# ---------------------------------------------------------------------------------------

def test_plan_buckets_follows_ddp_rule():
    model = lab.make_model()
    params = [p for p in model.parameters() if p.requires_grad]
    buckets = lab.plan_buckets(params, lab.BUCKET_BYTES)
    assert [len(b) for b in buckets] == [4, 2, 2]            # reverse order, closed at >= cap
    assert buckets[0][0] is params[-1]
    mixed = [nn.Parameter(torch.ones(4)), nn.Parameter(torch.ones(4, dtype=torch.float64))]
    assert [[p.dtype for p in b] for b in lab.plan_buckets(mixed, 10**6)] == \
        [[torch.float64], [torch.float32]]
    with pytest.raises(ValueError):
        lab.plan_buckets(params, 0)
    first = lab.plan_buckets(params, 10**9, first_bucket_bytes=8192 + 32)
    assert [len(b) for b in first] == [2, 6]


def _ddp_facts(rank, world_size):
    """Everything that needs DDP in one launch (each fresh worker imports torch._dynamo
    when it builds its first DDP: seconds)."""
    runs = lab.compare_methods(rank, world_size, steps=3)
    buckets = lab.ddp_buckets(rank, world_size, [(lab.HIDDEN, lab.BUCKET_BYTES / 2**20),
                                                 (512, None)])
    return runs, buckets, lab.demo(rank, world_size)


def test_methods_agree_with_ddp_buckets_match_and_demo():
    results = launch(_ddp_facts, 3, timeout=60, quiet=True)
    assert len({demo for _, _, demo in results}) == 1 and float(results[0][2]) < 1e-6
    for rank, (runs, buckets, _) in enumerate(results):
        ddp = runs["ddp"]["params"]
        for method, run in runs.items():
            assert torch.allclose(run["params"], ddp, atol=1e-6), (rank, method)
            assert torch.equal(run["params"], results[0][0][method]["params"]), (rank, method)
            assert len(run["losses"]) == len(run["step_s"]) == 3
        # DDP's real buckets (launch order) are plan_buckets' plan, with an explicit cap
        # and with the default one (first bucket 1 MiB, then 25 MiB)
        assert [b["sizes"] for b in buckets] == [
            lab.planned_buckets(), lab.planned_buckets(512, 25 * 2**20, 2**20)]
        assert len(buckets[0]["sizes"]) == 3 and len(buckets[1]["sizes"]) == 2
        assert all(all(b["in_backward"]) for b in buckets)


def test_one_step_message_pattern():
    grad_bytes = sum(b for b in lab.planned_buckets())
    expected = {"all_to_all": (1, 8 * 3, 3 * grad_bytes),          # one batch, (W-1) x model
                "ring": (6, 6, 2 * 3 * grad_bytes // 4),           # 2(W-1) steps, 2(W-1)/W x
                "bucketed": (18, 18, 2 * 3 * grad_bytes // 4)}     # 3 buckets x 6 steps
    for method, (batches, sends, nbytes) in expected.items():
        trace = launch(lab.one_step, 4, args=(method,), quiet=True).trace
        for rank, t in enumerate(lab.traffic(trace, 4)):
            assert (t["batches"], t["sends"], t["bytes"]) == (batches, sends, nbytes), \
                (method, rank, t)
