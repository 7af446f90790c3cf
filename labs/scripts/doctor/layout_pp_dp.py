"""Lesson 13's layout as a torchrun script: a (pp, dp) DeviceMesh, one training step whose
activations and gradients cross the stage boundaries inside the pipeline group (one batch per
message, group_peer = a rank INSIDE the group), then each stage's gradients averaged inside
its data-parallel group, and a loss statistic all-reduced on a group of its own.

    python -m labs.doctor --nproc-per-node 4 labs/scripts/doctor/layout_pp_dp.py --pp 2
    ... --bug group-rank   (6 ranks, --pp 3) stage 0 names its next stage `rank + 1`, a
                           global rank, as group_peer: replica 1's message goes to its last
                           stage, not to stage 1
    ... --bug order        odd replicas all-reduce the loss statistic before the gradients,
                           even ones after: two groups whose calls ranks order differently
"""
import argparse

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.device_mesh import init_device_mesh

WIDTH, BATCH = 8, 4


def one_message(op, tensor, group, group_peer):
    for work in dist.batch_isend_irecv([dist.P2POp(op, tensor, group=group,
                                                   group_peer=group_peer)]):
        work.wait()


def pipeline_pass(layer, x, pp, s, n, next_stage):
    """Forward and backward along the pipeline group; the loss on the last stage."""
    inp = x
    if s > 0:
        inp = torch.empty_like(x)
        one_message(dist.irecv, inp, pp, s - 1)
        inp.requires_grad_()
    out = layer(inp)
    loss = torch.zeros(())
    if s < n - 1:
        one_message(dist.isend, out.detach(), pp, next_stage)
        grad = torch.empty_like(out)
        one_message(dist.irecv, grad, pp, next_stage)
        out.backward(grad)
    else:
        loss = out.pow(2).mean()
        loss.backward()
    if s > 0:
        one_message(dist.isend, inp.grad, pp, s - 1)
    return loss.detach()


def average(layer, loss, dp, stats, stats_first):
    """The gradient mean over the dp group; the loss summed over the stats group."""
    if stats_first:
        dist.all_reduce(loss, group=stats)
    for p in layer.parameters():
        dist.all_reduce(p.grad, group=dp)
        p.grad /= dist.get_world_size(dp)
    if not stats_first:
        dist.all_reduce(loss, group=stats)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--pp", type=int, default=2)
    parser.add_argument("--bug", choices=("group-rank", "order"), default=None)
    args = parser.parse_args()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    mesh = init_device_mesh("cpu", (args.pp, world // args.pp), mesh_dim_names=("pp", "dp"))
    pp, dp = mesh.get_group("pp"), mesh.get_group("dp")
    stats = dist.new_group()                        # every rank, in the same order
    s, n = dist.get_group_rank(pp, rank), dist.get_world_size(pp)
    replica = dist.get_group_rank(dp, rank)
    torch.manual_seed(s)
    layer = nn.Linear(WIDTH, WIDTH)
    x = torch.randn(BATCH, WIDTH, generator=torch.Generator().manual_seed(replica))
    next_stage = rank + 1 if args.bug == "group-rank" else s + 1
    loss = pipeline_pass(layer, x, pp, s, n, next_stage)
    average(layer, loss, dp, stats, stats_first=args.bug == "order" and replica % 2 == 1)
    print(f"stage {s}, replica {replica}: grad sum {sum(p.grad.sum() for p in layer.parameters()):.4f}")
    del mesh, pp, dp, stats          # nothing holds a group past destroy (lesson 11)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
