"""Lesson 13 (labs/layouts.py): the grader for pp_dp_step, one pipeline x data-parallel step.

Every world size runs one (pp, dp) grid (LAYOUTS): pure pipelines where the size is odd or
prime, pipelines of data-parallel replicas where it is not. The values: each stage's
gradients equal the mean over its replicas of one process's gradients, the last stage
returns its replica's loss. The method: point-to-point only inside the rank's pipeline
group with stages s +- 1, every op in a batch_isend_irecv, the reference's messages (the
harness compares them), the average over the dp group (an average over the world mixes the
stages' gradients: named as such).
"""
from dataclasses import dataclass

import pytest
import torch
from torch import nn

from labs.harness.grading import (GradeFailure, call, check_batched, check_close, grade,
                                  implementation, p2p_ops)
from labs.layouts import make_mesh, make_stages, micro_batch, place

LAYOUTS = {1: (1, 1), 2: (2, 1), 3: (3, 1), 4: (2, 2), 5: (5, 1), 6: (3, 2), 7: (7, 1),
           8: (4, 2)}
# (dtype, step): a second float32 step on other data, as training calls it again: a buffer or
# an input's .grad kept from the first call shows there.
CASES = (("float32", 0), ("float64", 0), ("float32", 1))
SEED = 1


@dataclass
class StepRecord:
    """One call of pp_dp_step on one rank."""

    case: tuple           # (dtype, step)
    done: object          # the Call
    grads: list           # the stage's .grad after the call
    stage: int
    replica: int
    pp_ranks: tuple


def _inputs(pp, dp, replica, stage, dtype, step):
    kind = getattr(torch, dtype)
    module = make_stages(pp, SEED)[stage].to(kind)
    x, target = micro_batch(replica, dp, step, SEED)
    return module, x.to(kind), target.to(kind)


def step_worker(rank, world_size, impl):
    fn = implementation(impl, "layouts", "pp_dp_step")
    pp, dp = LAYOUTS[world_size]
    mesh = make_mesh(world_size, pp)
    me = place(mesh)
    records = []
    for dtype, step in CASES:
        module, x, target = _inputs(pp, dp, me.replica, me.stage, dtype, step)
        done = call(fn, module, x, target, mesh, must_complete=True,
                    case=f"{dtype}, step {step}, layout (pp={pp}, dp={dp})")
        grads = [None if p.grad is None else p.grad.clone() for p in module.parameters()]
        records.append(StepRecord((dtype, step), done, grads, me.stage, me.replica,
                                  me.pp_ranks))
    return records


def one_process(pp, dp, dtype, step):
    """The whole model in one process: per replica (loss, [grads per stage])."""
    out = []
    for replica in range(dp):
        stages = [_inputs(pp, dp, replica, s, dtype, step)[0] for s in range(pp)]
        _, x, target = _inputs(pp, dp, replica, 0, dtype, step)
        loss = nn.functional.mse_loss(nn.Sequential(*stages)(x), target)
        loss.backward()
        out.append((loss.detach(), [[p.grad for p in s.parameters()] for s in stages]))
    return out


def _mean(tensors):
    return sum(tensors) / len(tensors)


@pytest.mark.parametrize("world_size", sorted(LAYOUTS))
def test_pp_dp_step(impl, world_size):
    pp, dp = LAYOUTS[world_size]
    results = grade(step_worker, world_size, args=(impl,), what="pp_dp_step")
    for i, (dtype, step) in enumerate(CASES):
        replicas = one_process(pp, dp, dtype, step)
        for rank, records in enumerate(results):
            record = records[i]
            what = f"pp_dp_step({dtype}, step {step}, layout pp={pp} x dp={dp}, " \
                   f"world_size={world_size})"
            check_pipeline_peers(record, what, rank=rank)
            check_loss(record, replicas, pp, what, rank=rank)
            check_grads(record, replicas, pp, what, rank=rank)


def check_pipeline_peers(record, what, *, rank):
    """Every point-to-point op in a batch, and only with stages s - 1 and s + 1 of the rank's
    own pipeline group (their global ranks)."""
    events = record.done.events
    check_batched(events, what, hint="post every message with dist.batch_isend_irecv "
                                     "(one batch per exchange; wait every Work it returns)")
    ranks, s = record.pp_ranks, record.stage
    allowed = {ranks[t] for t in (s - 1, s + 1) if 0 <= t < len(ranks)}
    for e in p2p_ops(events):
        if e.peer not in allowed:
            near = " or ".join(f"rank {r}" for r in sorted(allowed)) or "no rank"
            raise GradeFailure(
                f"{what}: rank {rank} (stage {s} of pipeline group {list(ranks)}) called "
                f"{e.describe()}; stage {s} talks only to its neighbours in its own pipeline "
                f"group, here {near}. A global rank passed as group_peer (or a group rank as "
                f"peer) names another rank: get_global_rank(pp, s + 1) is the next stage")


def check_loss(record, replicas, pp, what, *, rank):
    got = record.done.result
    if record.stage < pp - 1:
        if got is not None:
            raise GradeFailure(f"{what}: rank {rank} (stage {record.stage}, not the last) "
                               f"returned {type(got).__name__}; only the last stage returns "
                               f"the loss, the others None")
        return
    if not isinstance(got, torch.Tensor):
        raise GradeFailure(f"{what}: rank {rank} (the last stage) returned "
                           f"{type(got).__name__}; expected the loss as a 0-d tensor")
    check_close(got, replicas[record.replica][0], rank=rank,
                what=f"{what}: the loss of replica {record.replica}")


def check_grads(record, replicas, pp, what, *, rank):
    """Each gradient equals the mean over the replicas of one process's gradients."""
    s = record.stage
    for j, got in enumerate(record.grads):
        label = f"{what}: stage {s}'s parameter {j}"
        if got is None:
            raise GradeFailure(f"{label}: rank {rank} left its .grad None; expected the mean "
                               f"over its data-parallel group")
        expected = _mean([grads[s][j] for _, grads in replicas])
        if torch.allclose(got, expected, rtol=1e-5, atol=1e-6):
            continue
        world = _mean([grads[t][j] for _, grads in replicas for t in range(pp)])
        if pp > 1 and torch.allclose(got, world, rtol=1e-5, atol=1e-6):
            raise GradeFailure(f"{label}: rank {rank} holds the mean over the WORLD (every "
                               f"stage's gradients mixed); average over the data-parallel "
                               f"group only: all_reduce(grad, group=mesh.get_group('dp'))")
        own = replicas[record.replica][1][s][j]
        if len(replicas) > 1 and torch.allclose(got, own, rtol=1e-5, atol=1e-6):
            raise GradeFailure(f"{label}: rank {rank} holds its own replica's gradient, not "
                               f"the mean over its data-parallel group")
        check_close(got, expected, rank=rank, rtol=1e-5, atol=1e-6,
                    what=f"{label} (expected the mean over its data-parallel group)")
