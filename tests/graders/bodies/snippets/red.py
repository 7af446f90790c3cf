"""Red-team bodies for lesson 08 (fixed_average_gradients), as they were
written; listed in tests/harness/catalogue/."""
import torch
import torch.distributed as dist


def _exchange(grads):
    rank, ws = dist.get_rank(), dist.get_world_size()
    peers = [p for p in range(ws) if p != rank]
    got = {p: [torch.empty_like(g) for g in grads] for p in peers}
    ops = [dist.P2POp(dist.isend, g, p) for p in peers for g in grads] + \
          [dist.P2POp(dist.irecv, b, p) for p in peers for b in got[p]]
    for w in dist.batch_isend_irecv(ops) if ops else []:
        w.wait()
    return got


# ---------------------------------------------------------------- WRONG
def avg_float32_arith(model):
    """WRONG: the mean computed in float32 and cast back (float64 models lose precision)."""
    ws = dist.get_world_size()
    params = list(model.parameters())
    grads = [p.grad for p in params]
    got = _exchange(grads)
    for k, p in enumerate(params):
        total = grads[k].float() + sum(bufs[k].float() for bufs in got.values())
        p.grad = (total / ws).to(grads[k].dtype)


# ---------------------------------------------------------------- RIGHT
