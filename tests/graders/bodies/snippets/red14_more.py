"""Round 14 (ours): more bodies for the two graders touched last round (overlapped_step,
fixed_average_gradients), in the three kinds left unwritten: another collective doing the
transfer, a request left unwaited (or waited after the call returns), and a buffer the body
keeps, so that the next call overwrites what this one returned.

(Lesson `snippets`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red14_more.py.)
"""

import torch
import torch.distributed as dist

_KEPT: dict = {}       # buffers a body keeps between calls, by (name, shape, dtype)


def _kept(name, like):
    key = (name, tuple(like.shape), like.dtype)
    if key not in _KEPT:
        _KEPT[key] = torch.empty_like(like)
    return _KEPT[key]


# ----------------------------------------------------------------------------------------
# fixed_average_gradients
# ----------------------------------------------------------------------------------------

def _exchange(grads, into=None):
    """Each gradient to every other rank in one batch, each of theirs received into
    `into(peer, k, grad)` (fresh buffers by default); returns (works, received)."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    peers = [p for p in range(ws) if p != rank]
    into = into or (lambda peer, k, g: torch.empty_like(g))
    received = {p: [into(p, k, g) for k, g in enumerate(grads)] for p in peers}
    ops = [dist.P2POp(op, t, p) for p in peers for g, b in zip(grads, received[p])
           for op, t in ((dist.isend, g), (dist.irecv, b))]
    return (dist.batch_isend_irecv(ops) if ops else []), received


def _received_into_kept(grads):
    """The exchange, each peer's gradients received into buffers kept between calls
    (one per peer and parameter), all waited; returns {peer: [buffers]}."""
    works, received = _exchange(grads, into=lambda peer, k, g: _kept(f"recv{peer}.{k}", g))
    for work in works:
        work.wait()
    return received


# WRONG: every gradient through all_to_all ("the same messages, one call").
def avg_all_to_all(model):
    ws = dist.get_world_size()
    for p in model.parameters():
        outs = [torch.empty_like(p.grad) for _ in range(ws)]
        dist.all_to_all(outs, [p.grad.clone() for _ in range(ws)])
        p.grad = sum(outs) / ws


# WRONG: only the receives are waited; the sends' requests are dropped.
def avg_sends_never_waited(model):
    params = list(model.parameters())
    grads = [p.grad for p in params]
    works, received = _exchange(grads)
    for work in works[1::2]:                  # the irecvs (ops alternate isend, irecv)
        work.wait()
    for k, p in enumerate(params):
        p.grad = sum((bufs[k] for bufs in received.values()), grads[k].clone()) / \
            dist.get_world_size()


# WRONG: the average computed in place in a receive buffer kept between calls, and that
# buffer made the gradient: the next model of the same shapes receives into it.
def avg_into_kept_receive_buffer(model):
    params, ws = list(model.parameters()), dist.get_world_size()
    grads = [p.grad for p in params]
    received = _received_into_kept(grads)
    for k, p in enumerate(params):
        bufs = [b[k] for b in received.values()]
        if not bufs:
            p.grad = grads[k].clone()
            continue
        total = bufs[0]
        for b in bufs[1:]:
            total += b
        total += grads[k]
        p.grad = total.div_(ws)


# RIGHT: receive buffers kept between calls (no allocation per step), the averages new.
def avg_kept_receive_buffers(model):
    params, ws = list(model.parameters()), dist.get_world_size()
    grads = [p.grad for p in params]
    received = _received_into_kept(grads)
    for k, p in enumerate(params):
        p.grad = sum((b[k] for b in received.values()), grads[k].clone()) / ws


# WRONG: the sum through torch.distributed.nn's autograd-aware all_reduce.
def avg_nn_functional_all_reduce(model):
    from torch.distributed.nn import functional as dist_fn
    for p in model.parameters():
        p.grad = dist_fn.all_reduce(p.grad.clone()) / dist.get_world_size()


# WRONG: the gradients as Python objects, peer by peer (pickled bytes on the wire).
def avg_object_lists(model):
    rank, ws = dist.get_rank(), dist.get_world_size()
    grads = [p.grad for p in model.parameters()]
    total = [g.clone() for g in grads]
    for peer in range(ws):
        if peer == rank:
            continue
        theirs = [None]
        for first in sorted((rank, peer)):        # the lower rank sends first
            if first == rank:
                dist.send_object_list([grads], dst=peer)
            else:
                dist.recv_object_list(theirs, src=peer)
        for t, g in zip(total, theirs[0]):
            t += g
    for p, t in zip(model.parameters(), total):
        p.grad = t / ws
