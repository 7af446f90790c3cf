"""Lesson 08 (labs/snippets.py): the grader for fixed_average_gradients (snippet 3, fixed).

The exercise runs on real workers next to DDP, on the same model and data. The grader
checks the values (allclose to DDP's gradients, the parameters themselves untouched) and
the method, from the trace of the call: point-to-point ops only, all of them in ONE
batch_isend_irecv, every request waited for, every gradient sent to every other rank.

The bodies at the end are the ways snippet 3 gets half fixed, and one correct body in
another style; tests/lessons/test_snippets.py grades them (each wrong one must fail).
"""
import copy

import pytest
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

from labs.harness.grading import (GradeFailure, call, check_close, check_one_batch,
                                  check_p2p_only, grade, implementation, p2p_ops, seeded)
from labs.harness.grading.inputs import exact_mean, exactly_summed, significant_bits

WHAT = "fixed_average_gradients"
# An MLP with 4 parameters of different shapes, and a Linear with 2: fewer parameters
# than ranks, which catches a rank used as a parameter index. One in float64.
# And a large one (2^20 weights): the method on every size.
MODELS = {"mlp": lambda: nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3)),
          "linear": lambda: nn.Linear(4, 3),
          "large": lambda: nn.Sequential(nn.Linear(4, 1024), nn.Linear(1024, 1024),
                                         nn.Linear(1024, 3))}
CASES = [("mlp", torch.float32), ("linear", torch.float64), ("linear", torch.float16),
         ("mlp", torch.bfloat16), ("large", torch.float32),
         # a gradient that is all zero on one rank still counts (0 + the others) / W; and
         # gradients beyond float16's range (65504), which bfloat16 holds
         ("mlp, zero on rank 0", torch.float32), ("linear, large values", torch.bfloat16)] + \
    [("mlp, exactly summed", d) for d in (torch.float16, torch.bfloat16, torch.float32,
                                          torch.float64)]
# DDP adds the gradients up in another order than a body may: within the dtype's rounding.
ATOL = {torch.float16: 2e-3, torch.bfloat16: 2e-2}
# Exactly summed gradients (inputs.exactly_summed): every right order gives the exact mean,
# so a sum through a narrower type (float16 added up in bfloat16) is off by several ulps
# where DDP's tolerance above would hide it. One ulp is allowed, for a reciprocal rounded
# to the dtype (grad * (1 / W)).


def average_worker(rank, world_size, impl):
    """Per case: the exercise's call on a model, and DDP's gradients on a twin of it."""
    fixed_average_gradients = implementation(impl, "snippets", WHAT)
    records = []
    for i, (name, dtype) in enumerate(CASES):
        torch.manual_seed(0)
        model = MODELS[name.split(",")[0]]().to(dtype)
        twin = DDP(copy.deepcopy(model))
        x = seeded(rank, (8, 4), "float64", 2 * i).to(dtype)        # this rank's batch
        y = seeded(rank, (8, 3), "float64", 2 * i + 1).to(dtype)
        if name.endswith("zero on rank 0") and rank == 0:
            y = model(x).detach()                 # a loss of 0: every gradient is 0
        if name.endswith("large values"):
            y = y * 1e6
        for net in (model, twin):
            nn.functional.mse_loss(net(x), y).backward()
        if name.endswith("exactly summed"):
            for k, (p, q) in enumerate(zip(model.parameters(), twin.parameters())):
                p.grad = exactly_summed(rank, world_size, p.shape, dtype, 10 * i + k)
                q.grad = exact_mean(world_size, p.shape, dtype, 10 * i + k)
        params = [p.detach().clone() for p in model.parameters()]
        done = call(fixed_average_gradients, model, must_complete=True,
                    case=f"{name} model, {str(dtype).replace('torch.', '')}")
        records.append({"call": done, "grads": [p.grad.clone() for p in model.parameters()],
                        "ddp": [p.grad.clone() for p in twin.parameters()],
                        "params_kept": all(torch.equal(p.detach(), b)
                                           for p, b in zip(model.parameters(), params))})
    return records


def check_all_waited(events, what, rank):
    """wait() was called on the Work of every point-to-point op."""
    waited = {e.waits_for for e in events if e.op == "wait"}
    missing = [e for e in p2p_ops(events) if e.seq not in waited]
    if missing:
        raise GradeFailure(f"{what}: rank {rank} never waited for {missing[0].describe()} "
                           f"({len(missing)} request(s) not waited for): wait() on every "
                           f"request the batch returns")


def check_sent_to_everyone(events, what, rank, world_size, numel):
    """Every other rank got all `numel` gradient elements from us, and sent us theirs."""
    for peer in range(world_size):
        if peer == rank:
            continue
        sent = sum(e.numel for e in p2p_ops(events, rank, ("isend",)) if e.peer == peer)
        got = sum(e.numel for e in p2p_ops(events, rank, ("irecv",)) if e.peer == peer)
        if (sent, got) != (numel, numel):
            raise GradeFailure(f"{what}: rank {rank} sent {sent} and received {got} gradient "
                               f"elements with rank {peer}; every rank sends all its "
                               f"gradients ({numel} elements) to every other rank and "
                               f"receives theirs")


@pytest.mark.parametrize("world_size", [1, 2, 3, 4, 5, 6, 7, 8])
def test_fixed_average_gradients(impl, world_size):
    # 30 s: 8 ranks exchanging 2^20 gradients on 2 cores take ~10 s in some right styles; a
    # deadlock is found in seconds by the stuck watch, not by this deadline
    results = grade(average_worker, world_size, args=(impl,), timeout=30, what=WHAT)
    for rank, records in enumerate(results):
        for (name, dtype), r in zip(CASES, records):
            what = f"{WHAT} ({name} model, {str(dtype).replace('torch.', '')}, " \
                   f"world_size={world_size})"
            events = r["call"].events
            check_p2p_only(events, what)
            for k, (got, expected) in enumerate(zip(r["grads"], r["ddp"])):
                # large values: a sum's rounding is relative to its terms, not to the sum
                scale = float(expected.abs().max()) if name.endswith("large values") else 1.0
                atol, rtol, of = ATOL.get(dtype, 1e-6) * scale, ATOL.get(dtype), "DDP's"
                if name.endswith("exactly summed"):                             # 1 ulp
                    atol, rtol, of = 0.0, 2.0 ** (1 - significant_bits(dtype)), "the exact mean"
                check_close(got, expected, rank=rank, atol=atol, rtol=rtol,
                            what=f"{what}, gradient of parameter {k} (expected {of})")
            if not r["params_kept"]:
                raise GradeFailure(f"{what}: rank {rank} changed the parameters themselves; "
                                   f"only their .grad may change")
            if world_size > 1:
                check_one_batch(events, what, rank=rank,
                                expected="all its sends and receives")
                check_all_waited(events, what, rank)
                check_sent_to_everyone(events, what, rank, world_size,
                                       sum(g.numel() for g in r["grads"]))


# ----------------------------------------------------------------------------------------
# Bodies the grader must reject (each half fixes snippet 3), and one it must accept
# ----------------------------------------------------------------------------------------

def _post_exchange(model, split=False):
    """Each gradient to every other rank, an irecv of each of theirs into a fresh buffer;
    in one batch, or (split) sends and receives in two. Returns (works, received)."""
    rank, world_size = dist.get_rank(), dist.get_world_size()
    grads = [p.grad for p in model.parameters()]
    peers = [p for p in range(world_size) if p != rank]
    received = {peer: [torch.empty_like(g) for g in grads] for peer in peers}
    sends = [dist.P2POp(dist.isend, g, peer) for peer in peers for g in grads]
    recvs = [dist.P2POp(dist.irecv, b, peer) for peer in peers for b in received[peer]]
    if not peers:
        return [], received
    if split:
        return dist.batch_isend_irecv(sends) + dist.batch_isend_irecv(recvs), received
    return dist.batch_isend_irecv(sends + recvs), received


def _average(model, received, scale_received=True):
    world_size = dist.get_world_size()
    for k, p in enumerate(model.parameters()):
        others = sum(bufs[k] for bufs in received.values())
        p.grad = (p.grad + others) / world_size if scale_received else \
            p.grad / world_size + others


def barrier_instead_of_wait(model):
    """The exchange right, then a barrier "to synchronise" instead of wait()."""
    works, received = _post_exchange(model)
    dist.barrier()
    _average(model, received)


def all_reduce_inside(model):
    """The right values with the built-in collective: not the lesson."""
    for p in model.parameters():
        dist.all_reduce(p.grad)
        p.grad /= dist.get_world_size()


def unscaled_add(model):
    """Everything right but the average: own / W + the others, not divided (snippet 3's)."""
    works, received = _post_exchange(model)
    for work in works:
        work.wait()
    _average(model, received, scale_received=False)


def two_batches(model):
    """Right values, but the sends and the receives in two batch_isend_irecv calls."""
    works, received = _post_exchange(model, split=True)
    for work in works:
        work.wait()
    _average(model, received)


def flat_buffer_average(model):
    """A correct body in another style: all gradients in one flat tensor, one isend and one
    irecv per peer, one batch, wait for all, average, unflatten."""
    rank, world_size = dist.get_rank(), dist.get_world_size()
    params = list(model.parameters())
    flat = torch.cat([p.grad.reshape(-1) for p in params])
    peers = [p for p in range(world_size) if p != rank]
    inbox = {peer: torch.empty_like(flat) for peer in peers}
    ops = [op for peer in peers for op in (dist.P2POp(dist.isend, flat, peer),
                                           dist.P2POp(dist.irecv, inbox[peer], peer))]
    for work in dist.batch_isend_irecv(ops) if ops else []:
        work.wait()
    mean = (flat + sum(inbox.values())) / world_size
    for p, piece in zip(params, mean.split([p.numel() for p in params])):
        p.grad = piece.view_as(p.grad).clone()
