"""Red team 9 (early lessons 01-04, 08): bodies for the p2p, batching, waiting, deadlocks and
snippets graders. Each docstring starts with WRONG (...) or RIGHT: and says why.

(Lesson `snippets`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red9_early.py.)
"""
import time

import torch
import torch.distributed as dist


def _wait(works):
    for w in works:
        w.wait()


def average_reads_before_wait(model):
    """WRONG (reads receive buffers before wait): the one batch, then the average is built
    from numpy copies of the receive buffers taken before any wait() (after a sleep)."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    params = list(model.parameters())
    grads = [p.grad for p in params]
    peers = [q for q in range(ws) if q != rank]
    received = {q: [torch.empty_like(g) for g in grads] for q in peers}
    ops = []
    for q in peers:
        for g, b in zip(grads, received[q]):
            ops += [dist.P2POp(dist.isend, g, q), dist.P2POp(dist.irecv, b, q)]
    works = dist.batch_isend_irecv(ops) if ops else []
    time.sleep(0.1)
    early = {q: [torch.from_numpy(b.numpy().copy()) for b in received[q]] for q in peers}
    _wait(works)
    for k, p in enumerate(params):
        total = grads[k].clone()
        for q in peers:
            total += early[q][k]
        p.grad = total / ws


def average_via_shared_file(model):
    """WRONG (data through a side road): the one batch is posted and waited as the contract
    says, but the average is built from a file every rank maps (torch's C++ from_file, reached
    as torch._C._VariableFunctions.from_file: no audit event, not the guarded torch.from_file),
    never from the receive buffers; barriers (allowed: they "move no data") order it."""
    import os
    rank, ws = dist.get_rank(), dist.get_world_size()
    params = list(model.parameters())
    grads = [p.grad for p in params]
    peers = [q for q in range(ws) if q != rank]
    received = {q: [torch.empty_like(g) for g in grads] for q in peers}
    ops = []
    for q in peers:
        for g, b in zip(grads, received[q]):
            ops += [dist.P2POp(dist.isend, g, q), dist.P2POp(dist.irecv, b, q)]
    _wait(dist.batch_isend_irecv(ops) if ops else [])
    flat = torch.cat([g.reshape(-1) for g in grads])
    n = flat.numel()
    path = f"/tmp/rt9_side_{os.getppid()}_{n}_{str(flat.dtype)[6:]}"
    shared = torch._C._VariableFunctions.from_file(path, True, ws * n, dtype=flat.dtype)
    shared[rank * n:(rank + 1) * n] = flat
    dist.barrier()
    mean = shared.view(ws, n).sum(0) / ws
    dist.barrier()                     # nobody overwrites before everyone has read
    for p, piece in zip(params, mean.split([g.numel() for g in grads])):
        p.grad = piece.view_as(p.grad).clone()


def average_into_flat_views(model):
    """RIGHT: one batch; each peer's gradients land in views of one flat buffer per peer
    (split by parameter sizes), all waited, then the mean per parameter as new tensors."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    params = list(model.parameters())
    grads = [p.grad for p in params]
    sizes = [g.numel() for g in grads]
    peers = [(rank + d) % ws for d in range(1, ws)]
    flat = {q: grads[0].new_empty(sum(sizes)) for q in peers}
    views = {q: [v.view_as(g) for v, g in zip(flat[q].split(sizes), grads)] for q in peers}
    ops = [dist.P2POp(dist.irecv, views[q][k], q) for q in peers for k in range(len(grads))]
    ops += [dist.P2POp(dist.isend, grads[k], q) for q in peers for k in range(len(grads))]
    _wait(dist.batch_isend_irecv(ops) if ops else [])
    for k, p in enumerate(params):
        p.grad = torch.stack([grads[k]] + [views[q][k] for q in sorted(peers)]).sum(0) / ws


def average_waits_receives_then_sends(model):
    """RIGHT: one batch; waits the receives, builds the new gradients as NEW tensors (the
    sent ones are never written), and only then waits the sends, before returning."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    params = list(model.parameters())
    grads = [p.grad for p in params]
    peers = [q for q in range(ws) if q != rank]
    received = {q: [torch.empty_like(g) for g in grads] for q in peers}
    sends = [dist.P2POp(dist.isend, g, q) for q in peers for g in grads]
    recvs = [dist.P2POp(dist.irecv, b, q) for q in peers for b in received[q]]
    works = dist.batch_isend_irecv(sends + recvs) if peers else []
    _wait(works[len(sends):])
    for k, p in enumerate(params):
        total = grads[k].clone()
        for q in peers:
            total += received[q][k]
        p.grad = total / ws
    _wait(works[:len(sends)])


def average_hidden_all_reduce(model):
    """WRONG (a collective out of sight): the one batch is posted and waited for the record,
    but the average comes from the process group's own allreduce called with the dispatch
    modes switched off (_disable_current_modes): neither the record nor the trace sees it."""
    from torch.utils._python_dispatch import _disable_current_modes
    rank, ws = dist.get_rank(), dist.get_world_size()
    params = list(model.parameters())
    grads = [p.grad for p in params]
    peers = [q for q in range(ws) if q != rank]
    received = {q: [torch.empty_like(g) for g in grads] for q in peers}
    ops = []
    for q in peers:
        for g, b in zip(grads, received[q]):
            ops += [dist.P2POp(dist.isend, g, q), dist.P2POp(dist.irecv, b, q)]
    _wait(dist.batch_isend_irecv(ops) if ops else [])
    flat = torch.cat([g.reshape(-1) for g in grads])
    with _disable_current_modes():
        dist.distributed_c10d._get_default_group().allreduce([flat]).wait()
    mean = flat / ws
    for p, piece in zip(params, mean.split([g.numel() for g in grads])):
        p.grad = piece.view_as(p.grad).clone()
