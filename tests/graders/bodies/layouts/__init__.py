"""Lesson 13 (pp_dp_step): wrong bodies, and a correct one in another style."""
import torch
import torch.distributed as dist
from torch import nn


def _send_recv(op, tensor, group, group_peer):
    for work in dist.batch_isend_irecv([dist.P2POp(op, tensor, group=group,
                                                   group_peer=group_peer)]):
        work.wait()


def _step(stage, x, target, mesh, move, average):
    """The step with its exchanges done by `move(op, tensor, pp, to_stage)` and its gradient
    average by `average(stage, mesh)`."""
    pp = mesh.get_group("pp")
    s, n = dist.get_group_rank(pp, dist.get_rank()), dist.get_world_size(pp)
    inp = x
    if s > 0:
        inp = torch.empty_like(x)
        move(dist.irecv, inp, pp, s - 1)
        inp.requires_grad_()
    out, loss = stage(inp), None
    if s < n - 1:
        move(dist.isend, out.detach(), pp, s + 1)
        grad = torch.empty_like(out)
        move(dist.irecv, grad, pp, s + 1)
        out.backward(grad)
    else:
        loss = nn.functional.mse_loss(out, target)
        loss.backward()
    if s > 0:
        move(dist.isend, inp.grad, pp, s - 1)
    average(stage, mesh)
    return None if loss is None else loss.detach()


def _dp_mean(stage, mesh):
    dp = mesh.get_group("dp")
    for p in stage.parameters():
        dist.all_reduce(p.grad, group=dp)
        p.grad /= dist.get_world_size(dp)


def _global_as_group_peer(op, tensor, pp, to_stage):
    """Wrong: the neighbour's GLOBAL rank where its group rank was meant (group_peer)."""
    _send_recv(op, tensor, pp, dist.get_global_rank(pp, to_stage))


def global_rank_as_group_peer(stage, x, target, mesh):
    return _step(stage, x, target, mesh, _global_as_group_peer, _dp_mean)


def _world_mean(stage, mesh):
    """Wrong: the average over the world: every stage's gradients mixed (same shapes)."""
    for p in stage.parameters():
        dist.all_reduce(p.grad)
        p.grad /= dist.get_world_size()


def world_all_reduce(stage, x, target, mesh):
    return _step(stage, x, target, mesh, _send_recv, _world_mean)


def _unbatched(op, tensor, pp, to_stage):
    """Wrong: no batch: a bare isend or irecv, waited."""
    if op is dist.isend:
        dist.isend(tensor, group=pp, group_dst=to_stage).wait()
    else:
        dist.irecv(tensor, group=pp, group_src=to_stage).wait()


def no_batch(stage, x, target, mesh):
    return _step(stage, x, target, mesh, _unbatched, _dp_mean)


def _halves(op, tensor, pp, to_stage):
    """Wrong: one exchange in two batches, a half each."""
    flat = tensor.view(-1)
    half = flat.numel() // 2
    _send_recv(op, flat[:half], pp, to_stage)
    _send_recv(op, flat[half:], pp, to_stage)


def two_batches(stage, x, target, mesh):
    return _step(stage, x, target, mesh, _halves, _dp_mean)


def _by_global_peer(op, tensor, pp, to_stage):
    """Right: peer= the neighbour's global rank, with group=pp (torch maps it)."""
    for work in dist.batch_isend_irecv([dist.P2POp(op, tensor, dist.get_global_rank(pp, to_stage),
                                                   pp)]):
        work.wait()


def _divide_first(stage, mesh):
    """Right: divide, then sum over the dp group (equal to rounding), a barrier after."""
    dp = mesh.get_group("dp")
    for p in stage.parameters():
        p.grad /= dist.get_world_size(dp)
        dist.all_reduce(p.grad, group=dp)
    dist.barrier(group=dp)


def global_peers_divide_first(stage, x, target, mesh):
    return _step(stage, x, target, mesh, _by_global_peer, _divide_first)


def calls_the_reference(stage, x, target, mesh):
    """Wrong: the reference solution does the step."""
    from solutions.layouts import pp_dp_step
    return pp_dp_step(stage, x, target, mesh)


def borrows_the_lessons_cycle_fixed(stage, x, target, mesh):
    """Wrong: its own step, then lesson 13's demonstration `cycle_fixed` (two all_reduces on
    groups of ranks 0 and 1) as a check that the ranks are in step: the course's own code."""
    from labs.layouts import cycle_fixed
    loss = _step(stage, x, target, mesh, _send_recv, _dp_mean)
    cycle_fixed(dist.get_rank(), dist.get_world_size())
    return loss
