"""Round 10 (red team): bypasses of the latest hardening (reads/writes of in-flight buffers
outside the dispatcher, private switches reached by computed names), a halo script that
changes the method but keeps the counts, and right bodies in other styles.

(Lesson `gradients`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red10.py.)
"""

import numpy as np
import torch
import torch.distributed as dist


_seen_hook = []


def average_all_to_all_global_hook(model):
    """WRONG (registers a process-wide forward hook, nn.modules.module.register_module_
    forward_hook, and leaves it): every module of the caller runs it; state() counts hooks on
    the given model's modules only."""
    if not _seen_hook:
        _seen_hook.append(torch.nn.modules.module.register_module_forward_hook(
            lambda m, i, o: None))
    rank, ws = dist.get_rank(), dist.get_world_size()
    params = [p for p in model.parameters() if p.grad is not None]
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
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    for p, bufs in zip(params, received):
        total = bufs[0].clone()
        for b in bufs[1:]:
            total += b
        p.grad.copy_((total / ws).view_as(p.grad))
    return None


def average_all_to_all_python_seed(model):
    """WRONG (seeds Python's and numpy's global random generators to agree on a peer order
    across ranks, random.seed(0), and leaves them seeded): the caller's data shuffling repeats;
    state() checks torch's generator only."""
    import random
    random.seed(0)
    np.random.seed(0)
    rank, ws = dist.get_rank(), dist.get_world_size()
    params = [p for p in model.parameters() if p.grad is not None]
    if ws == 1:
        return None
    peers = random.sample(range(ws), ws)
    sent = [p.grad.contiguous() for p in params]
    received = [{peer: torch.empty_like(g) for peer in peers if peer != rank} for g in sent]
    ops = []
    for g, bufs in zip(sent, received):
        for peer in peers:
            if peer != rank:
                ops.append(dist.P2POp(dist.irecv, bufs[peer], peer))
                ops.append(dist.P2POp(dist.isend, g, peer))
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    for p, g, bufs in zip(params, sent, received):
        total = None
        for r in range(ws):
            part = g if r == rank else bufs[r]
            total = part.clone() if total is None else total + part
        p.grad.copy_((total / ws).view_as(p.grad))
    return None
