"""Lesson 13: point-to-point inside a parallel layout -- process groups, DeviceMesh, and a
pipeline x data-parallel training step.

A real job never runs on one group. `init_device_mesh("cpu", (pp, dp), mesh_dim_names=("pp",
"dp"))` arranges the ranks in a grid: row s is pipeline stage s, column j is data-parallel
replica j, so global rank = s * dp + j. Each column is a pipeline group (the stages of one
replica: activations forward, gradients backward); each row a data-parallel group (the
replicas of one stage: their gradients averaged). Inside a group, ranks are numbered 0, 1, ...
again: `dist.get_global_rank(group, group_rank)` and `dist.get_group_rank(group, global_rank)`
translate; `P2POp(op, tensor, peer=GLOBAL, group=g)` or `P2POp(op, tensor, group=g,
group_peer=GROUP_RANK)`.

Worker functions (notebook 13 launches them):
    groups_and_ranks      the grid, each rank's groups, the two numberings
    peer_outside_group    what torch raises for a peer that is not in the group
    global_for_group_rank a global rank passed as group_peer: right by coincidence, or raises
    train_layout          SGD steps with a step function; `pp_dp_step` is the exercise
    step_timeline         one traced step, each exchange labelled with its group
    cycle_across_groups   two groups whose calls two ranks order differently: a hang
The exercise: `pp_dp_step(stage, x, target, mesh)` (notebook 13, Exercise).
`reference_training` is the same training in one process, on the whole model.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.device_mesh import init_device_mesh

from labs.harness.commands import cli
from labs.harness.ranks.exercises import exercise, todo
from labs.harness.ranks.tracing import span

WIDTH, BATCH, LR = 8, 4, 0.1     # every stage boundary is WIDTH wide; BATCH rows per replica


# ---------------------------------------------------------------------------------------
# 1. Groups and ranks
# ---------------------------------------------------------------------------------------

def make_mesh(world_size, pp):
    """The (pp, dp) grid over the default group's ranks: mesh["pp"] and mesh["dp"]."""
    if pp < 1 or world_size % pp:
        raise ValueError(f"pp={pp} must divide the world size {world_size}")
    return init_device_mesh("cpu", (pp, world_size // pp), mesh_dim_names=("pp", "dp"))


@dataclass(frozen=True)
class Place:
    """Where one rank sits in the grid."""

    rank: int
    stage: int            # its group rank in the pipeline group
    replica: int          # its group rank in the data-parallel group
    pp_ranks: tuple       # the global ranks of its pipeline group, in group-rank order
    dp_ranks: tuple       # the global ranks of its data-parallel group


def place(mesh) -> Place:
    pp, dp = mesh.get_group("pp"), mesh.get_group("dp")
    return Place(dist.get_rank(), dist.get_group_rank(pp, dist.get_rank()),
                 dist.get_group_rank(dp, dist.get_rank()),
                 tuple(dist.get_process_group_ranks(pp)), tuple(dist.get_process_group_ranks(dp)))


def groups_and_ranks(rank, world_size, pp=2):
    """Print this rank's place in the grid; stage s's next stage by group rank and globally."""
    mesh = make_mesh(world_size, pp)
    me = place(mesh)
    group = mesh.get_group("pp")
    line = f"rank {rank}: stage {me.stage}, replica {me.replica}; pp group {list(me.pp_ranks)}, " \
           f"dp group {list(me.dp_ranks)}"
    if me.stage + 1 < pp:
        nxt = dist.get_global_rank(group, me.stage + 1)
        line += f"; next stage: group_peer={me.stage + 1} = global rank {nxt}"
    print(line)
    return me


def _error(call) -> str:
    """The exception `call()` raises, without the group object's address; "" if none."""
    try:
        call()
    except Exception as exc:  # noqa: BLE001 - shown to the reader
        return f"{type(exc).__name__}: {str(exc).split(' <')[0]}"
    return ""


def peer_outside_group(rank, world_size, pp=2):
    """Rank by rank: a P2POp, an isend and get_group_rank naming a global rank outside this
    rank's pipeline group (the next rank of the world), and a group_peer past its end."""
    mesh = make_mesh(world_size, pp)
    group, t = mesh.get_group("pp"), torch.zeros(1)
    outside = next(r for r in range(world_size) if r not in dist.get_process_group_ranks(group))
    return {"outside": outside,
            "P2POp(peer=outside)": _error(lambda: dist.P2POp(dist.isend, t, outside, group)),
            "isend(dst=outside)": _error(lambda: dist.isend(t, outside, group)),
            "get_group_rank(outside)": _error(lambda: dist.get_group_rank(group, outside)),
            f"P2POp(group_peer={pp})": _error(
                lambda: dist.P2POp(dist.isend, t, group=group, group_peer=pp))}


def global_for_group_rank(rank, world_size, pp=2):
    """Stage 0 names its next stage with a GLOBAL rank, `rank + 1`, where the group rank
    (1) was meant: the bug of code written for one pipeline, where both numberings agree.
    Returns what that P2POp resolves to (the global rank it would send to), or its error.
    Built only, never posted: nothing waits for a message that cannot come."""
    mesh = make_mesh(world_size, pp)
    me, group = place(mesh), mesh.get_group("pp")
    if me.stage != 0:
        return None
    meant = dist.get_global_rank(group, 1)
    try:
        op = dist.P2POp(dist.isend, torch.zeros(1), group=group, group_peer=rank + 1)
    except ValueError as exc:
        return f"rank {rank}: group_peer={rank + 1}: {str(exc).split(' <')[0]}"
    verdict = "the next stage (the numbers happen to agree)" if op.peer == meant else \
        f"NOT the next stage (global {meant})"
    return f"rank {rank}: group_peer={rank + 1} -> global rank {op.peer}: {verdict}"


# ---------------------------------------------------------------------------------------
# 2. The model, the data, and one process's training
# ---------------------------------------------------------------------------------------

def make_stages(pp, seed=0):
    """The same model on every process: pp stages of one Linear(WIDTH, WIDTH) each (tanh
    after all but the last). Every stage has parameters of the same shapes."""
    torch.manual_seed(seed)
    stages = [nn.Linear(WIDTH, WIDTH) for _ in range(pp)]
    return [nn.Sequential(s, nn.Tanh()) if i < pp - 1 else s for i, s in enumerate(stages)]


def micro_batch(replica, dp, step, seed=0):
    """Replica `replica`'s rows of global batch `step` (dp * BATCH rows): (x, target)."""
    g = torch.Generator().manual_seed(seed * 1_000_003 + step)
    x = torch.randn(dp * BATCH, WIDTH, generator=g)
    target = torch.randn(dp * BATCH, WIDTH, generator=g)
    rows = slice(replica * BATCH, (replica + 1) * BATCH)
    return x[rows], target[rows]


def reference_training(pp, dp, steps=3, seed=0):
    """One process, the whole model, the whole global batch: {"params": per stage, the flat
    weights after `steps` SGD steps, "losses": the loss per step}."""
    stages = make_stages(pp, seed)
    model = nn.Sequential(*stages)
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    losses = []
    for step in range(steps):
        x, target = micro_batch(0, 1, step, seed) if dp == 1 else _whole_batch(dp, step, seed)
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), target)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return {"params": [_flat(s) for s in stages], "losses": losses}


def _whole_batch(dp, step, seed):
    parts = [micro_batch(j, dp, step, seed) for j in range(dp)]
    return torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts])


def _flat(module):
    return torch.cat([p.detach().reshape(-1) for p in module.parameters()])


# ---------------------------------------------------------------------------------------
# 3. The exercise
# ---------------------------------------------------------------------------------------

@exercise
def pp_dp_step(stage, x, target, mesh):
    """One training step's forward, backward and gradient average for THIS rank's pipeline
    stage, inside the (pp, dp) grid `mesh` (make_mesh): stage s = this rank's group rank in
    mesh.get_group("pp"); its replica's micro-batch is (x, target), the same on every stage
    of the replica (stage 0 reads x, the last stage reads target).

    Contract:
      * forward: stage 0 runs `stage(x)`; stage s > 0 receives its input from stage s - 1
        (a tensor like x), runs `stage` on it; every stage but the last sends its output to
        stage s + 1. The last stage's loss: `nn.functional.mse_loss(output, target)`.
      * backward: the last stage backpropagates the loss; every other stage receives the
        gradient of its output from stage s + 1 and backpropagates it; every stage s > 0
        sends the gradient of its input to stage s - 1.
      * point-to-point only with stages s - 1 and s + 1 OF ITS OWN pipeline group
        (group=mesh.get_group("pp"), group_peer=s +- 1), each message through ONE
        dist.batch_isend_irecv call (wait every Work it returns).
      * then each parameter's .grad replaced by its mean over the data-parallel group only:
        all_reduce(grad, group=mesh.get_group("dp")), divided by that group's size.
      * returns the loss (a new 0-d tensor, detached) on the last stage, None elsewhere.
    The caller zeroes the grads before and takes the optimizer step after.

    Hint: `s = dist.get_group_rank(pp, dist.get_rank())`, `n = dist.get_world_size(pp)`;
    receive into `torch.empty_like(x)`, then `.requires_grad_()` so that its .grad is the
    gradient to send back; a stage with a successor calls `output.backward(grad)`.
    """
    raise todo("notebook 13, 'Exercise: pp_dp_step'")


def train_layout(rank, world_size, pp, steps=3, step=None, seed=0):
    """`steps` SGD steps of the pipeline x data-parallel layout with `step` (pp_dp_step by
    default): {"stage", "replica", "params": this stage's flat weights, "losses"}."""
    step = step or pp_dp_step
    mesh = make_mesh(world_size, pp)
    me = place(mesh)
    stage = make_stages(pp, seed)[me.stage]
    opt = torch.optim.SGD(stage.parameters(), lr=LR)
    losses = []
    for i in range(steps):
        x, target = micro_batch(me.replica, world_size // pp, i, seed)
        opt.zero_grad()
        loss = step(stage, x, target, mesh)
        opt.step()
        if loss is not None:
            losses.append(loss.item())
    return {"stage": me.stage, "replica": me.replica, "params": _flat(stage), "losses": losses}


class WorldAsDp:
    """A mesh whose "dp" group is the whole world: the mistake of an all_reduce without
    `group=`. Every stage has weights of the same shapes, so nothing complains; the stages'
    gradients mix."""

    def __init__(self, mesh):
        self.mesh = mesh

    def get_group(self, name):
        return dist.group.WORLD if name == "dp" else self.mesh.get_group(name)


def world_average_step(stage, x, target, mesh):
    """pp_dp_step with its gradient average over the world instead of the dp group."""
    return pp_dp_step(stage, x, target, WorldAsDp(mesh))


def compare_with_one_process(results, pp, steps=3):
    """Max |weight difference| per stage between the layout's replicas and one process."""
    reference = reference_training(pp, len(results) // pp, steps)["params"]
    return {f"stage {s}": max((r["params"] - reference[s]).abs().max().item()
                              for r in results if r["stage"] == s) for s in range(pp)}


# ---------------------------------------------------------------------------------------
# 4-5. A traced step; a cycle across two groups
# ---------------------------------------------------------------------------------------

def step_timeline(rank, world_size, pp=2):
    """One step of pp_dp_step, with spans that say which group each exchange is on."""
    mesh = make_mesh(world_size, pp)
    me = place(mesh)
    stage = make_stages(pp)[me.stage]
    x, target = micro_batch(me.replica, world_size // pp, 0)
    dist.barrier()
    with span("step (pp exchanges, then dp all_reduce)"):
        pp_dp_step(stage, x, target, mesh)


# A group made by new_group has its own timeout: on gloo the 30-minute default, not the default
# group's (fixed when the group is made). The demos of uneven group creation give theirs 1.5 s;
# the cycle's groups wait longer than its launch deadline, which stops it (a HangError that
# names the call each rank sits in).
GROUP_TIMEOUT_S = 1.5
CYCLE_GROUP_TIMEOUT_S = 30.0


def new_group(ranks, timeout_s=GROUP_TIMEOUT_S):
    return dist.new_group(ranks, timeout=timedelta(seconds=timeout_s))


def cycle_across_groups(rank, world_size):
    """Ranks 0 and 1 share two groups, A and B (both [0, 1]): rank 0 all-reduces on A then
    on B, rank 1 on B then on A. On gloo each group is its own context, so rank 0 waits in
    A for rank 1, which waits in B for rank 0: a cycle, a hang."""
    group_a, group_b = (new_group([0, 1], CYCLE_GROUP_TIMEOUT_S) for _ in "ab")
    t = torch.ones(1)
    first, second = (group_a, group_b) if rank == 0 else (group_b, group_a)
    dist.all_reduce(t, group=first)
    dist.all_reduce(t, group=second)
    return t.item()


def cycle_fixed(rank, world_size):
    """The same two all-reduces in one order on every rank: A then B."""
    group_a, group_b = (new_group([0, 1], CYCLE_GROUP_TIMEOUT_S) for _ in "ab")
    t = torch.ones(1)
    dist.all_reduce(t, group=group_a)
    dist.all_reduce(t, group=group_b)
    return t.item()


def group_on_some_ranks(rank, world_size):
    """Only ranks 0 and 1 call new_group([0, 1]) (rank 2 is not a member and skips it); then
    every rank calls new_group([1, 2]) and ranks 1 and 2 all-reduce on it. torch asks every
    rank of the job to enter every new_group, members or not (its docstring)."""
    t = torch.ones(1)
    if rank in (0, 1):
        dist.all_reduce(t, group=new_group([0, 1]))
    later = new_group([1, 2])
    if rank in (1, 2):
        dist.all_reduce(t, group=later)
    return t.item()


def groups_in_other_orders(rank, world_size):
    """Rank 0 creates [0, 1] then [1, 2]; the others [1, 2] then [0, 1]: every rank made
    both groups, in another order. Then an all_reduce on the group holding 0 and 1."""
    order = ([0, 1], [1, 2]) if rank == 0 else ([1, 2], [0, 1])
    made = {tuple(ranks): new_group(ranks) for ranks in order}
    t = torch.ones(1)
    if rank in (0, 1):
        dist.all_reduce(t, group=made[(0, 1)])
    return t.item()


def demo(rank, world_size):
    """`torchrun --nproc-per-node=4 -m labs.layouts`: the grid, one line per rank."""
    return groups_and_ranks(rank, world_size, 2 if world_size % 2 == 0 else 1)


if __name__ == "__main__":
    cli.main(demo)
