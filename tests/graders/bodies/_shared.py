"""Helpers the bodies of several rounds and lessons wrote alike, kept once. Only those that move
no data and use no private name live here: a helper that sends, receives or waits stays in its
body's file, where a learner's would be (the record names the body's line that posted a
receive, and the private-name check follows a body's helpers within its own file only)."""
import torch
import torch.distributed as dist


def neighbours():
    """(next, previous) rank around the ring."""
    rank, n = dist.get_rank(), dist.get_world_size()
    return (rank + 1) % n, (rank - 1) % n


def ring_places():
    """(rank, world size, next, previous) around the ring."""
    rank, n = dist.get_rank(), dist.get_world_size()
    return rank, n, (rank + 1) % n, (rank - 1) % n


def large_world():
    return dist.get_world_size() > 4


def with_grads(model):
    return [p for p in model.parameters() if p.grad is not None]


def contiguous_flat(tensor):
    if not tensor.is_contiguous():
        raise ValueError("needs a contiguous tensor")
    return tensor.view(-1)


def half(wire):
    return wire * 0.5 if wire.is_floating_point() else wire.div(2, rounding_mode="trunc")


def interleave(x):
    return torch.cat([x[0::2], x[1::2]]).contiguous()


def deinterleave(m):
    out = torch.empty_like(m)
    half = (m.numel() + 1) // 2
    out[0::2], out[1::2] = m[:half], m[half:]
    return out


def delta(x):
    """[x0, x1 - x0, x2 - x0, ...] (a constant tensor -> [c, 0, 0, ...])."""
    if x.numel() < 2 or x.dtype == torch.bfloat16:
        return x.contiguous().clone()
    out = x - x[0]
    out[0] = x[0]
    return out


def undelta(m):
    if m.numel() < 2 or m.dtype == torch.bfloat16:
        return m.clone()
    out = m + m[0]
    out[0] = m[0]
    return out
