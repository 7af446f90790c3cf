"""Lesson 06 (labs/gradients.py): the lesson's worker functions (bucket plans, DDP's
buckets, the methods agree, the message pattern of one step)."""
import pytest
import torch
from torch import nn

import labs.gradients as lab
import labs.views.gradients as view
from labs import launch


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
        for rank, t in enumerate(view.traffic(trace, 4)):
            assert (t["batches"], t["sends"], t["bytes"]) == (batches, sends, nbytes), \
                (method, rank, t)


def test_step_seconds_takes_the_slowest_rank_and_skips_warmup():
    per_rank = [{"ring": {"step_s": [9.0, 1.0, 2.0]}, "ddp": {"step_s": [9.0, 3.0, 1.0]}},
                {"ring": {"step_s": [0.0, 2.0, 1.0]}, "ddp": {"step_s": [0.0, 1.0, 4.0]}}]
    assert view.step_seconds(per_rank) == {"ring": [2.0, 2.0], "ddp": [3.0, 4.0]}
