"""Probe bodies for lesson 08 (fixed_average_gradients)."""
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


def avg_shared_recv_buffer_small(model):
    """WRONG: one receive buffer per parameter shared by all peers (two irecvs into the same
    memory in one batch)."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    params = list(model.parameters())
    grads = [p.grad for p in params]
    peers = [p for p in range(ws) if p != rank]
    bufs = [torch.empty_like(g) for g in grads]
    ops = [dist.P2POp(dist.isend, g, p) for p in peers for g in grads] + \
          [dist.P2POp(dist.irecv, b, p) for p in peers for b in bufs]
    for w in dist.batch_isend_irecv(ops) if ops else []:
        w.wait()
    for k, p in enumerate(params):
        p.grad = (grads[k] + (len(peers) * bufs[k] if peers else 0)) / ws


def avg_sum_not_mean_float_tol(model):
    """WRONG: divides by world_size only the received sum's... no: averages with
    torch.mean over a stack that includes its own gradient twice when ws == 2? Here:
    (own + others) / ws but own counted from the SENT copy modified in flight."""
    ws = dist.get_world_size()
    params = list(model.parameters())
    grads = [p.grad for p in params]
    rank = dist.get_rank()
    peers = [p for p in range(ws) if p != rank]
    got = {p: [torch.empty_like(g) for g in grads] for p in peers}
    ops = [dist.P2POp(dist.isend, g, p) for p in peers for g in grads] + \
          [dist.P2POp(dist.irecv, b, p) for p in peers for b in got[p]]
    works = dist.batch_isend_irecv(ops) if ops else []
    for g in grads:
        g.div_(ws)                 # "pre-scale" while the sends are in flight
    for w in works:
        w.wait()
    for k, p in enumerate(params):
        p.grad = grads[k] + sum(b[k] for b in got.values()) / ws


# ---------------------------------------------------------------- RIGHT
def avg_named_sorted_inplace(model):
    """RIGHT: parameters in name order (the same on every rank), receives first, the mean
    written into the existing .grad in place."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    named = sorted(model.named_parameters(), key=lambda kv: kv[0])
    peers = [p for p in range(ws) if p != rank]
    inbox = {(peer, n): torch.empty_like(p.grad) for peer in peers for n, p in named}
    ops = [dist.P2POp(dist.irecv, inbox[peer, n], peer) for peer in peers for n, _ in named]
    ops += [dist.P2POp(dist.isend, p.grad, peer) for peer in peers for _, p in named]
    works = dist.batch_isend_irecv(ops) if ops else []
    for w in works:
        w.wait()
    for n, p in named:
        stacked = torch.stack([p.grad] + [inbox[peer, n] for peer in peers])
        p.grad.copy_(stacked.mean(dim=0))
