"""Red team H: gradients bodies."""
import torch
import torch.distributed as dist

from labs.gradients import plan_buckets
from solutions.ring import ring_all_reduce
from tests.graders.bodies._shared import with_grads as _with_grads


def a2a_halves_summed_in_bf16(model):
    """WRONG (precision): the reference's one batch, every gradient on the wire in its own
    dtype, but the 2-byte gradients (float16 and bfloat16) are summed and divided in
    bfloat16 "so that float16 cannot overflow": a float16 gradient loses 3 of its 10
    mantissa bits (mean of 1.001 and 1.001 comes back 1.0). The grader's float16
    gradients have 9 significant bits, which bfloat16 cannot hold: the loss shows."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    params = _with_grads(model)
    if ws == 1:
        return None
    sent = [p.grad.contiguous() for p in params]
    received = [[g if peer == rank else torch.empty_like(g) for peer in range(ws)] for g in sent]
    ops = []
    for g, bufs in zip(sent, received):
        for peer in range(ws):
            if peer != rank:
                ops.append(dist.P2POp(dist.isend, g, peer))
                ops.append(dist.P2POp(dist.irecv, bufs[peer], peer))
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    for p, bufs in zip(params, received):
        acc = torch.bfloat16 if p.grad.element_size() == 2 else p.grad.dtype
        total = bufs[0].to(acc)
        for b in bufs[1:]:
            total = total + b.to(acc)
        p.grad.copy_((total / ws).to(p.grad.dtype).view_as(p.grad))
    return None


def ring_avg_grads_as_bucket_views(model):
    """RIGHT: DDP's gradient_as_bucket_view: one fresh flat buffer per dtype per call,
    ring-reduced and divided, and each parameter's .grad REPLACED by its view into that
    buffer (no copy back). The buffer is new each call and held only by the grads."""
    groups = {}
    for p in _with_grads(model):
        groups.setdefault(p.dtype, []).append(p)
    for params in groups.values():
        flat = torch.cat([p.grad.reshape(-1) for p in params])
        ring_all_reduce(flat)
        flat /= dist.get_world_size()
        start = 0
        for p in params:
            p.grad = flat[start:start + p.numel()].view(p.shape)
            start += p.numel()
    return None


def bucketed_accumulates_in_param_data(model, bucket_bytes):
    """WRONG (the parameters are not the averaging's): per bucket of the plan, the ring on a
    flat buffer as the hint says, but the division is done "in place to save memory" by
    borrowing each parameter's .data as scratch (saved, overwritten with the mean, copied
    into .grad, restored). The parameters end with their own values, but for a moment they
    hold gradients: another thread (an optimizer step overlapping the next bucket, an EMA
    reader) sees garbage. A module argument is in `writes`, so its parameters' version
    counters are never compared, only their values at the end."""
    for bucket in plan_buckets(_with_grads(model), bucket_bytes):
        flat = torch.cat([p.grad.reshape(-1) for p in bucket])
        ring_all_reduce(flat)
        start = 0
        for p in bucket:
            saved = p.data.clone()
            p.data.copy_(flat[start:start + p.numel()].view_as(p.data))
            p.data.div_(dist.get_world_size())
            p.grad.copy_(p.data)
            p.data.copy_(saved)
            start += p.numel()
    return None
