"""Lesson 06: averaging gradients by hand -- all-to-all, ring, bucketed ring -- against
`dist.all_reduce` and DistributedDataParallel.

Data parallelism in one sentence: every rank holds the same model, computes gradients
on its own shard of the batch, and before the optimizer step every `param.grad` is
replaced by the mean over ranks, so every replica takes the same step. The exercises do
that averaging with point-to-point ops:

    average_gradients_all_to_all(model)            one batch: every gradient to every peer
    average_gradients_ring(model)                  flatten, ring all-reduce (lesson 05), / W
    average_gradients_bucketed(model, bucket_bytes)  the same per bucket, as DDP does

`train` runs the same training from the same seed with any of the methods in METHODS;
`compare_methods` runs them all in one launch so the notebook can show that they end
with the same weights (up to float rounding) and how long a step takes with each.
Reading the traces in the notebook (traffic per rank, a timeline without start-up):
labs.views.gradients.
"""
from __future__ import annotations

import time

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
from torch.nn.parallel import DistributedDataParallel

from labs.harness.commands import cli
from labs.harness.ranks.exercises import exercise, todo
from labs.harness.ranks.tracing import span
from labs.ring import ring_all_reduce  # noqa: F401 - lesson 05's exercise, for your bodies

METHODS = ("all_to_all", "ring", "bucketed", "all_reduce", "ddp")


# ---------------------------------------------------------------------------------------
# Exercises
# ---------------------------------------------------------------------------------------

@exercise
def average_gradients_all_to_all(model):
    """Replace every `param.grad` of `model` with its mean over all ranks, as DDP would,
    exchanging every gradient with every other rank in ONE batch_isend_irecv.

    Contract:
      * parameters whose `.grad` is None are skipped (left None). Which ones are None
        must be the same on every rank (true when every rank runs the same model code:
        frozen or unused parameters); otherwise the sends and receives do not pair up.
      * any floating dtype, also mixed in one model (each gradient travels in its own
        dtype); any layout: a gradient may be non-contiguous (a channels_last conv
        weight's), and gloo sends and receives contiguous tensors only; any world size,
        including 1 (nothing to send: do not call batch_isend_irecv with an empty list,
        it raises IndexError).
      * every rank ends with the SAME bits: add the W gradients in rank order
        (0, 1, ..., W-1) on every rank, then divide by W. Adding your own gradient first
        gives each rank a different rounding, and replicas slowly drift apart.
      * returns None.

    Hint: for each gradient and each peer, an isend of your gradient (`.contiguous()`) and
    an irecv into a fresh buffer; both sides post them in `model.parameters()` order, so the messages
    between a pair match up in order (FIFO). Wait for every request before reading a
    buffer. Lesson 08 runs the widely copied broken version of this function.
    """
    raise todo("notebook 06, 'Exercise 1: all-to-all averaging'")


@exercise
def average_gradients_ring(model):
    """Replace every `param.grad` with its mean over all ranks using the ring all-reduce
    of lesson 05: flatten the gradients into one buffer, `ring_all_reduce(buffer)`
    (from labs.ring), divide by world size, copy the pieces back into each `param.grad`.

    Contract: as for average_gradients_all_to_all (None grads skipped, consistently
    across ranks; any layout: `g.view(-1)` fails on a channels_last gradient, where
    `g.reshape(-1)` copies; any world size including 1; returns None). Mixed dtypes: one flat
    buffer per dtype (torch.cat would promote float32 to float64), each ring-reduced in its
    own dtype: one `ring_all_reduce` call per dtype (the grader records them), no
    collective. Your lesson-05 ring must be solved first.

    Hint: `torch.cat([g.reshape(-1) for g in grads])`; afterwards
    `flat.split([g.numel() for g in grads])` gives the pieces back in order;
    `grad.copy_(piece.view_as(grad))` writes each one into place.
    """
    raise todo("notebook 06, 'Exercise 2: ring averaging'")


@exercise
def average_gradients_bucketed(model, bucket_bytes):
    """As average_gradients_ring, but one ring all-reduce per bucket of at most about
    `bucket_bytes`, as DDP does: buckets filled in REVERSE parameter order (the order
    backward produces gradients), one dtype per bucket, a bucket closed as soon as it
    holds >= `bucket_bytes` (so a parameter bigger than a bucket gets a bucket of its
    own). `plan_buckets(params, bucket_bytes)` below computes exactly that plan.

    Contract: as for average_gradients_ring; `bucket_bytes` > 0. One `ring_all_reduce`
    call per bucket, in the plan's order (the grader compares its calls with the plan).

    Hint: `for bucket in plan_buckets([p for p in model.parameters() if p.grad is not
    None], bucket_bytes):` flatten that bucket's grads, ring_all_reduce, divide, copy back.
    """
    raise todo("notebook 06, 'Exercise 3: bucketed ring averaging'")


# ---------------------------------------------------------------------------------------
# Helpers (not exercises: use them)
# ---------------------------------------------------------------------------------------

def plan_buckets(params, bucket_bytes, first_bucket_bytes=None):
    """DDP's bucket assignment: lists of parameters, reverse order, one dtype per bucket.

    A parameter is added to the open bucket of its dtype; when that bucket holds
    >= `bucket_bytes` it is closed. Leftover open buckets are closed at the end.
    `first_bucket_bytes`: a smaller limit for the first bucket of each dtype (DDP uses
    1 MiB when you leave `bucket_cap_mb` at its default, so that the first all_reduce
    starts early in backward).
    """
    if bucket_bytes <= 0:
        raise ValueError(f"bucket_bytes must be > 0, got {bucket_bytes}")
    buckets, open_, closed = [], {}, {}
    for p in reversed(list(params)):
        bucket = open_.setdefault(p.dtype, [[], 0])
        bucket[0].append(p)
        bucket[1] += p.numel() * p.element_size()
        first = first_bucket_bytes is not None and not closed.get(p.dtype)
        if bucket[1] >= (first_bucket_bytes if first else bucket_bytes):
            buckets.append(bucket[0])
            closed[p.dtype] = closed.get(p.dtype, 0) + 1
            del open_[p.dtype]
    buckets.extend(b[0] for b in open_.values() if b[0])
    return buckets


def average_gradients_all_reduce(model):
    """The reference: `dist.all_reduce(grad); grad /= W` for every gradient."""
    ws = dist.get_world_size()
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad)
            p.grad /= ws


# ---------------------------------------------------------------------------------------
# The training run every method repeats
# ---------------------------------------------------------------------------------------

IN, HIDDEN, OUT = 32, 256, 8
BUCKET_BYTES = 256 * 1024


def make_model(seed=0, hidden=HIDDEN):
    """The same model on every rank (same seed). The first layer is frozen (a
    "pretrained" feature layer): its parameters never get a gradient (grad stays None)."""
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(IN, hidden), nn.Tanh(),
                          nn.Linear(hidden, hidden), nn.Tanh(),
                          nn.Linear(hidden, hidden), nn.Tanh(),
                          nn.Linear(hidden, hidden), nn.Tanh(),
                          nn.Linear(hidden, OUT))
    model[0].requires_grad_(False)
    return model


def shard(rank, world_size, step, batch=16, seed=0):
    """Rank `rank`'s rows of global batch number `step` (world_size * batch rows).

    The global batch depends only on (seed, step, world_size), so every method sees the
    same data; each rank takes its own slice of it. Targets: a fixed random "teacher"
    (tanh of a linear map) plus noise.
    """
    teacher = torch.randn(IN, OUT, generator=torch.Generator().manual_seed(seed + 1234))
    g = torch.Generator().manual_seed(seed * 100_003 + step)
    x = torch.randn(world_size * batch, IN, generator=g)
    noise = torch.randn(world_size * batch, OUT, generator=g)
    y = torch.tanh(x @ teacher / IN**0.5) + 0.05 * noise
    rows = slice(rank * batch, (rank + 1) * batch)
    return x[rows], y[rows]


def _averager(method, bucket_bytes):
    if method == "all_to_all":
        return average_gradients_all_to_all
    if method == "ring":
        return average_gradients_ring
    if method == "bucketed":
        return lambda model: average_gradients_bucketed(model, bucket_bytes)
    if method == "all_reduce":
        return average_gradients_all_reduce
    if method == "ddp":
        return lambda model: None        # DDP averages inside backward()
    raise ValueError(f"unknown method {method!r}; one of {METHODS}")


def compare_methods(rank, world_size, methods=METHODS, steps=20, batch=16, lr=0.2,
                    hidden=HIDDEN, bucket_bytes=BUCKET_BYTES, seed=0):
    """Train one model per method from `seed`, on the same data, for `steps` SGD steps.

    The methods take turns step by step (a noisy machine slows them all alike), and all
    ranks start each method's step together (a barrier, outside the timing).
    Returns {method: {"params": the final weights as one flat tensor, "losses": this
    rank's loss per step, "step_s": seconds per step (forward, backward, averaging,
    optimizer step)}}.
    """
    runs = {}
    for method in methods:
        model = make_model(seed, hidden)
        net = DistributedDataParallel(model) if method == "ddp" else model
        opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=lr)
        runs[method] = (model, net, opt, _averager(method, bucket_bytes),
                        {"losses": [], "step_s": []})
    for step in range(steps):
        x, y = shard(rank, world_size, step, batch, seed)
        for model, net, opt, average, record in runs.values():
            dist.barrier()
            t0 = time.perf_counter()
            opt.zero_grad()
            loss = nn.functional.mse_loss(net(x), y)
            loss.backward()
            average(model)
            opt.step()
            record["step_s"].append(time.perf_counter() - t0)
            record["losses"].append(loss.item())
    return {method: dict(record, params=torch.cat([p.detach().reshape(-1)
                                                   for p in model.parameters()]))
            for method, (model, _, _, _, record) in runs.items()}


def train(rank, world_size, method, steps=20, **kwargs):
    """`compare_methods` for one method: {"params", "losses", "step_s"}."""
    return compare_methods(rank, world_size, (method,), steps, **kwargs)[method]


def one_step(rank, world_size, method, hidden=HIDDEN, bucket_bytes=BUCKET_BYTES):
    """One backward + averaging step with `method`, for the timeline (the launcher traces
    every op). A barrier first, so that the ranks start the step together."""
    model = make_model(0, hidden)
    x, y = shard(rank, world_size, 0)
    dist.barrier()
    with span("backward"):
        nn.functional.mse_loss(model(x), y).backward()
    with span("average"):
        _averager(method, bucket_bytes)(model)


def averaging_check(rank, world_size, method):
    """Average this rank's gradients with `method`; compare with the all_reduce mean.

    Prints, per rank, whether the result equals `all_reduce(grad) / p` (allclose) and
    whether the frozen layer's grads are still None; returns the averaged grads.
    """
    model = make_model()
    x, y = shard(rank, world_size, 0)
    nn.functional.mse_loss(model(x), y).backward()
    expected = {}
    for name, p in model.named_parameters():
        if p.grad is not None:
            expected[name] = p.grad.clone()
            dist.all_reduce(expected[name])
            expected[name] /= world_size
    _averager(method, BUCKET_BYTES)(model)
    got = {name: p.grad for name, p in model.named_parameters() if p.grad is not None}
    same = got.keys() == expected.keys() and all(
        torch.allclose(got[k], expected[k], atol=1e-7) for k in got)
    frozen = model[0].weight.grad is None and model[0].bias.grad is None
    print(f"{method}: {len(got)} gradients averaged; equal to all_reduce / p: {same}; "
          f"frozen layer's grads still None: {frozen}")
    return torch.cat([g.reshape(-1) for g in got.values()])


def ddp_buckets(rank, world_size, configs, steps=2):
    """What DDP really does with its buckets, seen by a comm hook.

    `configs`: [(hidden, bucket_cap_mb or None for DDP's default)]. For each, train
    `steps` steps (DDP re-plans its buckets after the first) and return, for the last
    step, {"sizes": bucket sizes in bytes, in launch order, "in_backward": per bucket,
    was its all_reduce launched before backward() returned, "ms_before_end": how long
    before}. The hook does what DDP does by default (divide by W, all_reduce) and notes
    the time.
    """
    out = []
    for hidden, cap in configs:
        seen = []

        def recording_hook(state, bucket, seen=seen):
            buf = bucket.buffer()
            seen.append((buf.numel() * buf.element_size(), time.perf_counter()))
            return allreduce_hook(state, bucket)

        kwargs = {} if cap is None else {"bucket_cap_mb": cap}
        net = DistributedDataParallel(make_model(0, hidden), **kwargs)
        net.register_comm_hook(None, recording_hook)
        for step in range(steps):
            seen.clear()
            x, y = shard(rank, world_size, step)
            nn.functional.mse_loss(net(x), y).backward()
            t_end = time.perf_counter()
        out.append({"sizes": [n for n, _ in seen],
                    "in_backward": [t < t_end for _, t in seen],
                    "ms_before_end": [(t_end - t) * 1e3 for _, t in seen]})
    return out


def planned_buckets(hidden=HIDDEN, bucket_bytes=BUCKET_BYTES, first_bucket_bytes=None):
    """plan_buckets on the lesson's model (no workers needed): bucket sizes in bytes."""
    model = make_model(0, hidden)
    params = [p for p in model.parameters() if p.requires_grad]
    return [sum(p.numel() * p.element_size() for p in b)
            for b in plan_buckets(params, bucket_bytes, first_bucket_bytes)]


def demo(rank, world_size):
    """Lesson 06 demo: 5 steps with ring averaging vs DDP; max |weight difference|."""
    ring = train(rank, world_size, "ring", steps=5)["params"]
    ddp = train(rank, world_size, "ddp", steps=5)["params"]
    return f"{(ring - ddp).abs().max().item():.2e}"


if __name__ == "__main__":
    cli.main(demo)
