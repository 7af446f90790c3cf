"""Second red team (lessons 01-04, 07-09): snippets.py bodies."""
import torch
import torch.distributed as dist


def _exchange(grads):
    rank, ws = dist.get_rank(), dist.get_world_size()
    peers = [p for p in range(ws) if p != rank]
    received = {p: [torch.empty_like(g) for g in grads] for p in peers}
    ops = [op for p in peers for g, b in zip(grads, received[p])
           for op in (dist.P2POp(dist.isend, g, p), dist.P2POp(dist.irecv, b, p))]
    if ops:
        for w in dist.batch_isend_irecv(ops):
            w.wait()
    return received


def fixed_average_in_place(model):
    """RIGHT: the exchange, then each .grad averaged in place (add_, div_) after every wait."""
    ws = dist.get_world_size()
    grads = [p.grad for p in model.parameters()]
    received = _exchange(grads)
    for k, g in enumerate(grads):
        for bufs in received.values():
            g.add_(bufs[k])
        g.div_(ws)


_KEPT = {}


def fixed_average_double_buffered(model):
    """WRONG: the averages are written into one of two gradient buffers kept per shape and
    dtype, used in turn, and assigned as .grad: the third model with those shapes
    overwrites the gradients of the first."""
    ws = dist.get_world_size()
    params = list(model.parameters())
    grads = [p.grad for p in params]
    received = _exchange(grads)
    for k, p in enumerate(params):
        key = (tuple(p.shape), p.dtype, k)
        entry = _KEPT.setdefault(key, [torch.empty_like(grads[k]), torch.empty_like(grads[k]), 0])
        out = entry[entry[2]]
        entry[2] ^= 1
        torch.add(grads[k], sum(b[k] for b in received.values()) if received else 0, out=out)
        out.div_(ws)
        p.grad = out
