"""Claims of lessons 05-08 about DDP and the built-in collectives: gloo's bfloat16
all_reduce rounding at every addition; DDP's average (1/W, then SUM), its broadcast at
construction and its buckets; gloo's all_to_all forms; all_reduce's synchronous default."""
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

import labs.gradients as gradients
from labs import launch
from labs.claims.common import error_text, once
from labs.claims.registry import ClaimResult, claim

MiB = 2**20
HUGE = 3e38    # a float32 gradient near the top of its range (float32 max: about 3.4e38)


def bfloat16_sums(rank, world_size, numel=4099):
    """Seeded bfloat16 data summed three ways: gloo's all_reduce in bfloat16, the same
    values summed in float32, and exactly (float64). Returns, for the bfloat16 and the
    float32 sums, how many elements differ from the exact sum rounded to bfloat16 once."""
    x = torch.randn(numel, generator=torch.Generator().manual_seed(rank)).to(torch.bfloat16)
    exact, in_float32, in_bfloat16 = x.double(), x.float(), x.clone()
    for t in (exact, in_float32, in_bfloat16):
        dist.all_reduce(t)
    once = exact.to(torch.bfloat16)
    return (int((in_bfloat16 != once).sum()), int((in_float32.to(torch.bfloat16) != once).sum()))


@claim("05", "gloo's all_reduce adds bfloat16 in bfloat16: partial sums are rounded at every "
             "addition, not accumulated in float32 and rounded once")
def gloo_all_reduce_rounds_bfloat16_partial_sums():
    differs, float32_differs = launch(bfloat16_sums, 4, quiet=True)[0]
    holds = differs > 0.05 * 4099 and float32_differs == 0
    return ClaimResult(holds, f"4 ranks, 4099 bfloat16 sums: all_reduce differs from the exact "
                              f"sum rounded once in {differs}; float32 accumulation would in "
                              f"{float32_differs}")


def _grads(module):
    return [p.grad.clone() for p in module.parameters()]


def ddp_checks(rank, world_size):
    """Three facts about DDP on the ranks of the default group.

    1. A model built from a different seed on every rank; after DDP's constructor every
       rank holds rank 0's initial weights.
    2. DDP's gradients vs a hand-written `all_reduce(grad); grad /= W` on a copy of the
       same model and data.
    3. A gradient of HUGE on every rank: the sum of W of them overflows float32, the sum
       of W pieces of HUGE / W does not. Which one DDP computes shows in the result.
    """
    torch.manual_seed(rank)
    model = nn.Linear(4, 3)
    initial = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    rank0_initial = initial.clone()
    dist.broadcast(rank0_initial, src=0)
    twin = nn.Linear(4, 3)                           # the same model, averaged by hand
    ddp = DistributedDataParallel(model)
    after = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    twin.load_state_dict(model.state_dict())

    g = torch.Generator().manual_seed(100 + rank)
    x, y = torch.randn(8, 4, generator=g), torch.randn(8, 3, generator=g)
    nn.functional.mse_loss(ddp(x), y).backward()
    nn.functional.mse_loss(twin(x), y).backward()
    for p in twin.parameters():
        dist.all_reduce(p.grad)
        p.grad /= world_size
    close = all(torch.allclose(a, b, atol=1e-7) for a, b in zip(_grads(model), _grads(twin)))

    big = nn.Linear(1, 1, bias=False)
    big_ddp = DistributedDataParallel(big)
    big_ddp(torch.full((1, 1), HUGE)).sum().backward()    # d/dw (w * x) = x = HUGE
    by_hand = torch.full((1,), HUGE)
    dist.all_reduce(by_hand)
    return {"broadcast": torch.equal(after, rank0_initial), "own_seed": torch.equal(after, initial),
            "allclose": close, "ddp_huge": big.weight.grad.item(),
            "hand_huge": (by_hand / world_size).item()}


@once
def _ddp():
    return launch(ddp_checks, 3, quiet=True)


@claim("06", "DDP averages as sum(g / W): it scales each gradient by 1/W, then SUM-all-reduces")
def ddp_scales_by_1_over_w_then_sums():
    r = _ddp()[0]
    holds = abs(r["ddp_huge"] - HUGE) <= 1e-6 * HUGE and r["hand_huge"] == float("inf")
    return ClaimResult(holds, f"a gradient of {HUGE:g} on each of 3 ranks: DDP's average "
                              f"{r['ddp_huge']:.3g}; all_reduce then / 3: {r['hand_huge']:.3g}")


@claim("06", "DDP's gradients equal a hand-written all_reduce(grad) / W within float "
             "tolerance (not always bit for bit)")
def ddp_matches_all_reduce_over_w():
    close = [r["allclose"] for r in _ddp()]
    return ClaimResult(all(close), f"3 ranks, allclose on every rank: {close}")


@claim("06", "DDP broadcasts rank 0's parameters to every rank when it is constructed")
def ddp_broadcasts_parameters_from_rank_0():
    results = _ddp()
    same = [r["broadcast"] for r in results]
    own = [r["own_seed"] for r in results]
    return ClaimResult(all(same) and own == [True, False, False],
                       f"models from seeds 0, 1, 2; after DDP(model) rank 0's weights on "
                       f"every rank: {same}; each rank's own: {own}")


@once
def _buckets():
    configs = [(gradients.HIDDEN, gradients.BUCKET_BYTES / MiB), (512, None)]
    return launch(gradients.ddp_buckets, 2, args=(configs,), quiet=True)[0]


@claim("06", "DDP fills buckets in reverse parameter order, 25 MiB each, the first 1 MiB "
             "(or bucket_cap_mb), as labs.gradients.plan_buckets computes")
def ddp_buckets_follow_the_plan():
    seen = _buckets()
    planned = [gradients.planned_buckets(gradients.HIDDEN, gradients.BUCKET_BYTES),
               gradients.planned_buckets(512, 25 * MiB, first_bucket_bytes=1 * MiB)]
    same = [ddp["sizes"] == plan for ddp, plan in zip(seen, planned)]
    return ClaimResult(all(same), f"bucket_cap_mb=0.25: {len(seen[0]['sizes'])} buckets as "
                                  f"planned: {same[0]}; default cap, a 3.2 MB model: "
                                  f"{len(seen[1]['sizes'])} buckets as planned: {same[1]}")


@claim("06", "DDP launches each bucket's all_reduce inside backward(), as soon as the bucket's "
             "gradients are ready (with one bucket: at the end of backward)")
def ddp_all_reduces_buckets_inside_backward():
    seen = _buckets()
    inside = [all(ddp["in_backward"]) for ddp in seen]
    return ClaimResult(all(inside), f"models with {len(seen[0]['sizes'])} and "
                                    f"{len(seen[1]['sizes'])} buckets: every bucket's all_reduce "
                                    f"launched before backward() returned: {inside}")


def all_to_all_forms(rank, world_size):
    """Rank r cuts 5 values into slices of 2, 2 and 1 for ranks 0, 1, 2 (3 ranks).

    Returns (what the list form dist.all_to_all said, what all_to_all_single with split
    sizes received).
    """
    sizes = [2, 2, 1]
    inputs = list((torch.arange(5.0) + 10 * rank).split(sizes))
    outputs = [torch.empty(sizes[rank]) for _ in range(world_size)]
    try:
        dist.all_to_all(outputs, inputs)
        listed = "no error"
    except RuntimeError as exc:
        listed = error_text(exc)
    received = torch.empty(sizes[rank] * world_size)
    dist.all_to_all_single(received, torch.arange(5.0) + 10 * rank,
                           output_split_sizes=[sizes[rank]] * world_size,
                           input_split_sizes=sizes)
    return listed, received.tolist()


def all_reduce_forms(rank, world_size):
    """all_reduce returns None with the sum in place; async_op=True returns a Work."""
    t = torch.tensor([rank + 1.0])
    returned = dist.all_reduce(t)
    blocking = (returned is None, t.item())
    t = torch.tensor([rank + 1.0])
    work = dist.all_reduce(t, async_op=True)
    is_work = hasattr(work, "wait")
    work.wait()
    return blocking, (is_work, t.item())


@once
def _collectives():
    return launch(all_to_all_forms, 3, quiet=True), launch(all_reduce_forms, 3, quiet=True)


@claim("07", "gloo's list form dist.all_to_all rejects slices of unequal size")
def all_to_all_list_rejects_unequal_slices():
    listed = [r[0] for r in _collectives()[0]]
    holds = all(e.startswith("RuntimeError") for e in listed)
    return ClaimResult(holds, f"slices of 2, 2, 1 elements: {listed[2]}")


@claim("07", "dist.all_to_all_single with split sizes exchanges slices of unequal size")
def all_to_all_single_takes_split_sizes():
    received = [r[1] for r in _collectives()[0]]
    expected = [[0.0, 1.0, 10.0, 11.0, 20.0, 21.0], [2.0, 3.0, 12.0, 13.0, 22.0, 23.0],
                [4.0, 14.0, 24.0]]
    return ClaimResult(received == expected, f"rank 2 received {received[2]}")


@claim("08", "dist.all_reduce is synchronous unless async_op=True (then it returns a Work)")
def all_reduce_is_synchronous_by_default():
    blocking, asynchronous = _collectives()[1][0]
    holds = blocking == (True, 6.0) and asynchronous == (True, 6.0)
    return ClaimResult(holds, f"ranks hold 1, 2, 3; all_reduce returned None: {blocking[0]}, "
                              f"sum in place on return: {blocking[1]:g}; async_op=True "
                              f"returned a Work: {asynchronous[0]}, sum after wait(): "
                              f"{asynchronous[1]:g}")
