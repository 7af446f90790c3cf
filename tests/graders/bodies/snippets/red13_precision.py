"""Round 13 (ours): averages whose precision depends on the values, written after the red
team's float16-summed-in-bfloat16. Each one is right on most data and off by a few ulps
where a narrower type rounds; the exactly summed gradients of the grader make every right
order exact, so each of these is off there."""
import torch
import torch.distributed as dist


def _exchange(grads):
    rank, ws = dist.get_rank(), dist.get_world_size()
    peers = [p for p in range(ws) if p != rank]
    received = {p: [torch.empty_like(g) for g in grads] for p in peers}
    ops = [dist.P2POp(op, t, p) for p in peers for g, b in zip(grads, received[p])
           for op, t in ((dist.isend, g), (dist.irecv, b))]
    for work in dist.batch_isend_irecv(ops) if ops else []:
        work.wait()
    return list(received.values())


def _average(model, total_of):
    ws = dist.get_world_size()
    params = list(model.parameters())
    grads = [p.grad for p in params]
    received = _exchange(grads)
    for k, p in enumerate(params):
        p.grad = total_of(grads[k], [bufs[k] for bufs in received], ws)


# WRONG: float64 gradients averaged in float32 ("float32 is plenty for gradients").
def f64_through_f32(model):
    def total_of(own, others, ws):
        narrow = torch.float32 if own.dtype == torch.float64 else own.dtype
        return (sum((o.to(narrow) for o in others), own.to(narrow)) / ws).to(own.dtype)
    _average(model, total_of)


# WRONG: the sum right in the dtype, the division through bfloat16 ("only one operation").
def divided_in_bf16(model):
    def total_of(own, others, ws):
        total = sum(others, own)
        if total.dtype == torch.float16:
            return (total.to(torch.bfloat16) / ws).to(total.dtype)
        return total / ws
    _average(model, total_of)


# WRONG: the others' gradients added up in bfloat16 first ("they are only a correction"),
# then added to the own gradient in its dtype.
def others_summed_in_bf16(model):
    def total_of(own, others, ws):
        if not others or own.dtype != torch.float16:
            return sum(others, own) / ws
        rest = sum((o.to(torch.bfloat16) for o in others[1:]), others[0].to(torch.bfloat16))
        return (own + rest.to(own.dtype)) / ws
    _average(model, total_of)


# WRONG: a float32 model's gradients exchanged and added in float16 ("half the bytes"): the
# sums round at 11 bits.
def f32_sent_as_f16(model):
    ws = dist.get_world_size()
    params = list(model.parameters())
    narrow = [p.grad.to(torch.float16) if p.grad.dtype == torch.float32 else p.grad
              for p in params]
    received = _exchange(narrow)
    for k, p in enumerate(params):
        p.grad = (sum((b[k] for b in received), narrow[k]) / ws).to(p.grad.dtype)


# RIGHT: float32 accumulation for every floating dtype, then back.
def accumulate_in_f32(model):
    def total_of(own, others, ws):
        wide = torch.float64 if own.dtype == torch.float64 else torch.float32
        return (sum((o.to(wide) for o in others), own.to(wide)) / ws).to(own.dtype)
    _average(model, total_of)


# RIGHT: each gradient divided first, then added (DDP's own order: divide, then all_reduce).
def divide_then_add(model):
    def total_of(own, others, ws):
        return sum((o / ws for o in others), own / ws)
    _average(model, total_of)
